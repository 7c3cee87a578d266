/**
 * Fault rules on the server (`/admin/faults`, http/fault-rules.ts): with COREGATE_SANDBOX_FAULTS on, a rule
 * added over the admin API makes the calls it matches fail for unmodified clients (plain fetch, node-soap),
 * on every instance of one database, as often as it says (a probability, the next N calls counted across
 * the fleet, until a time); each call the admin API takes is checked, rate limited and audited, and bad input
 * is a 400 naming the property. A rule's JSON answer is exactly the gateway's answer to the same failure of
 * a real core; on the SOAP face coregate is the core and sends the failure itself. Off, the admin API's fault
 * routes are 403 and rules in the database do nothing.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import type soap from 'soap';
import type { FastifyInstance } from 'fastify';
import { loadConfig, type Config } from '../src/config.js';
import { FAULT_RULE_LIMITS, readFaultRule } from '../src/contract/fault-rules.js';
import { buildApp } from '../src/http/app.js';
import { OPERATIONS } from '../src/operations/index.js';
import { operationPath, type AnyOperation } from '../src/operations/types.js';
import { hashPassword } from '../src/crypto/passwords.js';
import { openDatabase } from '../src/database/database.js';
import { migrate } from '../src/database/migrations.js';
import { settings, SETTING, tokens } from '../src/store/access.js';
import { faultRules } from '../src/store/fault-rules.js';
import { ADMIN_PASSWORD, adminCredentials, BACKENDS, createHarness, type Harness } from './support/harness.js';
import { callSoap, soapArguments, soapClients } from './support/soap-client.js';
import { adminStatement, CLI, serve, stop, type Served } from './support/serve-process.js';
import { closedPort, startUpstream, type Behaviour, type Upstream } from './support/upstream.js';

const operation = (name: string, family: 'P1' | 'P2' = 'P1') =>
  OPERATIONS.find((op) => op.name === name && op.family === family)!;
const findBySSN = operation('findBySSN');
const findByAnyCard = operation('findByAnyCard');
const FIND_PATH = operationPath(findBySSN);
const FIND_BODY = { SSN: '123456789' };
const FINDBY_NS = 'http://www.symxchange.generated.symitar.com/noncrud/findby';

/** A findBySSN envelope as a SymXchange client writes it. */
const findBySsnEnvelope = `<soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/" xmlns:fin="${FINDBY_NS}">
  <soapenv:Body><fin:findBySSN><Request MessageId="m-1"><SSN>${FIND_BODY.SSN}</SSN>
  <Credentials><AdministrativeCredentials><Password>${ADMIN_PASSWORD}</Password></AdministrativeCredentials></Credentials>
  </Request></fin:findBySSN></soapenv:Body></soapenv:Envelope>`;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Calls the admin API of a harness's app with its token (or `token`). */
async function admin(h: Pick<Harness, 'app' | 'token'>, method: string, url: string, body?: unknown, token = h.token) {
  return h.app.inject({
    method: method as 'GET',
    url,
    headers: {
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
  });
}

/** Adds a rule; returns it as the API answered it (201). */
async function addRule(h: Harness, rule: Record<string, unknown>) {
  const response = await admin(h, 'POST', '/admin/faults', rule);
  assert.equal(response.statusCode, 201, response.body);
  return response.json() as { id: number; fired: number; remaining: number | null };
}

const listRules = async (h: Harness) =>
  (
    (await admin(h, 'GET', '/admin/faults')).json() as {
      rules: { id: number; fired: number; remaining: number | null }[];
    }
  ).rules;

/** Another app on a harness's database, with other settings: its calls and admin calls, with the harness's token. */
interface App {
  readonly app: FastifyInstance;
  call(path: string, body: Record<string, unknown>): ReturnType<Harness['call']>;
  admin(method: string, url: string, body?: unknown, token?: string): ReturnType<typeof admin>;
}

async function appOn(h: Harness, overrides: Partial<Config>): Promise<App> {
  const app = await buildApp({
    db: h.database.db,
    databaseKind: h.database.kind,
    secrets: h.secrets,
    config: { ...h.config, ...overrides },
  });
  await app.ready();
  return {
    app,
    call: (path, body) =>
      app.inject({
        method: 'POST',
        url: path,
        headers: { authorization: `Bearer ${h.token}`, 'content-type': 'application/json' },
        payload: JSON.stringify({ Credentials: adminCredentials, ...body }),
      }),
    admin: (method, url, body, token) => admin({ ...h, app }, method, url, body, token),
  };
}

/** Asserts a problem+json answer; returns its body. */
function problem(
  response: { statusCode: number; headers: Record<string, unknown>; body: string },
  status: number,
  code: string,
) {
  assert.equal(response.statusCode, status, response.body);
  assert.match(String(response.headers['content-type']), /^application\/problem\+json/);
  const body = JSON.parse(response.body) as { code: string; detail: string; errors?: { pointer: string }[] };
  assert.equal(body.code, code, response.body);
  return body;
}

/** Calls findBySSN through node-soap; resolves with the error it rejects with (undefined when it answers). */
async function soapFailure(clients: Map<string, soap.Client>, op: AnyOperation = findBySSN) {
  try {
    await callSoap(clients, op, soapArguments(op, { Credentials: adminCredentials, ...FIND_BODY }, 'm-1'));
    return undefined;
  } catch (error) {
    return error as Error & {
      root?: { Envelope?: { Body?: { Fault?: { faultcode?: string } } } };
      response?: { status?: number };
    };
  }
}

for (const backend of BACKENDS) {
  describe(`fault rules on ${backend.name}`, () => {
    let h: Harness;
    let base: string;
    let clients: Map<string, soap.Client>;

    before(async () => {
      h = await createHarness(backend, { sandboxFaults: true });
      base = await h.app.listen({ port: 0, host: '127.0.0.1' });
      clients = await soapClients(base, [findBySSN], { Authorization: `Bearer ${h.token}` });
    });
    afterEach(async () => {
      assert.equal((await admin(h, 'DELETE', '/admin/faults')).statusCode, 200);
    });
    after(() => h.close());

    describe('the admin API', () => {
      test('POST adds a rule (201 with its id and defaults), GET lists it, DELETE removes it', async () => {
        const before = Date.now();
        const added = await addRule(h, { operations: 'findBy*', code: 'CORE_UNAVAILABLE', times: 3 });
        assert.deepEqual(
          { ...added, id: typeof added.id, until: undefined, createdAt: undefined },
          {
            id: 'number',
            operations: 'findBy*',
            face: 'both',
            code: 'CORE_UNAVAILABLE',
            probability: 1,
            times: 3,
            remaining: 3,
            fired: 0,
            until: undefined,
            createdAt: undefined,
            createdBy: 'test',
          },
        );
        const until = Date.parse((added as unknown as { until: string }).until);
        assert.ok(Math.abs(until - before - FAULT_RULE_LIMITS.defaultMinutes * 60_000) < 60_000, 'an hour by default');
        assert.deepEqual(await listRules(h), [added]);
        const removed = await admin(h, 'DELETE', `/admin/faults/${added.id}`);
        assert.equal(removed.statusCode, 200, removed.body);
        assert.deepEqual(removed.json(), { removed: 1 });
        assert.deepEqual(await listRules(h), []);
        problem(await admin(h, 'DELETE', `/admin/faults/${added.id}`), 404, 'NOT_FOUND');
      });

      test('DELETE /admin/faults removes every rule and says how many', async () => {
        await addRule(h, { operations: '*', latencyMs: 1 });
        await addRule(h, { operations: 'findBySSN', drop: true, face: 'soap' });
        const cleared = await admin(h, 'DELETE', '/admin/faults');
        assert.deepEqual(cleared.json(), { removed: 2 });
        assert.deepEqual(await listRules(h), []);
      });

      test('bad input is a 400 naming the property at fault, never a 500', async () => {
        const inAnHour = new Date(Date.now() + 3_600_000).toISOString();
        const cases: [unknown, string][] = [
          [{ operations: 'findBySSN', code: 'CORE_UNAVAILABLE', colour: 'red' }, '/colour'],
          [{ code: 'CORE_UNAVAILABLE' }, '/operations'],
          [{ operations: 'findbyssn', code: 'CORE_UNAVAILABLE' }, '/operations'],
          [{ operations: 'find By', code: 'CORE_UNAVAILABLE' }, '/operations'],
          [{ operations: 'findBySSN', code: 'NOT_A_CODE' }, '/code'],
          [{ operations: 'findBySSN', code: 'CORE_UNAVAILABLE', status: 500 }, '/status'],
          [{ operations: 'findBySSN', status: 503 }, '/status'],
          [{ operations: 'findBySSN', code: 'CORE_UNAVAILABLE', drop: true }, '/drop'],
          [{ operations: 'findBySSN', drop: false }, '/drop'],
          [{ operations: 'findBySSN', soapFault: 'Receiver' }, '/soapFault'],
          [{ operations: 'findBySSN', malformed: 'gibberish' }, '/malformed'],
          [{ operations: 'findBySSN' }, ''],
          [{ operations: 'findBySSN', latencyMs: 30_001 }, '/latencyMs'],
          [{ operations: 'findBySSN', latencyMs: 20_000, jitterMs: 20_000 }, '/jitterMs'],
          [{ operations: 'findBySSN', latencyMs: -1 }, '/latencyMs'],
          [{ operations: 'findBySSN', latencyMs: 1, probability: 1.5 }, '/probability'],
          [{ operations: 'findBySSN', latencyMs: 1, times: 0 }, '/times'],
          [{ operations: 'findBySSN', latencyMs: 1, until: '2020-01-01T00:00:00Z' }, '/until'],
          [{ operations: 'findBySSN', latencyMs: 1, until: '2999-01-01T00:00:00Z' }, '/until'],
          [{ operations: 'findBySSN', latencyMs: 1, until: inAnHour.slice(0, 19) }, '/until'],
          [{ operations: 'findBySSN', latencyMs: 1, until: 'tomorrow' }, '/until'],
          [[], ''],
        ];
        for (const [body, pointer] of cases) {
          const refused = problem(await admin(h, 'POST', '/admin/faults', body), 400, 'VALIDATION_FAILED');
          assert.ok(
            refused.errors?.some((error) => error.pointer === pointer),
            `${JSON.stringify(body)} names ${pointer || 'the body'}: ${JSON.stringify(refused.errors)}`,
          );
        }
        const notJson = await h.app.inject({
          method: 'POST',
          url: '/admin/faults',
          headers: { authorization: `Bearer ${h.token}`, 'content-type': 'application/json' },
          payload: '{"operations":',
        });
        problem(notJson, 400, 'MALFORMED_JSON');
        problem(await admin(h, 'DELETE', '/admin/faults/abc'), 400, 'VALIDATION_FAILED');
        problem(await admin(h, 'DELETE', '/admin/faults/99999999999'), 400, 'VALIDATION_FAILED');
        assert.deepEqual(await listRules(h), []);
      });

      test('a token without the admin scope is 403 and none is 401, and nothing is added', async () => {
        const rule = { operations: '*', latencyMs: 1 };
        problem(await admin(h, 'POST', '/admin/faults', rule, await h.tokenWith(['findby'])), 403, 'FORBIDDEN');
        problem(await admin(h, 'GET', '/admin/faults', undefined, ''), 401, 'UNAUTHENTICATED');
        assert.deepEqual(await listRules(h), []);
      });

      test('each call is audited as admin:faults.<what>, naming the rule it acted on', async () => {
        const added = await addRule(h, { operations: '*', latencyMs: 1 });
        await admin(h, 'DELETE', `/admin/faults/${added.id}`);
        await h.app.audit.flush();
        const { rows } = await sql<{ operation: string; target: string | null; status: number }>`
          select operation, target, status from audit_event where operation like 'admin:faults.%' order by id desc limit 2`.execute(
          h.database.db,
        );
        assert.deepEqual(rows.reverse(), [
          { operation: 'admin:faults.add', target: `fault:${added.id}`, status: 201 },
          { operation: 'admin:faults.remove', target: `fault:${added.id}`, status: 200 },
        ]);
      });

      test(`at most ${FAULT_RULE_LIMITS.rules} rules are kept: one more is 409 TOO_MANY_FAULT_RULES`, async () => {
        for (let i = 0; i < FAULT_RULE_LIMITS.rules; i += 1) await addRule(h, { operations: '*', latencyMs: 0 });
        problem(
          await admin(h, 'POST', '/admin/faults', { operations: '*', latencyMs: 0 }),
          409,
          'TOO_MANY_FAULT_RULES',
        );
      });

      test('a rule that fired on all its calls makes room for a new one; expired rules are swept', async () => {
        const { db } = h.database;
        const rule = (times: number | null) =>
          readFaultRule({ operations: '*', latencyMs: 0, ...(times ? { times } : {}) }, ['findBySSN'], new Date());
        const spent = (await faultRules.add(db, rule(1), null, 2))!;
        await faultRules.add(db, rule(null), null, 2);
        assert.deepEqual(await faultRules.fire(db, spent.id), { remaining: 0 });
        assert.equal(await faultRules.fire(db, spent.id), undefined, 'spent');
        assert.ok(await faultRules.add(db, rule(null), null, 2), 'the spent rule made room');
        assert.equal(await faultRules.add(db, rule(null), null, 2), undefined, 'full');
        await sql`update fault_rule set until = now() - interval '1 second'`.execute(db);
        assert.deepEqual(await faultRules.list(db), []);
        assert.equal(await faultRules.sweep(db), 2);
      });
    });

    describe('applied to calls', () => {
      test('times: 3 fires on exactly the next 3 calls, then the real answer, and the counts say so', async () => {
        const added = await addRule(h, { operations: 'findBySSN', code: 'CORE_UNAVAILABLE', times: 3 });
        const statuses = [];
        for (let i = 0; i < 5; i += 1) statuses.push((await h.call(FIND_PATH, FIND_BODY)).statusCode);
        assert.deepEqual(statuses, [503, 503, 503, 200, 200]);
        assert.deepEqual(
          (await listRules(h)).map(({ id, fired, remaining }) => ({ id, fired, remaining })),
          [{ id: added.id, fired: 3, remaining: 0 }],
        );
      });

      test('probability 0 never fires; probability 1 fires on every call', async () => {
        const never = await addRule(h, { operations: 'findBySSN', code: 'CORE_ERROR', probability: 0 });
        for (let i = 0; i < 10; i += 1) assert.equal((await h.call(FIND_PATH, FIND_BODY)).statusCode, 200);
        const always = await addRule(h, { operations: 'findBySSN', code: 'CORE_ERROR', probability: 1 });
        for (let i = 0; i < 10; i += 1) problem(await h.call(FIND_PATH, FIND_BODY), 502, 'CORE_ERROR');
        const fired = new Map((await listRules(h)).map((rule) => [rule.id, rule.fired]));
        assert.deepEqual([fired.get(never.id), fired.get(always.id)], [0, 10]);
      });

      test('latency delays the real answer by latencyMs and up to jitterMs more', async () => {
        await addRule(h, { operations: 'findBySSN', latencyMs: 300, jitterMs: 100 });
        for (let i = 0; i < 3; i += 1) {
          const started = performance.now();
          const response = await h.call(FIND_PATH, FIND_BODY);
          const elapsed = performance.now() - started;
          assert.equal(response.statusCode, 200, response.body);
          assert.ok(elapsed >= 295 && elapsed < 1000, `${elapsed} ms`);
        }
      });

      test('a rule applies to the operations it names (a name, a prefix, *) and on its face only', async () => {
        await addRule(h, { operations: 'findByA*', code: 'RECORD_NOT_FOUND', face: 'json' });
        problem(
          await h.call(operationPath(findByAnyCard), { CardNumber: '4000000000000002' }),
          404,
          'RECORD_NOT_FOUND',
        );
        assert.equal((await h.call(FIND_PATH, FIND_BODY)).statusCode, 200, 'findBySSN is not findByA*');
        await addRule(h, { operations: '*', code: 'CORE_ERROR', face: 'soap' });
        assert.equal((await h.call(FIND_PATH, FIND_BODY)).statusCode, 200, 'a SOAP rule leaves the JSON API alone');
        assert.equal((await soapFailure(clients))?.response?.status, 500, 'the SOAP face fails');
      });

      test('an expired rule is ignored and no longer listed', async () => {
        await addRule(h, {
          operations: 'findBySSN',
          code: 'CORE_TIMEOUT',
          until: new Date(Date.now() + 1_000).toISOString(),
        });
        problem(await h.call(FIND_PATH, FIND_BODY), 504, 'CORE_TIMEOUT');
        await sleep(1_100);
        assert.equal((await h.call(FIND_PATH, FIND_BODY)).statusCode, 200);
        assert.deepEqual(await listRules(h), []);
      });

      test('a removed rule stops at once', async () => {
        const added = await addRule(h, { operations: 'findBySSN', code: 'CORE_ERROR' });
        problem(await h.call(FIND_PATH, FIND_BODY), 502, 'CORE_ERROR');
        await admin(h, 'DELETE', `/admin/faults/${added.id}`);
        assert.equal((await h.call(FIND_PATH, FIND_BODY)).statusCode, 200);
      });

      test("soapFault: node-soap gets a Fault of the rule's class; the JSON API 502 CORE_ERROR naming it", async () => {
        for (const faultClass of ['Client', 'Server']) {
          await addRule(h, { operations: 'findBySSN', soapFault: faultClass });
          const failure = await soapFailure(clients);
          assert.equal(failure?.response?.status, 500);
          assert.equal(failure?.root?.Envelope?.Body?.Fault?.faultcode, `soapenv:${faultClass}`);
          const body = problem(await h.call(FIND_PATH, FIND_BODY), 502, 'CORE_ERROR');
          assert.deepEqual((body as unknown as { core: unknown }).core, { faultcode: faultClass });
          await admin(h, 'DELETE', '/admin/faults');
        }
      });

      test('a problem rule on the SOAP face is its Fault, with the headers the problem has', async () => {
        await addRule(h, { operations: 'findBySSN', code: 'CORE_UNAVAILABLE' });
        const response = await fetch(`${base}/SymXchange/findby`, {
          method: 'POST',
          headers: {
            'content-type': 'text/xml; charset=utf-8',
            soapaction: `"${FINDBY_NS}/findBySSN"`,
            authorization: `Bearer ${h.token}`,
          },
          body: findBySsnEnvelope,
        });
        const text = await response.text();
        assert.equal(response.status, 500);
        assert.match(text, /<faultcode>soapenv:Server<\/faultcode>/);
        assert.match(text, /<code>CORE_UNAVAILABLE<\/code>/);
        assert.ok(Number(response.headers.get('retry-after')) >= 1);
      });

      test('drop: the SOAP face closes the connection unanswered; the JSON API 503 CORE_UNAVAILABLE', async () => {
        await addRule(h, { operations: 'findBySSN', drop: true });
        const failure = await soapFailure(clients);
        assert.ok(failure && failure.response === undefined, `no answer: ${failure?.message}`);
        const body = problem(await h.call(FIND_PATH, FIND_BODY), 503, 'CORE_UNAVAILABLE');
        assert.match(body.detail, /connection was reset/);
      });

      test('malformed: the SOAP face answers a cut-off envelope or an HTML page; the JSON API 502 CORE_BAD_RESPONSE', async () => {
        const added = await addRule(h, { operations: 'findBySSN', malformed: 'truncated' });
        const failure = await soapFailure(clients);
        assert.ok(failure, 'node-soap cannot read it');
        const raw = await fetch(`${base}/SymXchange/findby`, {
          method: 'POST',
          headers: {
            'content-type': 'text/xml; charset=utf-8',
            soapaction: `"${FINDBY_NS}/findBySSN"`,
            authorization: `Bearer ${h.token}`,
          },
          body: findBySsnEnvelope,
        });
        assert.equal(raw.status, 200);
        assert.match(raw.headers.get('content-type') ?? '', /^text\/xml/);
        assert.match(
          await raw.text(),
          /^<\?xml[^>]*\?><soapenv:Envelope .*<ns:findBySSNResponse [^>]*><Response MessageId="$/,
        );
        problem(await h.call(FIND_PATH, FIND_BODY), 502, 'CORE_BAD_RESPONSE');
        await admin(h, 'DELETE', `/admin/faults/${added.id}`);
        await addRule(h, { operations: 'findBySSN', malformed: 'not-xml' });
        assert.ok(await soapFailure(clients), 'node-soap cannot read an HTML page');
        const body = problem(await h.call(FIND_PATH, FIND_BODY), 502, 'CORE_BAD_RESPONSE');
        assert.match(body.detail, /text\/html, not a SOAP envelope/);
      });

      test('a call a rule fires on is audited with its answer, and its log line names the rule', async () => {
        const added = await addRule(h, { operations: 'findBySSN', code: 'CORE_UNAVAILABLE', times: 1 });
        const response = await h.call(FIND_PATH, FIND_BODY, { 'x-request-id': `rule-audit-${backend.name}` });
        problem(response, 503, 'CORE_UNAVAILABLE');
        await h.app.audit.flush();
        const { rows } = await sql<{ operation: string; status: number; code: string }>`
          select operation, status, code from audit_event where request_id = ${`rule-audit-${backend.name}`}`.execute(
          h.database.db,
        );
        assert.deepEqual(rows, [{ operation: 'P1:findBySSN', status: 503, code: 'CORE_UNAVAILABLE' }]);
        const line = h
          .logs()
          .find((entry) => entry.includes(`rule-audit-${backend.name}`) && entry.includes('"request"'));
        assert.match(line ?? '', new RegExp(`"fault":"rule ${added.id}"`));
      });

      test(
        'on two instances of one database, times: 3 fires on exactly 3 calls among them',
        { skip: !backend.url && 'another instance needs PostgreSQL' },
        async () => {
          const other = await h.anotherInstance();
          const added = await addRule(h, { operations: 'findBySSN', code: 'CORE_UNAVAILABLE', times: 3 });
          const statuses = await Promise.all(
            Array.from({ length: 10 }, (_, i) => (i % 2 ? other : h).call(FIND_PATH, FIND_BODY)),
          );
          assert.equal(statuses.filter((response) => response.statusCode === 503).length, 3);
          assert.equal(statuses.filter((response) => response.statusCode === 200).length, 7);
          assert.equal((await listRules(h)).find((rule) => rule.id === added.id)?.fired, 3);
        },
      );
    });

    describe('with sandbox faults off (the default)', () => {
      let off: App;
      before(async () => {
        off = await appOn(h, { sandboxFaults: false });
      });
      after(() => off.app.close());

      test('the fault routes are 403 SANDBOX_FAULTS_DISABLED, after the token is checked', async () => {
        for (const [method, url, body] of [
          ['POST', '/admin/faults', { operations: '*', latencyMs: 1 }],
          ['GET', '/admin/faults'],
          ['DELETE', '/admin/faults'],
          ['DELETE', '/admin/faults/1'],
        ] as const) {
          problem(await off.admin(method, url, body), 403, 'SANDBOX_FAULTS_DISABLED');
        }
        problem(await off.admin('GET', '/admin/faults', undefined, ''), 401, 'UNAUTHENTICATED');
      });

      test('a rule in the database does nothing', async () => {
        await addRule(h, { operations: '*', code: 'CORE_UNAVAILABLE' });
        assert.equal((await off.call(FIND_PATH, FIND_BODY)).statusCode, 200);
        problem(await h.call(FIND_PATH, FIND_BODY), 503, 'CORE_UNAVAILABLE');
      });
    });

    describe("in gateway mode, a rule's JSON answer is the gateway's answer to the same failure of a real core", () => {
      const TIMEOUT_MS = 500;
      const UNREACHABLE_SYM = 700;
      const lookup = operation('findByHomeUser');
      const LOOKUP_BODY = { HomeBankingUserName: 'member42' };
      const XML = { 'content-type': 'text/xml; charset=utf-8' };
      let upstream: Upstream;
      let gateway: App;

      before(async () => {
        upstream = await startUpstream();
        const config = loadConfig({
          COREGATE_CORE: 'symxchange',
          COREGATE_SYMXCHANGE_URL: upstream.url,
          [`COREGATE_SYMXCHANGE_URL_${UNREACHABLE_SYM}`]: `http://127.0.0.1:${await closedPort()}`,
          COREGATE_SYMXCHANGE_TIMEOUT_MS: String(TIMEOUT_MS),
          COREGATE_SYMXCHANGE_BREAKER_FAILURES: '10000',
        });
        gateway = await appOn(h, { core: config.core, symxchange: config.symxchange, sandboxFaults: true });
      });
      after(async () => {
        await gateway?.app.close();
        await upstream?.close();
      });

      /** What a client reads of an answer: status, media type, Retry-After and body. */
      const seen = (response: Awaited<ReturnType<Harness['call']>>) => ({
        status: response.statusCode,
        type: response.headers['content-type'],
        retryAfter: response.headers['retry-after'],
        body: response.json() as unknown,
      });

      /** The answer with the core failing as `behave` makes it, and the answer with `rule` in force instead. */
      async function compare(rule: Record<string, unknown>, behave: Behaviour, path = operationPath(lookup)) {
        upstream.behave(behave);
        const real = seen(await gateway.call(path, LOOKUP_BODY));
        upstream.behave(() => assert.fail('a rule answers before the core is asked'));
        const added = await gateway.admin('POST', '/admin/faults', { operations: lookup.name, times: 1, ...rule });
        assert.equal(added.statusCode, 201, added.body);
        const simulated = seen(await gateway.call(path, LOOKUP_BODY));
        assert.deepEqual(simulated, real);
        assert.equal(upstream.received.length, 0);
        return real;
      }

      test('CORE_UNAVAILABLE: as a core that refuses connections', async () => {
        const unreachable = operationPath(lookup, UNREACHABLE_SYM);
        const real = await compare({ code: 'CORE_UNAVAILABLE' }, () => assert.fail('not reached'), unreachable);
        assert.equal(real.status, 503);
      });

      test('CORE_TIMEOUT, and latency past the deadline: as a core that does not answer in time', async () => {
        const silent: Behaviour = () => undefined;
        assert.equal((await compare({ code: 'CORE_TIMEOUT' }, silent)).status, 504);
        const started = performance.now();
        await compare({ latencyMs: TIMEOUT_MS + 2_000 }, silent);
        assert.ok(performance.now() - started < TIMEOUT_MS * 2 + 1_500, 'the rule gives up at the deadline');
      });

      test('drop: as a core that closes the connection without an answer', async () => {
        const real = await compare({ drop: true }, (_received, response) => response.socket?.destroy());
        assert.equal(real.status, 503);
      });

      test('malformed: as a core that answers a cut-off envelope, or an HTML page', async () => {
        const truncated =
          '<?xml version="1.0" encoding="UTF-8"?><soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/"><soapenv:Body>';
        const cut = await compare({ malformed: 'truncated' }, (_r, response) =>
          response.writeHead(200, XML).end(truncated),
        );
        assert.equal(cut.status, 502);
        const page = await compare({ malformed: 'not-xml' }, (_r, response) =>
          response
            .writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
            .end('<html><body>Back soon</body></html>'),
        );
        assert.equal(page.status, 502);
      });

      test('soapFault: as a core that answers a Fault of that class', async () => {
        for (const faultClass of ['Client', 'Server']) {
          const fault =
            '<S:Envelope xmlns:S="http://schemas.xmlsoap.org/soap/envelope/"><S:Body><S:Fault>' +
            `<faultcode>S:${faultClass}</faultcode><faultstring>Refused</faultstring></S:Fault></S:Body></S:Envelope>`;
          const real = await compare({ soapFault: faultClass }, (_r, response) =>
            response.writeHead(500, XML).end(fault),
          );
          assert.equal(real.status, 502);
        }
      });
    });
  });
}

describe('coregate serve --workers 2 with COREGATE_SANDBOX_FAULTS=on', () => {
  const adminUrl = process.env.TEST_DATABASE_URL;
  const database = `coregate_fault_rules_${process.pid}`;
  const databaseUrl = adminUrl ? Object.assign(new URL(adminUrl), { pathname: `/${database}` }).href : '';
  const dataDir = mkdtempSync(join(tmpdir(), 'coregate-fault-rules-'));
  let served: Served | undefined;
  let token = '';

  /** A database with a token and the admin password, and the server on it. */
  async function startSandbox(): Promise<{ served: Served; token: string }> {
    await adminStatement(adminUrl!, `create database ${database}`);
    const opened = await openDatabase({ url: databaseUrl });
    let created: string;
    try {
      await migrate(opened.db, opened.kind);
      await settings.set(opened.db, SETTING.adminPasswordHash, await hashPassword(ADMIN_PASSWORD));
      created = (await tokens.create(opened.db, 'fault-rules', ['findby', 'admin'])).token;
    } finally {
      await opened.close();
    }
    const started = await serve({
      args: ['--workers', '2'],
      env: {
        DATABASE_URL: databaseUrl,
        COREGATE_DATA_DIR: dataDir,
        PORT: '0',
        LOG_LEVEL: 'info',
        COREGATE_SANDBOX_FAULTS: 'on',
      },
      ready: /2 worker processes/,
    });
    return { served: started, token: created };
  }
  before(async () => {
    if (adminUrl) ({ served, token } = await startSandbox());
  });
  after(async () => {
    if (served) await stop(served.child);
    if (adminUrl) await adminStatement(adminUrl, `drop database if exists ${database} with (force)`);
    rmSync(dataDir, { recursive: true, force: true });
  });

  /** A plain fetch on a connection of its own (the cluster hands each new connection to the next worker). */
  const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
    fetch(`${served!.baseUrl}${path}`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${token}`,
        'content-type': 'application/json',
        connection: 'close',
        ...headers,
      },
      body: JSON.stringify(body),
    });

  /** The worker processes whose request lines name `rule`. */
  const workersFiring = (rule: number) =>
    new Set(
      served!
        .output()
        .split('\n')
        .filter((line) => line.includes('"msg":"request"') && line.includes(`"fault":"rule ${rule}"`))
        .map((line) => (JSON.parse(line) as { pid: number }).pid),
    );

  test(
    'a rule is seen by unmodified clients on both workers: times: 3 fires exactly 3 times among them',
    { skip: !adminUrl && 'TEST_DATABASE_URL is not set' },
    async () => {
      const added = await post('/admin/faults', { operations: 'findBySSN', code: 'CORE_UNAVAILABLE', times: 3 });
      assert.equal(added.status, 201, await added.clone().text());
      const rule = ((await added.json()) as { id: number }).id;
      // Every worker's copy of the rule set is at most a second old.
      await sleep(1_100);
      const statuses: number[] = [];
      for (let i = 0; i < 8; i += 1) {
        const response = await post(FIND_PATH, { Credentials: adminCredentials, ...FIND_BODY });
        statuses.push(response.status);
        if (response.status === 503) {
          assert.deepEqual(
            {
              code: ((await response.json()) as { code: string }).code,
              retryAfter: response.headers.get('retry-after'),
            },
            { code: 'CORE_UNAVAILABLE', retryAfter: '10' },
          );
        } else await response.arrayBuffer();
      }
      assert.deepEqual(statuses, [503, 503, 503, 200, 200, 200, 200, 200]);
      assert.equal(workersFiring(rule).size, 2, 'both workers fired it');
      const listed = await fetch(`${served!.baseUrl}/admin/faults`, {
        headers: { authorization: `Bearer ${token}` },
      });
      const { rules } = (await listed.json()) as { rules: { id: number; fired: number; remaining: number }[] };
      assert.deepEqual(
        rules.map(({ id, fired, remaining }) => ({ id, fired, remaining })),
        [{ id: rule, fired: 3, remaining: 0 }],
      );

      // node-soap, bound to the served WSDL, meets a SOAP rule of the next 2 calls.
      const soapRule = await post('/admin/faults', {
        operations: 'findBy*',
        face: 'soap',
        soapFault: 'Client',
        times: 2,
      });
      assert.equal(soapRule.status, 201);
      await sleep(1_100);
      const clients = await soapClients(served!.baseUrl, [findBySSN], { Authorization: `Bearer ${token}` });
      const faults: (string | undefined)[] = [];
      for (let i = 0; i < 3; i += 1) faults.push((await soapFailure(clients))?.root?.Envelope?.Body?.Fault?.faultcode);
      assert.deepEqual(faults, ['soapenv:Client', 'soapenv:Client', undefined]);
      const json = await post(FIND_PATH, { Credentials: adminCredentials, ...FIND_BODY });
      assert.equal(json.status, 200, 'a SOAP rule leaves the JSON API alone');
    },
  );

  test(
    'coregate faults add, list and clear work on the running server, and list on its database alike',
    { skip: !adminUrl && 'TEST_DATABASE_URL is not set' },
    async () => {
      const remote = { COREGATE_URL: served!.baseUrl, COREGATE_ADMIN_TOKEN: token, DATABASE_URL: '' };
      const added = await coregate(
        remote,
        'faults',
        'add',
        '--operations',
        'findBy*',
        '--code',
        'CORE_TIMEOUT',
        '--times',
        '2',
        '--for',
        '10m',
      );
      assert.equal(added.code, 0, added.stderr);
      assert.match(added.stderr, new RegExp(`via the admin API of the coregate at ${served!.baseUrl}`));
      const id = Number(/Added fault rule (\d+)/.exec(added.stdout)?.[1]);
      const line = new RegExp(
        `^${id}\tfindBy\\*\tboth\tCORE_TIMEOUT\tthe next 2 calls \\(2 left\\), fired 0\tuntil \\S+Z$`,
        'm',
      );
      assert.match(added.stdout, line);
      const [listed, onDatabase, refused] = await Promise.all([
        coregate(remote, 'faults', 'list'),
        // The store's own secret: the data dir's secret.key it was first served with.
        coregate(
          { DATABASE_URL: databaseUrl, COREGATE_DATA_DIR: dataDir, COREGATE_SANDBOX_FAULTS: 'on' },
          'faults',
          'list',
        ),
        coregate(remote, 'faults', 'add', '--operations', 'findbyssn', '--drop'),
      ]);
      assert.equal(listed.code, 0, listed.stderr);
      assert.match(listed.stdout, line);
      assert.equal(onDatabase.stdout, listed.stdout, 'the same output on the database itself');
      assert.equal(refused.code, 2, 'bad input is a usage error');
      assert.match(refused.stderr, /names no operation/);
      const cleared = await coregate(remote, 'faults', 'clear');
      assert.match(cleared.stdout, /^Removed \d+ fault rules\n$/);
    },
  );
});

/** Runs the command line from source with `env` added; resolves with its exit code and output. */
function coregate(env: NodeJS.ProcessEnv, ...args: string[]) {
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
    execFile(process.execPath, [...CLI, ...args], { env: { ...process.env, ...env } }, (error, stdout, stderr) =>
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : null) : 0, stdout, stderr }),
    );
  });
}
