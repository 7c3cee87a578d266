/**
 * Rate limits per key (a bearer token, a FindBy caller, a user number counting failed logins), held in
 * memory for one instance or in Redis so that several instances share one limit (issue: "limits hold
 * across several instances when Redis is configured").
 *
 * Algorithm: GCRA (the generic cell rate algorithm, a token bucket kept as one timestamp). A rule of
 * `limit` per `windowSeconds` allows a burst of at most `limit` hits, then frees one slot every
 * `windowSeconds / limit`, so the sustained rate never exceeds `limit` per window. Chosen over a fixed
 * window, which admits 2×limit at an instant across a window edge, and over the sliding window counter,
 * which needs two counters per key and only estimates its count and its Retry-After: GCRA has no edges,
 * stores one integer per key, and gives the exact time until the next slot frees (for `Retry-After`).
 *
 * Keep one rule per key: the key names what is limited (`findby:<token>`), the rule how much.
 */
import { Redis } from 'ioredis';

export interface RateLimitRule {
  readonly limit: number;
  readonly windowSeconds: number;
}

export interface RateDecision {
  readonly allowed: boolean;
  readonly limit: number;
  /** Hits still allowed right now after this one; never negative. */
  readonly remaining: number;
  /** 0 when allowed; when refused, whole seconds (at least 1) until a slot frees. */
  readonly retryAfterSeconds: number;
}

export interface RateLimiter {
  /** Counts one hit for `key` under `rule` and says whether it is allowed. */
  hit(key: string, rule: RateLimitRule): Promise<RateDecision>;
  /** Forgets a key (e.g. after a successful login). */
  reset(key: string): Promise<void>;
  close(): Promise<void>;
}

export interface RedisRateLimiterOptions {
  /** Prepended to every key; default `coregate:rl:`. */
  readonly prefix?: string;
  /** Milliseconds since the epoch; default the Redis server's clock (`TIME`), which every instance shares. */
  readonly now?: () => number;
  /** How long a hit waits for Redis before the instance's own limiter answers it; default 200 ms. */
  readonly timeoutMs?: number;
  /**
   * Told when Redis becomes unavailable (the instance then limits on its own), and again at most once per
   * `reportIntervalMs` while it stays so, so that it can be logged without a line per request.
   */
  readonly onError?: (error: Error) => void;
  /** Told once when Redis answers again after an outage (limits are shared again). */
  readonly onRecover?: () => void;
  /** The least time between two `onError` reports of one outage; default one minute. */
  readonly reportIntervalMs?: number;
  /** How often Redis is tried again during an outage; default one second. */
  readonly probeIntervalMs?: number;
}

const MICROS_PER_MS = 1_000;
const MICROS_PER_SECOND = 1_000_000;
/** Memory limiter: entries kept at most, and hits between sweeps of expired entries. */
const DEFAULT_MAX_KEYS = 100_000;
const SWEEP_EVERY_HITS = 1_024;
const DEFAULT_TIMEOUT_MS = 200;
const DEFAULT_REPORT_INTERVAL_MS = 60_000;
const DEFAULT_PROBE_INTERVAL_MS = 1_000;

/** The GCRA constants of a rule, in integer microseconds so that `limit` hits at one instant fit exactly. */
function cell(rule: RateLimitRule): { interval: number; tolerance: number } {
  if (!Number.isInteger(rule.limit) || rule.limit < 1)
    throw new RangeError(`rate limit must be a positive integer, got ${rule.limit}`);
  if (!(rule.windowSeconds > 0) || !Number.isFinite(rule.windowSeconds)) {
    throw new RangeError(`rate limit window must be a positive number of seconds, got ${rule.windowSeconds}`);
  }
  // Rounding the interval up keeps the sustained rate at or under the rule.
  const interval = Math.ceil((rule.windowSeconds * MICROS_PER_SECOND) / rule.limit);
  return { interval, tolerance: interval * (rule.limit - 1) };
}

/** Shapes the outcome of one GCRA step (the same arithmetic in TypeScript and in the Redis script). */
function decision(rule: RateLimitRule, allowed: boolean, remaining: number, waitMicros: number): RateDecision {
  return {
    allowed,
    limit: rule.limit,
    remaining: Math.max(0, remaining),
    retryAfterSeconds: allowed ? 0 : Math.max(1, Math.ceil(waitMicros / MICROS_PER_SECOND)),
  };
}

/**
 * One instance's limits, in a map bounded in size: expired keys are swept every few thousand hits (no
 * timer, so nothing keeps the process alive), and when the map is full the least recently hit key is
 * forgotten. `now` gives milliseconds since the epoch (default `Date.now`).
 *
 * @example
 * const limiter = memoryRateLimiter();
 * const decision = await limiter.hit(`findby:${tokenName}`, { limit: 30, windowSeconds: 60 });
 * if (!decision.allowed) reply.header('retry-after', decision.retryAfterSeconds).code(429);
 */
export function memoryRateLimiter(now: () => number = Date.now, options: { maxKeys?: number } = {}): RateLimiter {
  const maxKeys = options.maxKeys ?? DEFAULT_MAX_KEYS;
  if (!Number.isInteger(maxKeys) || maxKeys < 1)
    throw new RangeError(`maxKeys must be a positive integer, got ${maxKeys}`);
  /** Key → theoretical arrival time (µs): when the key's bucket is full again. */
  const arrivals = new Map<string, number>();
  let hitsSinceSweep = 0;

  const sweep = (nowMicros: number) => {
    for (const [key, arrival] of arrivals) if (arrival <= nowMicros) arrivals.delete(key);
    hitsSinceSweep = 0;
  };

  return {
    async hit(key, rule) {
      const { interval, tolerance } = cell(rule);
      const nowMicros = Math.round(now() * MICROS_PER_MS);
      if (++hitsSinceSweep >= SWEEP_EVERY_HITS) sweep(nowMicros);
      const arrival = Math.max(arrivals.get(key) ?? nowMicros, nowMicros);
      const backlog = arrival - nowMicros;
      if (backlog > tolerance) return decision(rule, false, 0, backlog - tolerance);
      // Re-inserting moves the key to the end of the map's order, which makes the first key the least recent.
      arrivals.delete(key);
      if (arrivals.size >= maxKeys) arrivals.delete(arrivals.keys().next().value!);
      arrivals.set(key, arrival + interval);
      return decision(rule, true, Math.floor((tolerance - backlog) / interval), 0);
    },
    async reset(key) {
      arrivals.delete(key);
    },
    async close() {
      arrivals.clear();
    },
  };
}

/**
 * One GCRA step, atomic in Redis. KEYS[1]: the key; ARGV: limit, interval (µs), now (µs, or '' for the
 * server clock). Returns {allowed 0|1, remaining, µs to wait}. The key expires when its bucket is full
 * again, which is also when it stops mattering, so no key outlives its use.
 */
const GCRA_SCRIPT = `
local limit = tonumber(ARGV[1])
local interval = tonumber(ARGV[2])
local tolerance = interval * (limit - 1)
local now = tonumber(ARGV[3])
if not now then
  local time = redis.call('TIME')
  now = tonumber(time[1]) * 1000000 + tonumber(time[2])
end
local arrival = math.max(tonumber(redis.call('GET', KEYS[1])) or now, now)
local backlog = arrival - now
if backlog > tolerance then
  return {0, 0, backlog - tolerance}
end
redis.call('SET', KEYS[1], string.format('%d', arrival + interval), 'PX', math.ceil((backlog + interval) / 1000))
return {1, math.floor((tolerance - backlog) / interval), 0}
`;

interface GcraCommand {
  coregateGcra(key: string, limit: number, interval: number, now: string): Promise<[number, number, number]>;
}

/**
 * Limits shared by every instance using the same Redis: one script call (one round trip) per hit, timed by
 * the Redis server's clock so that instances with skewed clocks agree.
 *
 * When Redis is unreachable or does not answer within `timeoutMs`, the instance limits on its own with
 * the same rules (a memory limiter), so a Redis outage neither takes the API down nor lifts the limits:
 * across N instances at most N times the limit gets through until Redis is back. During the outage hits
 * go straight to memory (no request waits for Redis) while Redis is probed every `probeIntervalMs`; the
 * outage is reported once, then at most once per `reportIntervalMs`, and its end once. Hits are never
 * queued while disconnected, so an outage neither piles up requests nor replays stale hits afterwards.
 *
 * @example
 * const limiter = redisRateLimiter('redis://127.0.0.1:6379', { onError: (error) => log.warn(error) });
 * const decision = await limiter.hit(`token:${tokenName}`, { limit: 600, windowSeconds: 60 });
 */
export function redisRateLimiter(url: string, options: RedisRateLimiterOptions = {}): RateLimiter {
  const prefix = options.prefix ?? 'coregate:rl:';
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const reportIntervalMs = options.reportIntervalMs ?? DEFAULT_REPORT_INTERVAL_MS;
  const probeIntervalMs = options.probeIntervalMs ?? DEFAULT_PROBE_INTERVAL_MS;
  const fallback = memoryRateLimiter(options.now);
  const redis = new Redis(url, {
    commandTimeout: timeoutMs,
    maxRetriesPerRequest: 1,
    enableOfflineQueue: false,
    connectTimeout: Math.max(timeoutMs, 1_000),
  });
  const gcra = redis as Redis & GcraCommand;
  redis.defineCommand('coregateGcra', { numberOfKeys: 1, lua: GCRA_SCRIPT });

  /** Set while Redis is unavailable: whether this outage was reported, and the probe that ends it. */
  let outage: { reported: boolean; probe: NodeJS.Timeout } | undefined;
  /** Reports are spaced across outages too, so a flapping Redis logs no more than a steady outage. */
  let lastReportAt = -Infinity;
  let closed = false;
  const unavailable = (error: Error) => {
    if (closed) return;
    if (!outage) {
      // ioredis reconnects by itself ('ready' ends the outage); a connection that is up but did not answer
      // is tried with a write, which also fails while Redis refuses writes (out of memory, a read-only replica).
      const probe = setInterval(() => {
        if (redis.status === 'ready') redis.set(`${prefix}probe`, '1', 'PX', 1_000).then(available, unavailable);
      }, probeIntervalMs);
      probe.unref();
      outage = { reported: false, probe };
    }
    const now = Date.now();
    if (now - lastReportAt < reportIntervalMs) return;
    lastReportAt = now;
    outage.reported = true;
    options.onError?.(error);
  };
  const available = () => {
    if (!outage || closed) return;
    clearInterval(outage.probe);
    const { reported } = outage;
    outage = undefined;
    if (reported) options.onRecover?.();
  };
  // A listener is required: ioredis prints unhandled connection errors to stderr, which would repeat on every retry.
  redis.on('error', unavailable);
  redis.on('ready', available);

  // Without an offline queue, a hit sent before the first connection completes would fail; the first hits
  // wait for that connection (or its first failure), bounded by the timeout.
  const firstConnection = new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, timeoutMs);
    timer.unref();
    const settle = () => {
      clearTimeout(timer);
      resolve();
    };
    redis.once('ready', settle);
    redis.once('error', settle);
    redis.once('end', settle);
  });
  /** Whether Redis should be asked now; reports an outage when the connection is down. */
  const useRedis = async (): Promise<boolean> => {
    if (outage) return false;
    if (redis.status !== 'ready') await firstConnection;
    if (redis.status === 'ready') return true;
    unavailable(new Error(`Redis is not connected (${redis.status})`));
    return false;
  };

  return {
    async hit(key, rule) {
      const { interval } = cell(rule);
      if (!(await useRedis())) return fallback.hit(key, rule);
      try {
        const now = options.now ? String(Math.round(options.now() * MICROS_PER_MS)) : '';
        const [allowed, remaining, wait] = await gcra.coregateGcra(prefix + key, rule.limit, interval, now);
        return decision(rule, allowed === 1, remaining, wait);
      } catch (error) {
        unavailable(error as Error);
        return fallback.hit(key, rule);
      }
    },
    async reset(key) {
      await fallback.reset(key);
      if (!(await useRedis())) return;
      try {
        await redis.del(prefix + key);
      } catch (error) {
        unavailable(error as Error);
      }
    },
    async close() {
      closed = true;
      if (outage) clearInterval(outage.probe);
      await fallback.close();
      if (redis.status === 'ready' && !outage) await redis.quit().catch(() => redis.disconnect());
      else redis.disconnect();
    },
  };
}

/**
 * Redis when a URL is given (limits shared across instances), memory otherwise (one instance).
 *
 * @example
 * const limiter = createRateLimiter(process.env.REDIS_URL || undefined);
 */
export function createRateLimiter(redisUrl: string | undefined, options: RedisRateLimiterOptions = {}): RateLimiter {
  return redisUrl ? redisRateLimiter(redisUrl, options) : memoryRateLimiter(options.now);
}
