/**
 * Rate limits (issue: per-token limits with 429 and Retry-After, a stricter FindBy limit, limits that hold
 * across instances through Redis): the same GCRA behaviour in memory and in Redis, the cross-instance
 * property, and limits that hold per instance while Redis is down and are shared again when it is back.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type AddressInfo } from 'node:net';
import { after, before, describe, test, type TestContext } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import {
  createRateLimiter,
  memoryRateLimiter,
  redisRateLimiter,
  type RateDecision,
  type RateLimiter,
  type RateLimitRule,
} from '../src/security/rate-limit.js';

const REDIS_URL = process.env.TEST_REDIS_URL || 'redis://127.0.0.1:6379';
/** Every key this run writes starts with it, so that the run can delete exactly its own keys. */
const RUN_PREFIX = `coregate-test:rl:${randomBytes(6).toString('hex')}:`;
const START = Date.UTC(2024, 0, 31, 12); // injected clocks start here (milliseconds)

async function redisReachable(url: string): Promise<boolean> {
  const probe = new Redis(url, {
    lazyConnect: true,
    connectTimeout: 500,
    retryStrategy: () => null,
    maxRetriesPerRequest: 0,
  });
  probe.on('error', () => {});
  try {
    await probe.connect();
    return (await probe.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    probe.disconnect();
  }
}

const redisSkip = (await redisReachable(REDIS_URL))
  ? false
  : `Redis is not reachable at ${REDIS_URL} (set TEST_REDIS_URL or start Redis)`;

/** A settable clock, in milliseconds since the epoch. */
function fakeClock() {
  let now = START;
  return { now: () => now, advance: (ms: number) => void (now += ms) };
}

async function hits(limiter: RateLimiter, key: string, rule: RateLimitRule, count: number): Promise<RateDecision[]> {
  const decisions: RateDecision[] = [];
  for (let i = 0; i < count; i++) decisions.push(await limiter.hit(key, rule));
  return decisions;
}

const allowedCount = (decisions: readonly RateDecision[]) => decisions.filter((decision) => decision.allowed).length;

/** The behaviour every limiter has, given a way to build one on an injected clock. */
function behavesAsARateLimiter(build: (now: () => number) => RateLimiter) {
  const setUp = (t: TestContext) => {
    const clock = fakeClock();
    const limiter = build(clock.now);
    t.after(() => limiter.close());
    return { clock, limiter };
  };
  const rule = { limit: 5, windowSeconds: 10 };

  test('allows exactly `limit` hits at once, then refuses with a Retry-After of at least 1 s', async (t) => {
    const { limiter } = setUp(t);
    const decisions = await hits(limiter, 'caller', rule, rule.limit + 1);
    assert.deepEqual(
      decisions.slice(0, rule.limit).map((decision) => decision.allowed),
      [true, true, true, true, true],
    );
    const refused = decisions[rule.limit]!;
    assert.equal(refused.allowed, false);
    assert.equal(refused.remaining, 0);
    assert.ok(refused.retryAfterSeconds >= 1, `retryAfterSeconds ${refused.retryAfterSeconds}`);
  });

  test('counts remaining down to zero, with Retry-After 0 while allowed', async (t) => {
    const { limiter } = setUp(t);
    const decisions = await hits(limiter, 'caller', rule, rule.limit + 2);
    assert.deepEqual(
      decisions.map((decision) => decision.remaining),
      [4, 3, 2, 1, 0, 0, 0],
    );
    assert.deepEqual(
      decisions.map((decision) => decision.retryAfterSeconds > 0),
      [false, false, false, false, false, true, true],
    );
    assert.ok(decisions.every((decision) => decision.limit === rule.limit));
  });

  test('frees one slot every windowSeconds / limit and says exactly when', async (t) => {
    const { clock, limiter } = setUp(t);
    await hits(limiter, 'caller', rule, rule.limit);
    assert.equal((await limiter.hit('caller', rule)).retryAfterSeconds, 2); // 10 s / 5 hits
    clock.advance(1_999);
    assert.deepEqual(await limiter.hit('caller', rule), {
      allowed: false,
      limit: 5,
      remaining: 0,
      retryAfterSeconds: 1,
    });
    clock.advance(1);
    assert.deepEqual(await limiter.hit('caller', rule), {
      allowed: true,
      limit: 5,
      remaining: 0,
      retryAfterSeconds: 0,
    });
    assert.equal((await limiter.hit('caller', rule)).allowed, false);
  });

  test('allows the full limit again once a window has passed', async (t) => {
    const { clock, limiter } = setUp(t);
    await hits(limiter, 'caller', rule, rule.limit + 3);
    clock.advance(rule.windowSeconds * 1000);
    assert.equal(allowedCount(await hits(limiter, 'caller', rule, rule.limit + 1)), rule.limit);
  });

  test('refused hits are not counted: hammering does not push the next slot further away', async (t) => {
    const { clock, limiter } = setUp(t);
    await hits(limiter, 'caller', rule, rule.limit);
    await hits(limiter, 'caller', rule, 50);
    clock.advance(2_000);
    assert.equal((await limiter.hit('caller', rule)).allowed, true);
  });

  test('keeps keys independent', async (t) => {
    const { limiter } = setUp(t);
    await hits(limiter, 'token:a', rule, rule.limit + 1);
    assert.deepEqual(await limiter.hit('token:b', rule), {
      allowed: true,
      limit: 5,
      remaining: 4,
      retryAfterSeconds: 0,
    });
  });

  test('reset forgets a key', async (t) => {
    const { limiter } = setUp(t);
    await hits(limiter, 'user:42', rule, rule.limit + 1);
    await limiter.reset('user:42');
    assert.equal(allowedCount(await hits(limiter, 'user:42', rule, rule.limit + 1)), rule.limit);
  });

  test('a limit of 1 allows one hit per window', async (t) => {
    const { clock, limiter } = setUp(t);
    const once = { limit: 1, windowSeconds: 60 };
    assert.deepEqual(
      (await hits(limiter, 'caller', once, 2)).map((decision) => decision.allowed),
      [true, false],
    );
    clock.advance(59_999);
    assert.equal((await limiter.hit('caller', once)).allowed, false);
    clock.advance(1);
    assert.equal((await limiter.hit('caller', once)).allowed, true);
  });

  test('rejects a rule that is not a positive limit over a positive window', async (t) => {
    const { limiter } = setUp(t);
    for (const bad of [
      { limit: 0, windowSeconds: 1 },
      { limit: 1.5, windowSeconds: 1 },
      { limit: 1, windowSeconds: 0 },
    ]) {
      await assert.rejects(limiter.hit('caller', bad), RangeError);
    }
  });
}

describe('memory rate limiter', () => {
  behavesAsARateLimiter((now) => memoryRateLimiter(now));

  test('forgets the least recently hit key when full, so memory stays bounded', async () => {
    const limiter = memoryRateLimiter(fakeClock().now, { maxKeys: 2 });
    const rule = { limit: 1, windowSeconds: 60 };
    for (const key of ['a', 'b', 'c']) await limiter.hit(key, rule);
    assert.equal((await limiter.hit('a', rule)).allowed, true, 'a was forgotten');
    assert.equal((await limiter.hit('c', rule)).allowed, false, 'c is still limited');
  });

  test('is what createRateLimiter builds without a Redis URL', async () => {
    const limiter = createRateLimiter(undefined);
    assert.equal(allowedCount(await hits(limiter, 'caller', { limit: 2, windowSeconds: 60 }, 3)), 2);
    await limiter.close();
  });
});

describe('Redis rate limiter', { skip: redisSkip }, () => {
  let admin: Redis;
  let suite = 0;
  /** A fresh key space for each limiter, inside this run's prefix. */
  const prefix = () => `${RUN_PREFIX}${++suite}:`;

  before(() => {
    admin = new Redis(REDIS_URL);
  });
  after(async () => {
    const keys = await admin.keys(`${RUN_PREFIX}*`);
    if (keys.length > 0) await admin.del(...keys);
    await admin.quit();
  });
  behavesAsARateLimiter((now) => redisRateLimiter(REDIS_URL, { prefix: prefix(), now }));

  test('uses the Redis server clock by default: a slot frees in real time', async (t) => {
    const limiter = redisRateLimiter(REDIS_URL, { prefix: prefix() });
    t.after(() => limiter.close());
    const rule = { limit: 2, windowSeconds: 1 };
    const decisions = await hits(limiter, 'caller', rule, 3);
    assert.deepEqual(
      decisions.map((decision) => decision.allowed),
      [true, true, false],
    );
    assert.equal(decisions[2]!.retryAfterSeconds, 1);
    await sleep(550); // one slot per 500 ms
    assert.deepEqual(
      (await hits(limiter, 'caller', rule, 2)).map((decision) => decision.allowed),
      [true, false],
    );
  });

  test('keys expire on their own once their bucket is full again', async (t) => {
    const keyPrefix = prefix();
    const limiter = redisRateLimiter(REDIS_URL, { prefix: keyPrefix });
    t.after(() => limiter.close());
    await hits(limiter, 'caller', { limit: 4, windowSeconds: 2 }, 2);
    const ttl = await admin.pttl(`${keyPrefix}caller`);
    assert.ok(ttl > 0 && ttl <= 1_000, `PTTL ${ttl} ms: two hits of 500 ms each`);
    await limiter.reset('caller');
    assert.equal(await admin.exists(`${keyPrefix}caller`), 0);
  });

  test('two instances on separate connections share one limit, even concurrently', async (t) => {
    const keyPrefix = prefix();
    const instances = [
      redisRateLimiter(REDIS_URL, { prefix: keyPrefix }),
      redisRateLimiter(REDIS_URL, { prefix: keyPrefix }),
    ];
    t.after(() => Promise.all(instances.map((instance) => instance.close())));
    const rule = { limit: 10, windowSeconds: 60 };
    const decisions = await Promise.all(
      Array.from({ length: 3 * rule.limit }, (_, i) => instances[i % 2]!.hit('token:shared', rule)),
    );
    assert.equal(allowedCount(decisions), rule.limit);
    assert.ok(decisions.every((decision) => decision.allowed || decision.retryAfterSeconds >= 1));
  });

  test('is what createRateLimiter builds with a Redis URL, under the coregate:rl: prefix', async (t) => {
    const limiter = createRateLimiter(REDIS_URL);
    const key = `${RUN_PREFIX}default-prefix`;
    t.after(async () => {
      await limiter.reset(key);
      await limiter.close();
    });
    await limiter.hit(key, { limit: 3, windowSeconds: 1 });
    assert.equal(await admin.exists(`coregate:rl:${key}`), 1);
  });
});

/** A TCP port nothing listens on (just released by the system). */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** A private redis-server on `port` (no persistence), ready to answer; this test's to stop, pause and kill. */
async function startRedis(port: number): Promise<ChildProcess> {
  const server = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    {
      stdio: 'ignore',
    },
  );
  const url = `redis://127.0.0.1:${port}`;
  for (let attempt = 0; attempt < 100; attempt++) {
    if (await redisReachable(url)) return server;
    await sleep(50);
  }
  server.kill('SIGKILL');
  throw new Error(`redis-server did not start on port ${port}`);
}

async function stopRedis(server: ChildProcess): Promise<void> {
  if (server.exitCode !== null || server.signalCode !== null) return;
  const exited = once(server, 'exit');
  server.kill('SIGCONT');
  server.kill('SIGKILL');
  await exited;
}

/** Waits until `condition` holds, polling, for at most `ms`. */
async function eventually(condition: () => boolean, ms: number, what: string): Promise<void> {
  const until = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

/** Outage reports and recoveries of a limiter, with when they came. */
function outageLog() {
  const reports: number[] = [];
  let recoveries = 0;
  return {
    reports,
    recoveries: () => recoveries,
    options: {
      onError: () => void reports.push(Date.now()),
      onRecover: () => void (recoveries += 1),
    },
  };
}

const hasRedisServer = spawnSync('redis-server', ['--version']).status === 0 ? false : 'redis-server is not installed';

describe('Redis rate limiter during a Redis outage', () => {
  const rule = { limit: 3, windowSeconds: 60 };

  test('with Redis refusing connections, each instance still refuses past the limit, and no hit waits', async (t) => {
    const log = outageLog();
    const limiter = redisRateLimiter(`redis://127.0.0.1:${await freePort()}`, log.options);
    t.after(() => limiter.close());
    const started = performance.now();
    const decisions = await hits(limiter, 'caller', rule, rule.limit + 2);
    assert.ok(
      performance.now() - started < 1_000,
      `${Math.round(performance.now() - started)} ms for ${decisions.length} hits`,
    );
    assert.deepEqual(
      decisions.map((decision) => decision.allowed),
      [true, true, true, false, false],
    );
    assert.ok(decisions[rule.limit]!.retryAfterSeconds >= 1);
    assert.equal(log.reports.length, 1, 'one report for the outage, not one per hit');
  });

  test('a long outage is reported at most once per interval', async (t) => {
    const log = outageLog();
    const interval = 300;
    const limiter = redisRateLimiter(`redis://127.0.0.1:${await freePort()}`, {
      ...log.options,
      reportIntervalMs: interval,
    });
    t.after(() => limiter.close());
    const until = Date.now() + 1_300;
    for (let i = 0; Date.now() < until; i++) {
      await limiter.hit(`caller:${i}`, rule);
      await sleep(10);
    }
    // ioredis keeps reconnecting (and failing) all along, so there is something to hold back.
    assert.ok(log.reports.length >= 2, `reports ${log.reports.length}`);
    for (let i = 1; i < log.reports.length; i++) {
      assert.ok(log.reports[i]! - log.reports[i - 1]! >= interval, `reports ${log.reports.join(', ')}`);
    }
    assert.equal(log.recoveries(), 0);
  });

  test('reset does not throw', async (t) => {
    const limiter = redisRateLimiter(`redis://127.0.0.1:${await freePort()}`);
    t.after(() => limiter.close());
    await limiter.reset('caller');
  });

  describe('on a Redis of its own', { skip: hasRedisServer }, () => {
    /** Two instances sharing the Redis on `port`, quick to notice an outage and its end. */
    const instances = (port: number, log: ReturnType<typeof outageLog>) => {
      const options = { prefix: RUN_PREFIX, timeoutMs: 150, probeIntervalMs: 100, ...log.options };
      return [
        redisRateLimiter(`redis://127.0.0.1:${port}`, options),
        redisRateLimiter(`redis://127.0.0.1:${port}`, options),
      ] as const;
    };
    /** Hits alternating between the instances; how many were allowed. */
    const alternating = async (pair: readonly RateLimiter[], key: string, count: number) => {
      let allowed = 0;
      for (let i = 0; i < count; i++) if ((await pair[i % 2]!.hit(key, rule)).allowed) allowed += 1;
      return allowed;
    };

    test('when Redis stops answering, each instance limits on its own; when it answers again, limits are shared again', async (t) => {
      const port = await freePort();
      const server = await startRedis(port);
      t.after(() => stopRedis(server));
      const log = outageLog();
      const pair = instances(port, log);
      t.after(() => Promise.all(pair.map((limiter) => limiter.close())));
      assert.equal(await alternating(pair, 'before', 2 * rule.limit), rule.limit, 'shared before the outage');

      server.kill('SIGSTOP');
      const started = performance.now();
      const [first] = pair;
      const during = await hits(first, 'during', rule, rule.limit + 2);
      assert.ok(performance.now() - started < 1_000, 'only the hit that noticed the outage waited');
      assert.deepEqual(
        during.map((decision) => decision.allowed),
        [true, true, true, false, false],
      );
      assert.equal(log.reports.length, 1);

      server.kill('SIGCONT');
      await eventually(() => log.recoveries() === 1, 3_000, 'the recovery');
      assert.equal(await alternating(pair, 'after', 2 * rule.limit), rule.limit, 'shared after the outage');
      assert.equal(log.reports.length, 1);
    });

    test('when Redis dies and comes back, limits hold meanwhile and are shared again after', async (t) => {
      const port = await freePort();
      let server = await startRedis(port);
      t.after(() => stopRedis(server));
      const log = outageLog();
      const pair = instances(port, log);
      t.after(() => Promise.all(pair.map((limiter) => limiter.close())));
      assert.equal(await alternating(pair, 'before', 2 * rule.limit), rule.limit);

      await stopRedis(server);
      await eventually(() => log.reports.length === 2, 3_000, 'both instances to notice');
      for (const limiter of pair) {
        assert.deepEqual(
          (await hits(limiter, 'during', rule, rule.limit + 1)).map((decision) => decision.allowed),
          [true, true, true, false],
          'each instance on its own',
        );
      }

      server = await startRedis(port);
      await eventually(() => log.recoveries() === 2, 5_000, 'both instances to reconnect');
      assert.equal(await alternating(pair, 'after', 2 * rule.limit), rule.limit);
      assert.equal(log.reports.length, 2, 'one report per instance for the whole outage');
    });
  });
});
