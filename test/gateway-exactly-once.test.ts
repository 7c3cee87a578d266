/**
 * A keyed update through the gateway is applied by the core exactly once, whatever sits between them, on both
 * databases. A proxy in front of coregate's own SOAP face (the core) forwards each update, the core applies it,
 * and the proxy then fails the exchange as nginx or an F5 can: a 502 or 503 page, an HTML page, a reset before
 * or in the middle of the answer, a Server fault saying it is unavailable. The gateway cannot know the update
 * was not applied, so it says it may have been, keeps the Idempotency-Key with that answer, and a retry with the
 * key is told the same again without reaching the core. Only what never left is "not applied".
 */
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import { loadConfig } from '../src/config.js';
import { OPERATIONS } from '../src/operations/index.js';
import { operationPath } from '../src/operations/types.js';
import { demoExamples, type ShareTarget } from '../src/seed/examples.js';
import { seedDatabase } from '../src/seed/load.js';
import { BACKENDS, createHarness, type Harness } from './support/harness.js';
import { closedPort } from './support/upstream.js';

const ACCOUNTS = 50;
const SEED = 627;
const update = (family: 'P1' | 'P2') =>
  OPERATIONS.find((op) => op.name === 'updateShareHoldByID' && op.family === family)!;

/** How the proxy ends an exchange after the core has answered it (the update applied). */
type Failing = (response: ServerResponse, answer: { status: number; body: string }) => void;

const SERVER_FAULT =
  '<?xml version="1.0"?><S:Envelope xmlns:S="http://schemas.xmlsoap.org/soap/envelope/"><S:Body><S:Fault>' +
  '<faultcode>S:Server</faultcode><faultstring>Service temporarily unavailable, try again later</faultstring>' +
  '</S:Fault></S:Body></S:Envelope>';

const FAILURES: Readonly<Record<string, Failing>> = {
  'a 502 page': (response) => response.writeHead(502, { 'content-type': 'text/html' }).end('<h1>Bad Gateway</h1>'),
  'a 503 page with Retry-After': (response) =>
    response.writeHead(503, { 'content-type': 'text/html', 'retry-after': '2' }).end('<h1>Unavailable</h1>'),
  'an HTML page with a 200': (response) => response.writeHead(200, { 'content-type': 'text/html' }).end('<p>ok</p>'),
  'a reset before any answer': (response) => response.socket?.destroy(),
  'a reset in the middle of the answer': (response, answer) => {
    response.writeHead(200, {
      'content-type': 'text/xml; charset=utf-8',
      'content-length': String(answer.body.length),
    });
    response.write(answer.body.slice(0, Math.floor(answer.body.length / 2)));
    setImmediate(() => response.socket?.destroy());
  },
  'a Server fault saying the core is unavailable for now': (response) =>
    response.writeHead(500, { 'content-type': 'text/xml; charset=utf-8' }).end(SERVER_FAULT),
};

/** A reverse proxy that forwards every call to `target` and then ends it as `failing` says (or passes the answer on). */
async function startProxy(target: string) {
  let failing: Failing | undefined;
  let forwarded = 0;
  const server: Server = createServer((request: IncomingMessage, response: ServerResponse) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', async () => {
      forwarded += 1;
      const answer = await fetch(`${target}${request.url}`, {
        method: request.method,
        headers: {
          'content-type': String(request.headers['content-type']),
          soapaction: String(request.headers.soapaction ?? ''),
        },
        body: request.method === 'POST' ? Buffer.concat(chunks) : undefined,
      });
      const body = await answer.text();
      if (failing) return failing(response, { status: answer.status, body });
      response.writeHead(answer.status, { 'content-type': answer.headers.get('content-type') ?? 'text/xml' }).end(body);
    });
  });
  server.on('clientError', (_error, socket) => socket.destroy());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
    /** Calls forwarded to the core since the last `failWith`. */
    forwarded: () => forwarded,
    failWith(next: Failing | undefined) {
      failing = next;
      forwarded = 0;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

for (const backend of BACKENDS) {
  describe(`a keyed update through a failing proxy is applied once, on ${backend.name}`, () => {
    let core: Harness;
    let gateway: Harness;
    let proxy: Awaited<ReturnType<typeof startProxy>>;
    let hold: ShareTarget;
    const refusingSym = 701;

    before(async () => {
      core = await createHarness(backend, { soapAuth: 'credentials' });
      await seedDatabase(core.database, core.secrets, { accounts: ACCOUNTS, seed: SEED });
      hold = demoExamples(SEED, ACCOUNTS).shareTargets.find((t) => t.record === 'ShareHold')!;
      proxy = await startProxy(await core.app.listen({ port: 0, host: '127.0.0.1' }));
      const config = loadConfig({
        COREGATE_CORE: 'symxchange',
        COREGATE_SYMXCHANGE_URL: proxy.url,
        [`COREGATE_SYMXCHANGE_URL_${refusingSym}`]: `http://127.0.0.1:${await closedPort()}`,
        COREGATE_SYMXCHANGE_BREAKER_FAILURES: '10000',
      });
      gateway = await createHarness(backend, { core: config.core, symxchange: config.symxchange });
    });
    after(async () => {
      await gateway?.close();
      await proxy?.close();
      await core?.close();
    });

    /** How many times the core's store applied an update that wrote `value`. */
    const applied = async (value: string) => {
      const { rows } = await sql<{ n: number }>`select count(*)::int as n from account_fm_history
        where new_character = ${value}`.execute(core.database.db);
      return rows[0]!.n;
    };

    const bodyWriting = (family: 'P1' | 'P2', value: string) => ({
      AccountNumber: hold.accountNumber,
      ShareId: hold.shareId,
      ShareHoldLocator: hold.locator,
      [family === 'P1' ? 'ShareHoldFields' : 'ShareHoldUpdatableFields']: { Reference3: value },
    });

    let case_ = 0;
    for (const [name, failing] of Object.entries(FAILURES)) {
      for (const family of ['P1', 'P2'] as const) {
        test(`${name} (${family}): the caller is told it may have been applied, and a retry with the key is not sent`, async () => {
          case_ += 1;
          const value = `EO${case_} ${backend.name}`;
          const path = operationPath(update(family));
          const key = { 'idempotency-key': `exactly-once-${backend.name}-${case_}` };
          proxy.failWith(failing);

          const first = await gateway.call(path, bodyWriting(family, value), key);
          assert.ok([502, 503, 504].includes(first.statusCode), first.body);
          const problem = first.json();
          assert.match(problem.detail, /may have been applied/);
          assert.doesNotMatch(problem.detail, /not applied/);
          assert.equal(
            first.headers['retry-after'],
            undefined,
            'a write that may have landed is not retried on a timer',
          );
          assert.equal(proxy.forwarded(), 1);
          assert.equal(await applied(value), 1, 'the core applied the update');

          // The proxy is healthy again: a retry with the key still does not reach the core.
          proxy.failWith(undefined);
          const retry = await gateway.call(path, bodyWriting(family, value), key);
          assert.equal(retry.statusCode, first.statusCode, retry.body);
          assert.equal(retry.headers['idempotent-replayed'], 'true');
          assert.deepEqual(
            { code: retry.json().code, detail: retry.json().detail },
            { code: problem.code, detail: problem.detail },
          );
          assert.equal(proxy.forwarded(), 0, 'the retry was answered from the key, not sent');
          assert.equal(await applied(value), 1, 'the core applied the update exactly once');
        });
      }
    }

    test('an update that never left (the connection refused) is not applied, and a retry with its key is sent afresh', async () => {
      const value = `EO-refused ${backend.name}`;
      const key = { 'idempotency-key': `exactly-once-refused-${backend.name}` };
      const refused = await gateway.call(operationPath(update('P2'), refusingSym), bodyWriting('P2', value), key);
      assert.equal(refused.statusCode, 503, refused.body);
      assert.match(refused.json().detail, /never sent, so it was not applied/);
      assert.match(String(refused.headers['retry-after']), /^[0-9]+$/);
      // The key was freed: the same key at a core that answers applies the update, once.
      proxy.failWith(undefined);
      const sent = await gateway.call(operationPath(update('P2')), bodyWriting('P2', value), key);
      assert.equal(sent.statusCode, 200, sent.body);
      assert.equal(proxy.forwarded(), 1);
      assert.equal(await applied(value), 1);
    });

    test("a Client fault is the core's refusal: the update was not applied, and the key is freed", async () => {
      const key = { 'idempotency-key': `exactly-once-client-${backend.name}` };
      const path = operationPath(update('P2'));
      const refused = await gateway.call(
        path,
        {
          ...bodyWriting('P2', `EO-client ${backend.name}`),
          Credentials: { AdministrativeCredentials: { Password: 'not-the-core-pwd' } },
        },
        key,
      );
      assert.equal(refused.statusCode, 403, refused.body);
      assert.doesNotMatch(refused.json().detail, /may have been applied/);
      // The key was freed: the same request with the right credentials runs afresh.
      const sent = await gateway.call(path, bodyWriting('P2', `EO-client ${backend.name}`), key);
      assert.equal(sent.statusCode, 200, sent.body);
      assert.equal(await applied(`EO-client ${backend.name}`), 1);
    });
  });
}
