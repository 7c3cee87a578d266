/**
 * A gateway whose own database goes away while a keyed update is at the core. The caller is told what the
 * call met, not that the database failed; the key's release or answer is kept and written as soon as the
 * database is back, so a retry runs afresh (the call failed), replays the answer (the core applied it), or
 * is told again that the update may have been applied (the core never answered) — never sent twice, and
 * never refused for the key's whole takeover time. The gateway's database is a real cluster the test
 * creates and stops at the moment the core has the call (initdb on a free port); the core is a second
 * coregate, reached through a real HTTP server that holds the call while the cluster stops.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import type { LightMyRequestResponse } from 'fastify';
import { loadConfig } from '../src/config.js';
import { OPERATIONS } from '../src/operations/index.js';
import { operationPath } from '../src/operations/types.js';
import { demoExamples, type DemoExamples } from '../src/seed/examples.js';
import { seedDatabase } from '../src/seed/load.js';
import { createHarness, type Harness } from './support/harness.js';
import { createPgCluster, postgresBinDir, type PgCluster } from './support/pg-cluster.js';
import { forwardTo, startUpstream, type Upstream } from './support/upstream.js';

const ACCOUNTS = 50;
const SEED = 627;
/** The gateway's deadline for a core call; a key is taken over after twice this. */
const CORE_TIMEOUT_MS = 3_000;
/** How soon after the database is back a kept change to a key must be written. */
const WRITTEN_WITHIN_MS = 4_000;

const update = OPERATIONS.find((op) => op.name === 'updateShareHoldByID' && op.family === 'P2')!;
const noServer = postgresBinDir() === undefined && 'PostgreSQL server binaries are not installed';

/** What the core does with the next update, while the gateway's database stops. */
type AtTheCore = 'refuses it' | 'applies it' | 'applies it and never answers';

describe("a keyed update at the core while the gateway's database goes away", { skip: noServer }, () => {
  let cluster: PgCluster;
  let core: Harness;
  let proxy: Upstream;
  let gateway: Harness;
  let examples: DemoExamples;
  let next: AtTheCore | undefined;

  before(async () => {
    cluster = await createPgCluster();
    core = await createHarness({ name: 'pglite' }, { soapAuth: 'credentials' });
    await seedDatabase(core.database, core.secrets, { accounts: ACCOUNTS, seed: SEED });
    examples = demoExamples(SEED, ACCOUNTS);
    const coreUrl = await core.app.listen({ port: 0, host: '127.0.0.1' });
    proxy = await startUpstream();
    proxy.behave((received, response) => {
      const forward = () => forwardTo(coreUrl, received);
      const answer = async () => {
        const answered = await forward();
        response
          .writeHead(answered.status, { 'content-type': answered.headers.get('content-type') ?? 'text/xml' })
          .end(await answered.text());
      };
      const atTheCore = /update/i.test(String(received.headers.soapaction)) ? next : undefined;
      next = undefined;
      if (atTheCore === undefined) return void answer();
      // The call has reached the core: the gateway's database goes away before the answer is back.
      cluster.stop();
      // The core's own refusal, a Client fault: the update was not applied.
      if (atTheCore === 'refuses it')
        response
          .writeHead(500, { 'content-type': 'text/xml; charset=utf-8' })
          .end(
            '<S:Envelope xmlns:S="http://schemas.xmlsoap.org/soap/envelope/"><S:Body><S:Fault>' +
              '<faultcode>S:Client</faultcode><faultstring>Record is locked</faultstring></S:Fault></S:Body></S:Envelope>',
          );
      else if (atTheCore === 'applies it') void answer();
      else void forward();
    });
    const settings = loadConfig({
      COREGATE_CORE: 'symxchange',
      COREGATE_SYMXCHANGE_URL: proxy.url,
      COREGATE_SYMXCHANGE_TIMEOUT_MS: String(CORE_TIMEOUT_MS),
    });
    gateway = await createHarness({ name: 'postgres', url: cluster.url }, settings);
  });
  after(async () => {
    await gateway?.close();
    await proxy?.close();
    await core?.close();
    cluster?.remove();
  });

  const hold = () => examples.shareTargets.find((target) => target.record === 'ShareHold')!;
  const keyed = (key: string, reference: string) =>
    gateway.call(
      operationPath(update),
      {
        AccountNumber: hold().accountNumber,
        ShareId: hold().shareId,
        ShareHoldLocator: hold().locator,
        ShareHoldUpdatableFields: { Reference2: reference },
      },
      { 'idempotency-key': key },
    );
  const appliedAtCore = async (reference: string) => {
    const { rows } = await sql<{ n: number }>`select count(*)::int as n from account_fm_history
      where new_character = ${reference}`.execute(core.database.db);
    return rows[0]!.n;
  };
  const keyRow = async (key: string) => {
    const { rows } = await sql<{ status: number | null }>`select status from idempotency_key
      where key = ${key}`.execute(gateway.database.db);
    return rows[0];
  };
  /** Starts the cluster again and waits, within the bound, until the key's row reads as `done` says. */
  const restartAndWaitFor = async (what: string, done: () => Promise<boolean>) => {
    cluster.start();
    const back = Date.now();
    for (;;) {
      try {
        if (await done()) return Date.now() - back;
      } catch {
        // the pool has not reconnected yet
      }
      assert.ok(
        Date.now() - back < WRITTEN_WITHIN_MS,
        `${what} within ${WRITTEN_WITHIN_MS} ms of the database's return`,
      );
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  };
  const problem = (answer: LightMyRequestResponse) => answer.json() as { code: string; detail: string };
  /** A retry with the key gets its first answer again (`status`), without reaching the core: applied once. */
  const replayedWithoutResending = async (key: string, reference: string, status: number) => {
    proxy.received.length = 0;
    const retried = await keyed(key, reference);
    assert.equal(retried.statusCode, status, retried.body);
    assert.equal(retried.headers['idempotent-replayed'], 'true');
    assert.equal(proxy.received.length, 0, 'not sent again');
    assert.equal(await appliedAtCore(reference), 1);
    return retried;
  };

  test("the core refuses it: the caller gets the core's answer, and the key is freed once the database is back", async () => {
    next = 'refuses it';
    const failed = await keyed('refused', 'REFUSED THEN APPLIED');
    assert.equal(failed.statusCode, 502, failed.body);
    assert.equal(problem(failed).code, 'CORE_ERROR', 'what the call met, not the database');
    await restartAndWaitFor('the key released', async () => (await keyRow('refused')) === undefined);
    proxy.received.length = 0;
    const retried = await keyed('refused', 'REFUSED THEN APPLIED');
    assert.equal(retried.statusCode, 200, retried.body);
    assert.equal(retried.headers['idempotent-replayed'], undefined, 'run afresh');
    assert.equal(proxy.received.length, 1);
    assert.equal(await appliedAtCore('REFUSED THEN APPLIED'), 1);
  });

  test('the core applies it: the caller is told to retry, and the retry with the key replays the answer', async () => {
    next = 'applies it';
    const first = await keyed('applied', 'APPLIED WHILE AWAY');
    assert.equal(first.statusCode, 503, first.body);
    assert.equal(problem(first).code, 'UNAVAILABLE');
    assert.match(problem(first).detail, /^The core applied the update.*retry with the same Idempotency-Key/);
    assert.ok(first.headers['retry-after'], 'Retry-After');
    const meanwhile = await keyed('applied', 'APPLIED WHILE AWAY');
    assert.equal(meanwhile.statusCode, 503, 'the database is still away');
    await restartAndWaitFor('the key answered', async () => (await keyRow('applied'))?.status === 200);
    const retried = await replayedWithoutResending('applied', 'APPLIED WHILE AWAY', 200);
    // The call is audited as it was answered, with what the core did; the replay that acknowledged it, as 200.
    await gateway.app.audit.flush();
    const events = async (requestId: unknown) =>
      (
        await sql<{
          status: number;
          code: string | null;
          core_outcome: string | null;
        }>`select status, code, core_outcome
          from audit_event where request_id = ${String(requestId)}`.execute(gateway.database.db)
      ).rows;
    assert.deepEqual(await events(first.headers['x-request-id']), [
      { status: 503, code: 'UNAVAILABLE', core_outcome: 'ok' },
    ]);
    assert.deepEqual(await events(retried.headers['x-request-id']), [{ status: 200, code: null, core_outcome: null }]);
  });

  test('the core never answers: "may have been applied" is the key\'s answer once the database is back, and no retry sends it', async () => {
    next = 'applies it and never answers';
    const first = await keyed('unanswered', 'UNANSWERED WHILE AWAY');
    assert.equal(first.statusCode, 504, first.body);
    assert.equal(problem(first).code, 'CORE_TIMEOUT');
    assert.match(problem(first).detail, /may have been applied/);
    await restartAndWaitFor('the key settled', async () => (await keyRow('unanswered'))?.status === 504);
    await replayedWithoutResending('unanswered', 'UNANSWERED WHILE AWAY', 504);
  });
});
