/**
 * Observability: `GET /metrics` in Prometheus's text format (calls by operation and status with their
 * latency, rate-limit refusals, lockouts, the database's connections, and in gateway mode each core's
 * latency and circuit; Node's process metrics), who may read it, and one log line per request.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import type { LightMyRequestResponse } from 'fastify';
import { loadConfig } from '../src/config.js';
import { CORE_OPERATIONS, OPERATIONS, SHARED_SCHEMAS } from '../src/operations/index.js';
import { operationPath } from '../src/operations/types.js';
import { demoRequest } from '../src/seed/demo-requests.js';
import { demoExamples } from '../src/seed/examples.js';
import { createSymxCodec } from '../src/symxchange/codec.js';
import { BACKENDS, createHarness, type Harness } from './support/harness.js';
import { closedPort, startUpstream, type Upstream } from './support/upstream.js';

const operation = (name: string, family: 'P1' | 'P2' = 'P1') =>
  OPERATIONS.find((op) => op.name === name && op.family === family)!;
const FIND_PATH = operationPath(operation('findBySSN'));
const corpTransfer = operation('getCorpTransferSelectFields');
const CORP_TRANSFER_PATH = operationPath(corpTransfer);
const CORP_TRANSFER_BODY = demoRequest(demoExamples(627, 50), corpTransfer);
const FINDBY_NS = 'http://www.symxchange.generated.symitar.com/noncrud/findby';

/**
 * The value of the first sample of metric `name` whose labels include `labels` (exactly those values);
 * undefined when there is none.
 */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split('\n')) {
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const given = Object.fromEntries(
      [...(match[2] ?? '').matchAll(/([a-zA-Z_]+)="((?:[^"\\]|\\.)*)"/g)].map(([, label, value]) => [label, value]),
    );
    if (Object.entries(labels).every(([label, value]) => given[label] === value)) return Number(match[3]);
  }
  return undefined;
}

async function scrape(h: Harness, headers: Record<string, string> = {}): Promise<LightMyRequestResponse> {
  return h.app.inject({ method: 'GET', url: '/metrics', headers });
}

async function metricsText(h: Harness): Promise<string> {
  const response = await scrape(h);
  assert.equal(response.statusCode, 200, response.body);
  return response.body;
}

for (const backend of BACKENDS) {
  describe(`GET /metrics on ${backend.name}`, () => {
    let h: Harness;
    before(async () => {
      h = await createHarness(backend);
    });
    after(() => h.close());

    test("answers Prometheus's text format, with Node's process metrics beside coregate's", async () => {
      const response = await scrape(h);
      assert.equal(response.statusCode, 200);
      assert.equal(response.headers['content-type'], 'text/plain; version=0.0.4; charset=utf-8');
      assert.match(response.body, /^# TYPE process_cpu_user_seconds_total counter$/m);
      assert.match(response.body, /^# TYPE nodejs_eventloop_lag_seconds gauge$/m);
      assert.match(response.body, /^# TYPE coregate_http_requests_total counter$/m);
      assert.match(response.body, /^# TYPE coregate_http_request_duration_seconds histogram$/m);
    });

    test('calls are counted and timed by operation, version family, status and problem code', async () => {
      assert.equal((await h.call(FIND_PATH, { SSN: '123456789' })).statusCode, 200);
      assert.equal((await h.call(FIND_PATH, { SSN: '123456789' })).statusCode, 200);
      assert.equal((await h.call(FIND_PATH, { SSN: 'not-an-ssn' })).statusCode, 400);
      const text = await metricsText(h);
      const labels = { edge: 'json', operation: 'findBySSN', family: 'P1' };
      assert.equal(sample(text, 'coregate_http_requests_total', { ...labels, status: '200', code: '' }), 2);
      assert.equal(
        sample(text, 'coregate_http_requests_total', { ...labels, status: '400', code: 'VALIDATION_FAILED' }),
        1,
      );
      assert.equal(sample(text, 'coregate_http_request_duration_seconds_count', { ...labels, status: '200' }), 2);
      assert.equal(
        sample(text, 'coregate_http_request_duration_seconds_bucket', { ...labels, status: '200', le: '+Inf' }),
        2,
      );
      assert.ok(sample(text, 'coregate_http_request_duration_seconds_sum', { ...labels, status: '200' })! > 0);
    });

    test('a path that is no route is counted as unmatched, never by its URL', async () => {
      const response = await h.call('/gw/627/persistent/findby/findByNothing-7f3a', {});
      assert.equal(response.statusCode, 404);
      const text = await metricsText(h);
      assert.ok(!text.includes('findByNothing-7f3a'), 'the raw URL is not a label');
      assert.ok(sample(text, 'coregate_http_requests_total', { edge: 'ops', operation: 'unmatched', status: '404' }));
    });

    test('SymXchange SOAP calls are counted under their operation on the soap edge', async () => {
      const envelope = `<s:Envelope xmlns:s="http://schemas.xmlsoap.org/soap/envelope/"><s:Body><f:findBySSN xmlns:f="${FINDBY_NS}">
        <Request MessageId="m"><SSN>123456789</SSN><Credentials><AdministrativeCredentials><Password>test-admin-password</Password></AdministrativeCredentials></Credentials></Request>
        </f:findBySSN></s:Body></s:Envelope>`;
      const response = await h.app.inject({
        method: 'POST',
        url: '/SymXchange/findby',
        headers: {
          authorization: `Bearer ${h.token}`,
          'content-type': 'text/xml; charset=utf-8',
          soapaction: `${FINDBY_NS}/findBySSN`,
        },
        payload: envelope,
      });
      assert.equal(response.statusCode, 200, response.body);
      const text = await metricsText(h);
      assert.equal(
        sample(text, 'coregate_http_requests_total', {
          edge: 'soap',
          operation: 'findBySSN',
          family: 'P1',
          status: '200',
        }),
        1,
      );
    });

    const cachedReads = [
      { generation: 'lookup', path: '/gw/627/persistent/findby/findBySSN', body: { SSN: '111223333' }, status: 200 },
      // A collateral no one has: its absence is an answer kept like any other.
      {
        generation: 'collateral',
        path: '/gw/627/2022.01/collateral/getCollateral',
        body: { CollateralNumber: '7999999999' },
        status: 404,
      },
    ];
    for (const { generation, path, body, status } of cachedReads) {
      test(`${generation} answers from memory and from the database are counted, with the reads of the generation`, async () => {
        const before = await metricsText(h);
        const count = (text: string, result: string) =>
          sample(text, `coregate_${generation}_cache_answers_total`, { result }) ?? 0;
        for (let i = 0; i < 2; i += 1) {
          const response = await h.call(path, body);
          assert.equal(response.statusCode, status, response.body);
        }
        const text = await metricsText(h);
        assert.equal(count(text, 'miss') - count(before, 'miss'), 1);
        assert.equal(count(text, 'hit') - count(before, 'hit'), 1);
        const reads = (t: string) => sample(t, `coregate_${generation}_generation_reads_total`) ?? 0;
        assert.equal(reads(text) - reads(before), 2);
        assert.ok(sample(text, `coregate_${generation}_cache_entries`)! >= 1);
      });
    }

    test("the database's connections, callers waiting and queries running are gauges", async () => {
      // At rest: once the app's own background work (the audit writer, the start's sweep of idempotency keys) is done.
      await h.app.audit.flush();
      let idle = await metricsText(h);
      const atRest = (text: string) =>
        sample(text, 'coregate_db_queries_in_flight') === 0 &&
        sample(text, 'coregate_db_pool_connections', { state: 'busy' }) === 0;
      for (let waited = 0; !atRest(idle) && waited < 5_000; waited += 50) {
        await new Promise((resolve) => setTimeout(resolve, 50));
        idle = await metricsText(h);
      }
      assert.equal(sample(idle, 'coregate_db_pool_max_connections'), backend.url ? 10 : 1);
      assert.equal(sample(idle, 'coregate_db_pool_waiting'), 0);
      assert.equal(sample(idle, 'coregate_db_queries_in_flight'), 0);
      assert.equal(sample(idle, 'coregate_db_pool_connections', { state: 'busy' }), 0);
      // A transaction holds a connection while a query runs (PostgreSQL) or waits for it (the embedded one);
      // the audit trail's writer may be using or waiting for one too.
      let release!: () => void;
      const held = new Promise<void>((resolve) => (release = resolve));
      let inTransaction!: () => void;
      const started = new Promise<void>((resolve) => (inTransaction = resolve));
      const transaction = h.database.db.transaction().execute(async (trx) => {
        await sql`select 1`.execute(trx);
        inTransaction();
        await held;
      });
      await started;
      const query = sql`select pg_sleep(0.3)`.execute(h.database.db);
      await new Promise((resolve) => setTimeout(resolve, 100));
      const busy = await metricsText(h);
      release();
      await Promise.all([transaction, query]);
      if (backend.url) {
        assert.ok(sample(busy, 'coregate_db_pool_connections', { state: 'busy' })! >= 2, busy);
        assert.ok(sample(busy, 'coregate_db_queries_in_flight')! >= 1, busy);
      } else {
        assert.equal(sample(busy, 'coregate_db_pool_connections', { state: 'busy' }), 1);
        assert.equal(sample(busy, 'coregate_db_pool_connections', { state: 'idle' }), 0);
        assert.ok(sample(busy, 'coregate_db_pool_waiting')! >= 1, busy);
      }
    });
  });
}

describe('rate-limit refusals and lockouts', () => {
  let h: Harness;
  before(async () => {
    h = await createHarness(BACKENDS[0]!, {
      rateLimitPerMinute: 3,
      findByRateLimitPerMinute: 1,
      lockoutThreshold: 2,
    });
  });
  after(() => h.close());

  test("refusals are counted by the budget that refused: a token's calls, or its FindBy lookups", async () => {
    const headers = { authorization: `Bearer ${await h.tokenWith(['findby', 'corptransfer:read'])}` };
    assert.equal((await h.call(FIND_PATH, { SSN: '123456789' }, headers)).statusCode, 200);
    assert.equal((await h.call(FIND_PATH, { SSN: '123456789' }, headers)).statusCode, 429);
    assert.equal((await h.call(CORP_TRANSFER_PATH, CORP_TRANSFER_BODY, headers)).statusCode, 404);
    assert.equal((await h.call(CORP_TRANSFER_PATH, CORP_TRANSFER_BODY, headers)).statusCode, 429);
    const text = await metricsText(h);
    assert.equal(sample(text, 'coregate_rate_limit_refusals_total', { limit: 'findby' }), 1);
    assert.equal(sample(text, 'coregate_rate_limit_refusals_total', { limit: 'token' }), 1);
  });

  test('a credential locked by wrong passwords is counted, and so is each attempt refused while it is locked', async () => {
    const headers = { authorization: `Bearer ${await h.tokenWith(['corptransfer:read'])}` };
    const wrong = { ...CORP_TRANSFER_BODY, Credentials: { UserNumberCredentials: { UserNumber: 77, Password: 'x' } } };
    for (let attempt = 0; attempt < 3; attempt += 1) {
      const response = await h.app.inject({
        method: 'POST',
        url: CORP_TRANSFER_PATH,
        headers: { ...headers, 'content-type': 'application/json' },
        payload: JSON.stringify(wrong),
      });
      assert.equal(response.statusCode, 403, response.body);
    }
    const text = await metricsText(h);
    assert.equal(sample(text, 'coregate_lockouts_total', { credential: 'user' }), 1);
    assert.equal(sample(text, 'coregate_lockout_refusals_total', { credential: 'user' }), 1);
  });
});

describe('who may read /metrics', () => {
  const apps: Harness[] = [];
  after(async () => {
    for (const h of apps) await h.close();
  });

  test('COREGATE_METRICS=token asks for a live API token; off serves no /metrics at all', async () => {
    const guarded = await createHarness(BACKENDS[0]!, { metrics: 'token' });
    apps.push(guarded);
    const anonymous = await scrape(guarded);
    assert.equal(anonymous.statusCode, 401);
    assert.equal(anonymous.json().code, 'UNAUTHENTICATED');
    assert.equal((await scrape(guarded, { authorization: `Bearer ${guarded.token}` })).statusCode, 200);
    const off = await createHarness(BACKENDS[0]!, { metrics: 'off' });
    apps.push(off);
    assert.equal((await scrape(off)).statusCode, 404);
  });

  test('each app counts its own calls: two apps in one process share no counter', async () => {
    const [first, second] = apps;
    await first!.call(FIND_PATH, { SSN: '123456789' });
    const elsewhere = await scrape(second!, { authorization: `Bearer ${second!.token}` });
    assert.equal(sample(elsewhere.body, 'coregate_http_requests_total', { operation: 'findBySSN' }), undefined);
  });
});

describe('gateway mode', () => {
  const codec = createSymxCodec({ operations: CORE_OPERATIONS, schemas: SHARED_SCHEMAS });
  const lookup = operation('findByHomeUser');
  let upstream: Upstream;
  let gateway: Harness;

  before(async () => {
    upstream = await startUpstream();
    const config = loadConfig({
      COREGATE_CORE: 'symxchange',
      COREGATE_SYMXCHANGE_URL: upstream.url,
      COREGATE_SYMXCHANGE_URL_700: `http://127.0.0.1:${await closedPort()}`,
      COREGATE_SYMXCHANGE_BREAKER_FAILURES: '1',
      COREGATE_SYMXCHANGE_BREAKER_OPEN_MS: '60000',
    });
    gateway = await createHarness(BACKENDS[0]!, { core: config.core, symxchange: config.symxchange });
  });
  after(async () => {
    await gateway?.close();
    await upstream?.close();
  });

  test("each core's call latency is a histogram by Sym and outcome, its circuit a state set", async () => {
    upstream.behave(({ body }, response) => {
      const messageId = /MessageId="([^"]*)"/.exec(body)?.[1] ?? '';
      const answer = codec.encodeResponse(lookup, { AccountNumber: '0000000042', MessageId: lookup.name }, messageId);
      response.writeHead(200, { 'content-type': 'text/xml; charset=utf-8' }).end(answer);
    });
    const answered = await gateway.call(operationPath(lookup), { HomeBankingUserName: 'member42' });
    assert.equal(answered.statusCode, 200, answered.body);
    const refused = await gateway.call(operationPath(lookup, 700), { HomeBankingUserName: 'member42' });
    assert.equal(refused.statusCode, 503);
    const text = await metricsText(gateway);
    assert.equal(sample(text, 'coregate_core_call_duration_seconds_count', { sym: '627', outcome: 'ok' }), 1);
    assert.equal(
      sample(text, 'coregate_core_call_duration_seconds_count', { sym: '700', outcome: 'CORE_UNAVAILABLE' }),
      1,
    );
    assert.equal(sample(text, 'coregate_core_circuit_state', { sym: '627', state: 'closed' }), 1);
    assert.equal(sample(text, 'coregate_core_circuit_state', { sym: '627', state: 'open' }), 0);
    assert.equal(sample(text, 'coregate_core_circuit_state', { sym: '700', state: 'open' }), 1);
  });

  test('store mode has no core metrics', async () => {
    const store = await createHarness(BACKENDS[0]!);
    try {
      assert.doesNotMatch(await metricsText(store), /coregate_core_/);
    } finally {
      await store.close();
    }
  });
});

describe('the log: one line per request', () => {
  let h: Harness;
  before(async () => {
    h = await createHarness(BACKENDS[0]!);
  });
  after(() => h.close());

  const linesOf = (requestId: string) =>
    h
      .logs()
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .filter((line) => line.reqId === requestId);

  test('an answered call writes one info line with method, URL, operation, status, duration and request id', async () => {
    const response = await h.call(FIND_PATH, { SSN: '123456789' }, { 'x-request-id': 'log-one-line' });
    assert.equal(response.statusCode, 200);
    const lines = linesOf('log-one-line');
    assert.equal(lines.length, 1, JSON.stringify(lines));
    const [line] = lines;
    assert.equal(line!.level, 30);
    assert.equal(line!.msg, 'request');
    assert.equal(line!.method, 'POST');
    assert.equal(line!.url, FIND_PATH);
    assert.equal(line!.operation, 'P1:findBySSN');
    assert.equal(line!.status, 200);
    assert.equal(typeof line!.durationMs, 'number');
    assert.equal(line!.code, undefined);
  });

  test("a refused call's line carries its problem code; Fastify's own request lines are gone", async () => {
    await h.call(FIND_PATH, { SSN: 'x' }, { 'x-request-id': 'log-refused' });
    const [line] = linesOf('log-refused');
    assert.equal(line!.status, 400);
    assert.equal(line!.code, 'VALIDATION_FAILED');
    const messages = h.logs().map((text) => (JSON.parse(text) as { msg?: string }).msg);
    assert.ok(!messages.includes('incoming request'));
    assert.ok(!messages.includes('request completed'));
  });
});
