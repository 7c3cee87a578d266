/**
 * Gateway mode (COREGATE_CORE=symxchange), differentially, on both databases: coregate's SOAP face on a
 * seeded store is the core (COREGATE_SOAP_AUTH=credentials, as a real core takes no bearer token), and a
 * second coregate in gateway mode in front of it answers every one of its operations with the JSON the
 * store answers, including updates (whose history lands in the core's store), the operations the 3.0 WSDLs
 * lack (served through their siblings), child lists the wire cannot select (read per record), lists read
 * page by page, paging walks and searches. The gateway's own policy still applies.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import { loadConfig } from '../src/config.js';
import { OPERATIONS } from '../src/operations/index.js';
import { operationPath, type AnyOperation } from '../src/operations/types.js';
import { demoRequest } from '../src/seed/demo-requests.js';
import { demoExamples, type DemoExamples } from '../src/seed/examples.js';
import { seedDatabase } from '../src/seed/load.js';
import { readAudit } from '../src/store/audit.js';
import { BACKENDS, createHarness, type Harness } from './support/harness.js';

const ACCOUNTS = 50;
const SEED = 627;
const CORE_OPERATIONS = OPERATIONS.filter((op) => op.service !== 'usermanagement');
const operation = (name: string, family: 'P1' | 'P2' = 'P2') =>
  OPERATIONS.find((op) => op.name === name && op.family === family)!;

/** Gateway settings for a core at `url`, with the environment's own validation. */
const gatewaySettings = (url: string, extra: Record<string, string> = {}) => {
  const config = loadConfig({ COREGATE_CORE: 'symxchange', COREGATE_SYMXCHANGE_URL: url, ...extra });
  return { core: config.core, symxchange: config.symxchange };
};

/** Paging tokens are each server's own opaque strings: what matters is whether another page follows. */
const withoutTokens = (answer: Record<string, unknown>) =>
  'Token' in answer ? { ...answer, Token: answer.Token !== '' } : answer;

for (const backend of BACKENDS) {
  describe(`gateway mode on ${backend.name}`, () => {
    let core: Harness;
    let gateway: Harness;
    let examples: DemoExamples;

    before(async () => {
      // Small pages at the core, so that the gateway reads an unpaged list page by page.
      core = await createHarness(backend, { soapAuth: 'credentials', pageMaximum: 40 });
      await seedDatabase(core.database, core.secrets, { accounts: ACCOUNTS, seed: SEED });
      examples = demoExamples(SEED, ACCOUNTS);
      const url = await core.app.listen({ port: 0, host: '127.0.0.1' });
      gateway = await createHarness(backend, gatewaySettings(url));
    });
    after(async () => {
      await gateway?.close();
      await core?.close();
    });

    /** The store's answer (the core's own JSON API) and the gateway's, to the same request. */
    const both = async (op: AnyOperation, body: Record<string, unknown>, headers: Record<string, string> = {}) => {
      const path = operationPath(op);
      const [fromStore, fromGateway] = [await core.call(path, body, headers), await gateway.call(path, body, headers)];
      return { fromStore, fromGateway };
    };

    const assertSame = async (op: AnyOperation, body: Record<string, unknown>) => {
      const { fromStore, fromGateway } = await both(op, body);
      assert.equal(fromStore.statusCode, 200, fromStore.body);
      assert.equal(fromGateway.statusCode, 200, fromGateway.body);
      assert.deepEqual(withoutTokens(fromGateway.json()), withoutTokens(fromStore.json()));
      return fromGateway.json();
    };

    describe('every operation answers the JSON the store answers', () => {
      for (const op of CORE_OPERATIONS) {
        test(`${op.family} ${op.name}`, async () => {
          await assertSame(op, demoRequest(examples, op));
        });
      }
    });

    describe('what the 3.0 wire cannot say directly', () => {
      const collateral = () => examples.collateral.collateralNumber;

      test('child selectors on getCollateralSelectFields go through getCollateralSelectFieldsFilterChildren', async () => {
        await assertSame(operation('getCollateralSelectFields'), {
          CollateralNumber: collateral(),
          SelectableFields: {
            CollateralFields: { Description: true },
            CollateralTrackingSelectableFields: { CollateralTrackingFields: { Locator: true, UserChar1: true } },
            CollateralDocumentSelectableFields: {
              IncludeAllCollateralDocumentFields: true,
              CollateralDocumentTrackingSelectableFields: { CollateralDocumentTrackingFields: { Type: true } },
            },
          },
        });
      });

      test('tracking lists of a page of documents are read per document', async () => {
        await assertSame(operation('getCollateralDocumentPagedListSelectFields'), {
          CollateralNumber: collateral(),
          PagingRequestContext: { NumberOfRecordsToReturn: 5 },
          SelectableFields: {
            CollateralDocumentFields: { Description: true },
            CollateralDocumentTrackingSelectableFields: { IncludeAllCollateralDocumentTrackingFields: true },
          },
        });
      });

      test('an unpaged document search filters tracking lists per document', async () => {
        await assertSame(operation('searchCollateralDocumentSelectFields'), {
          CollateralNumber: collateral(),
          SelectableFields: {
            IncludeAllCollateralDocumentFields: true,
            CollateralDocumentTrackingSelectableFields: { CollateralDocumentTrackingFields: { Locator: true } },
          },
          SearchFilter: {
            Query: 'Type >= 0',
            CollateralDocumentChildrenFilter: { CollateralDocumentTrackingFilter: { Query: 'Locator = 1' } },
          },
        });
      });

      test("an unpaged list longer than the core's pages, and than the list maximum, is read page by page", async () => {
        const answer = (await assertSame(operation('getCollateralFmHistoryListSelectFields'), {
          CollateralNumber: '7000000011',
          SelectableFields: { CollateralFmHistoryFields: { SequenceNumber: true } },
        })) as { CollateralFmHistoryList: { hasReachedMaximumListSize: boolean; CollateralFmHistory: unknown[] } };
        assert.equal(answer.CollateralFmHistoryList.hasReachedMaximumListSize, true);
        assert.equal(answer.CollateralFmHistoryList.CollateralFmHistory.length, gateway.config.listMaximum);
      });

      test('a search with date bounds and a query', async () => {
        await assertSame(operation('searchCollateralFmHistorySelectFields'), {
          CollateralNumber: '7000000011',
          SelectableFields: { IncludeAllCollateralFmHistoryFields: true },
          SearchFilter: { Query: 'FieldNumber > 2', StartPostDate: '2020-01-01', EndPostDate: '2022-12-31' },
        });
      });

      test("a paging walk visits the same records page by page, with the core's tokens", async () => {
        const op = operation('getCollateralFmHistoryPagedList');
        let tokens = { store: '', gateway: '' };
        for (let page = 0; page < 5; page += 1) {
          const request = (token: string) => ({
            CollateralNumber: '7000000011',
            PagingRequestContext: { NumberOfRecordsToReturn: 7, ...(token ? { Token: token } : {}) },
          });
          const fromStore = (await core.call(operationPath(op), request(tokens.store))).json();
          const fromGateway = (await gateway.call(operationPath(op), request(tokens.gateway))).json();
          assert.deepEqual(withoutTokens(fromGateway), withoutTokens(fromStore), `page ${page + 1}`);
          tokens = { store: fromStore.Token, gateway: fromGateway.Token };
        }
      });
    });

    describe('updates', () => {
      test("an update through the gateway lands in the core's store with its file-maintenance history", async () => {
        const hold = examples.shareTargets.find((t) => t.record === 'ShareHold')!;
        const response = await gateway.call(operationPath(operation('updateShareHoldByID')), {
          AccountNumber: hold.accountNumber,
          ShareId: hold.shareId,
          ShareHoldLocator: hold.locator,
          ShareHoldUpdatableFields: { Reference3: `VIA GATEWAY ${backend.name}` },
        });
        assert.equal(response.statusCode, 200, response.body);
        const { rows } = await sql<{ n: number }>`select count(*)::int as n from account_fm_history
          where new_character = ${`VIA GATEWAY ${backend.name}`}`.execute(core.database.db);
        assert.equal(rows[0]!.n, 1);
      });

      test('an update through the gateway is read back through the gateway, only the selected fields', async () => {
        const hold = examples.shareTargets.find((t) => t.record === 'ShareHold')!;
        const address = { AccountNumber: hold.accountNumber, ShareId: hold.shareId, ShareHoldLocator: hold.locator };
        const updated = await gateway.call(operationPath(operation('updateShareHoldByID', 'P1')), {
          ...address,
          ShareHoldFields: { Reference4: `READ BACK ${backend.name}` },
        });
        assert.equal(updated.statusCode, 200, updated.body);
        const answer = await assertSame(operation('getShareHoldSelectFields', 'P1'), {
          ...address,
          SelectableFields: { ShareHoldFields: { Locator: true, Reference4: true } },
        });
        assert.deepEqual(answer, { ShareHold: { Locator: hold.locator, Reference4: `READ BACK ${backend.name}` } });
      });

      test("a share's sub-records and an account's shares walk page by page as the store's do", async () => {
        const hold = examples.shareTargets.find((t) => t.record === 'ShareHold')!;
        for (const [op, parent] of [
          [
            operation('getShareNotePagedListSelectFields'),
            { AccountNumber: hold.accountNumber, ShareId: hold.shareId },
          ],
          [operation('getSharePagedListSelectFields'), { AccountNumber: hold.accountNumber }],
        ] as const) {
          let tokens = { store: '', gateway: '' };
          for (let page = 0; page < 3; page += 1) {
            const request = (token: string) => ({
              ...parent,
              PagingRequestContext: { NumberOfRecordsToReturn: 1, ...(token ? { Token: token } : {}) },
            });
            const fromStore = (await core.call(operationPath(op), request(tokens.store))).json();
            const fromGateway = (await gateway.call(operationPath(op), request(tokens.gateway))).json();
            assert.deepEqual(withoutTokens(fromGateway), withoutTokens(fromStore), `${op.name} page ${page + 1}`);
            if (fromStore.Token === '') break;
            tokens = { store: fromStore.Token, gateway: fromGateway.Token };
          }
        }
      });

      test("a record the core does not have is 404 RECORD_NOT_FOUND, as the store's", async () => {
        const hold = examples.shareTargets.find((t) => t.record === 'ShareHold')!;
        const { fromStore, fromGateway } = await both(operation('getShareHoldSelectFields'), {
          AccountNumber: hold.accountNumber,
          ShareHoldLocator: 999_999,
        });
        assert.equal(fromStore.statusCode, 404);
        assert.equal(fromGateway.statusCode, 404, fromGateway.body);
        assert.equal(fromGateway.json().code, 'RECORD_NOT_FOUND');
      });

      test('per-field failures come back as the store reports them', async () => {
        const name = examples.shareTargets.find((t) => t.record === 'ShareName')!;
        await assertSame(operation('updateShareNameByID', 'P1'), {
          AccountNumber: name.accountNumber,
          ShareId: name.shareId,
          ShareNameLocator: name.locator,
          ShareNameFields: { First: 'A'.repeat(30), Type: 10_000, Last: 'OK' },
        });
      });

      test("a field the core's element cannot carry is reported by the gateway and not sent; the core's failures are merged in request order", async () => {
        const hold = examples.shareTargets.find((t) => t.record === 'ShareHold')!;
        const address = { AccountNumber: hold.accountNumber, ShareId: hold.shareId, ShareHoldLocator: hold.locator };
        // ExpirationDate is no calendar day (the gateway's), Reference1 too long (the core's), Type past xsd:short.
        const fields = { ExpirationDate: '2023-02-30', Reference1: 'R'.repeat(41), Type: 40_000, Reference2: 'SENT' };
        const p1 = await assertSame(operation('updateShareHoldByID', 'P1'), { ...address, ShareHoldFields: fields });
        assert.deepEqual(
          [p1.UpdateStatus.FailedUpdateStatus.ErrorCode, p1.UpdateStatus.FailedUpdateStatus.ErrorMessage],
          [
            'INVALID_DATE',
            'ExpirationDate must be a calendar date YYYY-MM-DD, got "2023-02-30"; Reference1 must be at most 40 characters; Type must be between -32768 and 32767 (xsd:short)',
          ],
        );
        // On P2 the core's one FailedUpdateStatus element (the XSD's maxOccurs) is one item among the gateway's.
        const p2 = await gateway.call(operationPath(operation('updateShareHoldByID')), {
          ...address,
          ShareHoldUpdatableFields: fields,
        });
        assert.equal(p2.statusCode, 200, p2.body);
        assert.deepEqual(
          p2.json().UpdateStatus.FailedUpdateStatus.map((f: { ErrorCode: string }) => f.ErrorCode),
          ['INVALID_DATE', 'STRING_TOO_LONG', 'OUT_OF_RANGE'],
        );
        const { rows } = await sql<{ value: string }>`select new_character as value from account_fm_history
          where field_name = 'Reference2' and new_character = 'SENT'`.execute(core.database.db);
        assert.equal(rows.length, 1, 'the carried field was applied once (the P2 call changed nothing more)');
      });

      test('with no field the core can carry, the gateway answers without calling the core', async () => {
        const hold = examples.shareTargets.find((t) => t.record === 'ShareHold')!;
        const audited = async () => {
          await core.app.audit.flush();
          return (await sql<{ n: number }>`select count(*)::int as n from audit_event`.execute(core.database.db))
            .rows[0]!.n;
        };
        const calls = await audited();
        const answer = await gateway.call(operationPath(operation('updateShareHoldByID')), {
          AccountNumber: hold.accountNumber,
          ShareId: hold.shareId,
          ShareHoldLocator: hold.locator,
          ShareHoldUpdatableFields: { Type: -40_000 },
        });
        assert.equal(answer.statusCode, 200, answer.body);
        assert.equal(answer.json().UpdateStatus.FailedUpdateStatus[0].ErrorCode, 'OUT_OF_RANGE');
        assert.equal(await audited(), calls, 'the core audited no call');
      });

      test('a retried update with the same Idempotency-Key is answered by the gateway, not sent again', async () => {
        const hold = examples.shareTargets.find((t) => t.record === 'ShareHold')!;
        const body = {
          AccountNumber: hold.accountNumber,
          ShareId: hold.shareId,
          ShareHoldLocator: hold.locator,
          ShareHoldUpdatableFields: { Reference2: `ONCE ${backend.name}` },
        };
        const key = { 'idempotency-key': `gateway-once-${backend.name}` };
        const path = operationPath(operation('updateShareHoldByID'));
        const first = await gateway.call(path, body, key);
        const second = await gateway.call(path, body, key);
        assert.equal(first.statusCode, 200, first.body);
        assert.equal(second.headers['idempotent-replayed'], 'true');
        assert.deepEqual(second.json(), first.json());
        const { rows } = await sql<{ n: number }>`select count(*)::int as n from account_fm_history
          where new_character = ${`ONCE ${backend.name}`}`.execute(core.database.db);
        assert.equal(rows[0]!.n, 1, 'the core got the update once');
      });
    });

    describe("the gateway's policy still applies", () => {
      test('a request that is not valid is a 400 before any call to the core', async () => {
        const response = await gateway.call(operationPath(operation('findBySSN', 'P1')), { SSN: '1234' });
        assert.equal(response.statusCode, 400);
        assert.equal(response.json().code, 'VALIDATION_FAILED');
      });

      test('a bad query is a 400 INVALID_QUERY before any call to the core', async () => {
        const response = await gateway.call(operationPath(operation('searchCollateralCollHoldSelectFields')), {
          CollateralNumber: examples.collateral.collateralNumber,
          SearchFilter: { Query: 'Amount >' },
        });
        assert.equal(response.statusCode, 400);
        assert.equal(response.json().code, 'INVALID_QUERY');
      });

      test('credentials the core rejects are 403 CORE_CREDENTIALS_REJECTED', async () => {
        const response = await gateway.call(operationPath(operation('findBySSN', 'P1')), {
          SSN: examples.sharedSsn.ssn,
          Credentials: { AdministrativeCredentials: { Password: 'not-the-core-pwd' } },
        });
        assert.equal(response.statusCode, 403);
        assert.equal(response.json().code, 'CORE_CREDENTIALS_REJECTED');
        assert.equal(response.json().core.faultcode, 'Client');
      });

      test('two credential kinds are a 400: the core takes one', async () => {
        const response = await gateway.call(operationPath(operation('findBySSN', 'P1')), {
          SSN: examples.sharedSsn.ssn,
          Credentials: {
            AdministrativeCredentials: { Password: 'x' },
            UserNumberCredentials: { UserNumber: 1, Password: 'y' },
          },
        });
        assert.equal(response.statusCode, 400);
        assert.deepEqual(
          response.json().errors.map((e: { pointer: string }) => e.pointer),
          ['/Credentials'],
        );
      });

      test("a member's AccountNumberCredentials reach only their own account, before any call", async () => {
        const hold = examples.shareTargets.find((t) => t.record === 'ShareHold')!;
        const response = await gateway.call(operationPath(operation('updateShareHoldByID')), {
          AccountNumber: hold.accountNumber,
          ShareId: hold.shareId,
          ShareHoldLocator: hold.locator,
          ShareHoldUpdatableFields: { Reference1: 'NOT YOURS' },
          Credentials: { AccountNumberCredentials: { AccountNumber: '0000000049', HomeBankingPassword: 'x' } },
        });
        assert.equal(response.statusCode, 403);
        assert.equal(response.json().code, 'FORBIDDEN');
      });

      test("logon is the store's: 501 STORE_ONLY in gateway mode", async () => {
        const response = await gateway.call('/gw/627/persistent/usermanagement/logon', {
          Credentials: { UserNumberCredentials: { UserNumber: 1, Password: 'x' } },
        });
        assert.equal(response.statusCode, 501);
        assert.equal(response.json().code, 'STORE_ONLY');
      });

      test('a Sym without a core is a 404 naming the Syms served', async () => {
        const response = await gateway.call('/gw/999/persistent/findby/findBySSN', { SSN: examples.sharedSsn.ssn });
        assert.equal(response.statusCode, 404);
        assert.match(response.json().detail, /Sym 999.*627/);
      });

      test("the audit trail has each call with the core's latency and outcome, and /ready names the core", async () => {
        const response = await gateway.call(
          operationPath(operation('findBySSN', 'P1')),
          { SSN: examples.sharedSsn.ssn },
          { 'x-request-id': `gateway-audit-${backend.name}` },
        );
        assert.equal(response.statusCode, 200);
        await gateway.app.audit.flush();
        const rows = await readAudit(gateway.database.db, new Date(Date.now() - 60_000), { limit: 10_000 });
        const row = rows.find((r) => r.requestId === `gateway-audit-${backend.name}`);
        assert.ok(row, 'audited');
        assert.equal(row.coreOutcome, 'ok');
        assert.ok(typeof row.coreLatencyMs === 'number' && row.coreLatencyMs >= 0);
        const ready = await gateway.app.inject({ method: 'GET', url: '/ready' });
        assert.deepEqual(ready.json(), { status: 'ready', core: '627: closed, SymXchange 3.0' });
      });
    });
  });
}
