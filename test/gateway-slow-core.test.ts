/**
 * A slow core does not take the gateway's database with it. A keyed update in gateway mode commits its
 * Idempotency-Key's reservation, calls the core with no transaction open, and commits the answer with its
 * audit event afterwards: 64 keyed updates waiting on a core that takes seconds per update hold no
 * connection of the gateway's pool (one connection, on the embedded database), so reads keep answering
 * meanwhile. A retry while the first attempt is still at the core is told so (409); a call that never
 * reached the core frees its key; one sent and unanswered, or whose holder died, keeps "may have been
 * applied" as its key's answer, so that no retry applies it twice.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import { loadConfig } from '../src/config.js';
import { OPERATIONS } from '../src/operations/index.js';
import { operationPath } from '../src/operations/types.js';
import { demoExamples, type DemoExamples } from '../src/seed/examples.js';
import { seedDatabase } from '../src/seed/load.js';
import { BACKENDS, createHarness, type Harness } from './support/harness.js';
import { forwardTo, startUpstream, type Upstream } from './support/upstream.js';

const ACCOUNTS = 50;
const SEED = 627;
const CONCURRENT_UPDATES = 64;
/** How long the core takes over each update (reads pass at once). */
const UPDATE_DELAY_MS = 3000;
const READS = 20;

const update = OPERATIONS.find((op) => op.name === 'updateShareHoldByID' && op.family === 'P2')!;
const lookup = OPERATIONS.find((op) => op.name === 'findBySSN' && op.family === 'P1')!;

for (const backend of BACKENDS) {
  describe(`a gateway in front of a slow core, on ${backend.name}`, () => {
    let core: Harness;
    let proxy: Upstream;
    let gateway: Harness;
    let examples: DemoExamples;
    let coreUrl: string;
    /** Whether the core refuses the next update with a Client fault (once). */
    let failNextUpdate = false;
    /** While set, updates that reach the core wait for it as well as for UPDATE_DELAY_MS. */
    let updatesHeld: Promise<void> | undefined;
    let updatesAtCore = 0;

    before(async () => {
      core = await createHarness(backend, { soapAuth: 'credentials' });
      await seedDatabase(core.database, core.secrets, { accounts: ACCOUNTS, seed: SEED });
      examples = demoExamples(SEED, ACCOUNTS);
      coreUrl = await core.app.listen({ port: 0, host: '127.0.0.1' });
      // The core, slowed down: an update waits UPDATE_DELAY_MS before it reaches the store's SOAP face.
      proxy = await startUpstream();
      proxy.behave((received, response) => {
        const isUpdate = /update/i.test(String(received.headers.soapaction));
        if (isUpdate && failNextUpdate) {
          failNextUpdate = false;
          response
            .writeHead(500, { 'content-type': 'text/xml; charset=utf-8' })
            .end(
              '<S:Envelope xmlns:S="http://schemas.xmlsoap.org/soap/envelope/"><S:Body><S:Fault>' +
                '<faultcode>S:Client</faultcode><faultstring>Record is locked</faultstring></S:Fault></S:Body></S:Envelope>',
            );
          return;
        }
        if (isUpdate) updatesAtCore += 1;
        const held = isUpdate ? updatesHeld : undefined;
        setTimeout(
          () => {
            void Promise.resolve(held)
              .then(() => forwardTo(coreUrl, received))
              .then(async (answer) => {
                response
                  .writeHead(answer.status, { 'content-type': answer.headers.get('content-type') ?? 'text/xml' })
                  .end(await answer.text());
              });
          },
          isUpdate ? UPDATE_DELAY_MS : 0,
        );
      });
      const settings = loadConfig({
        COREGATE_CORE: 'symxchange',
        COREGATE_SYMXCHANGE_URL: proxy.url,
        COREGATE_SYMXCHANGE_TIMEOUT_MS: '60000',
        COREGATE_SYMXCHANGE_CONNECTIONS: String(CONCURRENT_UPDATES + 8),
      });
      gateway = await createHarness(backend, { core: settings.core, symxchange: settings.symxchange });
    });
    after(async () => {
      await gateway?.close();
      await proxy?.close();
      await core?.close();
    });

    const hold = () => examples.shareTargets.find((target) => target.record === 'ShareHold')!;
    const updateBody = (reference: string) => ({
      AccountNumber: hold().accountNumber,
      ShareId: hold().shareId,
      ShareHoldLocator: hold().locator,
      ShareHoldUpdatableFields: { Reference2: reference },
    });
    const keyed = (key: string, reference: string) =>
      gateway.call(operationPath(update), updateBody(reference), { 'idempotency-key': key });
    /** How many updates with this reference reached the core's store. */
    const appliedAtCore = async (reference: string) => {
      const { rows } = await sql<{ n: number }>`select count(*)::int as n from account_fm_history
        where new_character = ${reference}`.execute(core.database.db);
      return rows[0]!.n;
    };

    test(`${CONCURRENT_UPDATES} keyed updates waiting on the core leave the database to the reads`, async () => {
      // The core holds every update until the reads are done: were an update holding a connection of the
      // gateway's pool while at the core, the reads would wait for it, and this test would never end.
      let release = () => {};
      updatesHeld = new Promise((resolve) => (release = resolve));
      updatesAtCore = 0;
      const updates = Array.from({ length: CONCURRENT_UPDATES }, (_, i) =>
        keyed(`slow-${backend.name}-${i}`, `SLOW ${i}`),
      );
      await waitFor(async () => updatesAtCore === CONCURRENT_UPDATES, 30_000);
      const allAtCore = new Date();
      try {
        // While every update waits on the core, reads (answered by the core at once) and /ready (the
        // gateway's database) answer, one after another.
        for (let i = 0; i < READS; i += 1) {
          const [read, ready] = await Promise.all([
            gateway.call(operationPath(lookup), { SSN: examples.sharedSsn.ssn }),
            gateway.app.inject({ method: 'GET', url: '/ready' }),
          ]);
          assert.equal(read.statusCode, 200, read.body);
          assert.equal(ready.statusCode, 200, ready.body);
        }
        if (backend.name === 'postgres') {
          // No connection of the gateway's sits in a transaction opened before every update reached the core
          // (the audit trail's own short transactions since then, and other suites' connections, do not count).
          const { rows } = await sql<{ n: number }>`select count(*)::int as n from pg_stat_activity
            where datname = current_database() and application_name = 'coregate ' || current_schema()
              and state like 'idle in transaction%' and xact_start <= ${allAtCore}`.execute(gateway.database.db);
          assert.equal(rows[0]!.n, 0, 'connections idle in a transaction');
        }
      } finally {
        // Released whatever happened, so that a failure here does not hold the next tests' updates.
        release();
        updatesHeld = undefined;
      }
      const answers = await Promise.all(updates);
      for (const answer of answers) assert.equal(answer.statusCode, 200, answer.body);
      for (let i = 0; i < CONCURRENT_UPDATES; i += 1) assert.equal(await appliedAtCore(`SLOW ${i}`), 1, `SLOW ${i}`);

      // Each retried afterwards is the first answer again, and the core is not asked again.
      proxy.received.length = 0;
      const retried = await keyed(`slow-${backend.name}-7`, 'SLOW 7');
      assert.equal(retried.headers['idempotent-replayed'], 'true');
      assert.deepEqual(retried.json(), answers[7]!.json());
      assert.equal(proxy.received.length, 0, 'a replay does not reach the core');
    });

    test('a retry while the first attempt is at the core is 409 IDEMPOTENCY_KEY_IN_PROGRESS, then the first answer', async () => {
      const key = `in-progress-${backend.name}`;
      const first = keyed(key, 'FIRST TRY');
      // The first attempt's reservation is committed before its call to the core.
      await waitFor(async () => (await pendingKeys(gateway, key)) === 1);
      const meanwhile = await keyed(key, 'FIRST TRY');
      assert.equal(meanwhile.statusCode, 409, meanwhile.body);
      assert.equal(meanwhile.json().code, 'IDEMPOTENCY_KEY_IN_PROGRESS');
      assert.equal(meanwhile.headers['retry-after'], '1');
      assert.equal((await first).statusCode, 200);
      const after = await keyed(key, 'FIRST TRY');
      assert.equal(after.headers['idempotent-replayed'], 'true');
      assert.equal(await appliedAtCore('FIRST TRY'), 1);
    });

    test('a call the core refuses (a Client fault) frees its key: the retry runs afresh', async () => {
      const key = `failed-${backend.name}`;
      failNextUpdate = true;
      const failed = await keyed(key, 'AFTER FAILURE');
      assert.ok(failed.statusCode >= 400, failed.body);
      assert.doesNotMatch(failed.json().detail, /may have been applied/);
      assert.equal(await pendingKeys(gateway, key), 0, 'no reservation left behind');
      const retried = await keyed(key, 'AFTER FAILURE');
      assert.equal(retried.statusCode, 200, retried.body);
      assert.equal(retried.headers['idempotent-replayed'], undefined);
      assert.equal(await appliedAtCore('AFTER FAILURE'), 1);
    });

    test('a reservation whose holder died mid-call is settled as "may have been applied", never sent again', async () => {
      const key = `abandoned-${backend.name}`;
      // A pending reservation of this request, as a process killed during its core call leaves it: its
      // hash is this request's (taken from a probe with the same body), so only its age decides.
      const body = updateBody('TAKEN OVER');
      await keyed(`${key}-probe`, 'TAKEN OVER');
      const { rows: probe } = await sql<{ request_hash: string }>`select request_hash from idempotency_key
        where key = ${`${key}-probe`}`.execute(gateway.database.db);
      assert.equal(probe.length, 1);
      await sql`insert into idempotency_key (token_name, key, request_hash, created_at)
        values ('test', ${key}, ${probe[0]!.request_hash}, now() - interval '1 hour')`.execute(gateway.database.db);
      proxy.received.length = 0;
      for (const attempt of ['first', 'again']) {
        const answer = await gateway.call(operationPath(update), body, { 'idempotency-key': key });
        assert.equal(answer.statusCode, 504, `${attempt}: ${answer.body}`);
        assert.equal(answer.json().code, 'CORE_TIMEOUT');
        assert.match(answer.json().detail, /may have been applied: read the record/);
      }
      assert.equal(proxy.received.length, 0, 'the update is not sent again');
      assert.equal(await appliedAtCore('TAKEN OVER'), 1, 'the probe only');
      // A fresh pending reservation is not taken over.
      await sql`insert into idempotency_key (token_name, key, request_hash)
        values ('test', ${`${key}-fresh`}, ${probe[0]!.request_hash})`.execute(gateway.database.db);
      const fresh = await gateway.call(operationPath(update), body, { 'idempotency-key': `${key}-fresh` });
      assert.equal(fresh.statusCode, 409, fresh.body);
    });

    test('an update sent and unanswered keeps its "may have been applied" answer: a retry is not sent again', async () => {
      const key = `unanswered-${backend.name}`;
      // The core takes the update (after UPDATE_DELAY_MS) but the gateway gives up first.
      const impatient = await createHarness(backend, {
        ...loadConfig({
          COREGATE_CORE: 'symxchange',
          COREGATE_SYMXCHANGE_URL: proxy.url,
          COREGATE_SYMXCHANGE_TIMEOUT_MS: String(UPDATE_DELAY_MS / 3),
        }),
      });
      try {
        const call = () => impatient.call(operationPath(update), updateBody('UNANSWERED'), { 'idempotency-key': key });
        const first = await call();
        assert.equal(first.statusCode, 504, first.body);
        assert.match(first.json().detail, /may have been applied/);
        await new Promise((resolve) => setTimeout(resolve, UPDATE_DELAY_MS));
        proxy.received.length = 0;
        const retried = await call();
        assert.equal(retried.statusCode, 504, retried.body);
        assert.equal(retried.headers['idempotent-replayed'], 'true');
        assert.equal(proxy.received.length, 0, 'the retry is not sent');
        assert.equal(await appliedAtCore('UNANSWERED'), 1, 'applied once, by the first attempt');
      } finally {
        await impatient.close();
      }
    });
  });
}

/** Pending reservations (no answer yet) of a key. */
async function pendingKeys(gateway: Harness, key: string): Promise<number> {
  const { rows } = await sql<{ n: number }>`select count(*)::int as n from idempotency_key
    where key = ${key} and status is null`.execute(gateway.database.db);
  return rows[0]!.n;
}

async function waitFor(condition: () => Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
