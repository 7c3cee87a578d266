/**
 * Share read-back (src/operations/share-read.ts), on each database: whatever an update operation writes to
 * the share or one of its nine sub-records, get<Record>SelectFields and get<Record>PagedListSelectFields
 * read back, on both path families; field selection returns exactly the selected fields (and never a
 * protected one); pages walk a share's records with tokens; a record or parent that does not exist is 404
 * RECORD_NOT_FOUND, a bad selection 400 naming the field, a token without share:read 403.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import { FAMILIES, recordDef, type Family, type RecordDef } from '../src/catalog/index.js';
import { updatableFieldsName } from '../src/catalog/schemas.js';
import { SHARE_READ_OPERATIONS } from '../src/operations/share-read.js';
import { operationName, SHARE_UPDATE_RECORDS } from '../src/operations/share-update.js';
import { operationPath } from '../src/operations/types.js';
import { seedDatabase } from '../src/seed/load.js';
import { demoMemberSecret, seedMemberSecrets } from '../src/seed/member-secrets.js';
import { sampleValue } from './support/field-values.js';
import { BACKENDS, createHarness, type Harness } from './support/harness.js';
import { firstShareTarget, shareAddress, type ShareTarget } from './support/share-targets.js';

const ACCOUNTS = 3;

const readPath = (record: RecordDef, kind: 'SelectFields' | 'PagedListSelectFields', family: Family) =>
  operationPath({ family, service: 'account', name: `get${record.name}${kind}` });

/** The address of one record, as its update and its single read name it. */

/** The parent of a page: the account for shares, the share for its sub-records. */
const parentOf = (record: RecordDef, target: ShareTarget): Record<string, unknown> =>
  record.name === 'Share'
    ? { AccountNumber: target.accountNumber }
    : { AccountNumber: target.accountNumber, ShareId: target.shareId };

/** The key field that tells a listed record apart: the share's Id, a sub-record's Locator. */
const keyField = (record: RecordDef) => (record.name === 'Share' ? 'Id' : 'Locator');
const keyValue = (record: RecordDef, target: ShareTarget) =>
  record.name === 'Share' ? target.shareId : target.locator;

/** A plain field the update of the family may set. */
const updatableField = (record: RecordDef, family: Family) =>
  record.fields.find((f) => f.families.includes(family) && !f.readOnly && !f.protection && !f.repeating)!;

const hold = recordDef('ShareHold');
const note = recordDef('ShareNote');
const name = recordDef('ShareName');
const share = recordDef('Share');

for (const backend of BACKENDS) {
  describe(`share read-back on ${backend.name}`, () => {
    let h: Harness;
    const targets = new Map<string, ShareTarget>();
    before(async () => {
      h = await createHarness(backend);
      await seedDatabase(h.database, h.secrets, { accounts: ACCOUNTS, seed: 627 });
      await seedMemberSecrets(h.database.db, ACCOUNTS);
      for (const record of SHARE_UPDATE_RECORDS) targets.set(record.name, await firstShareTarget(h, record));
    });
    after(() => h.close());

    const target = (record: RecordDef) => targets.get(record.name)!;
    const update = (record: RecordDef, family: Family, fields: Record<string, unknown>) =>
      h.call(operationPath({ family, service: 'account', name: operationName(record) }), {
        ...shareAddress(record, target(record)),
        [updatableFieldsName(record, family)]: fields,
      });
    const readOne = (record: RecordDef, family: Family, extra: Record<string, unknown> = {}) =>
      h.call(readPath(record, 'SelectFields', family), { ...shareAddress(record, target(record)), ...extra });
    const readPage = (record: RecordDef, family: Family, extra: Record<string, unknown> = {}) =>
      h.call(readPath(record, 'PagedListSelectFields', family), { ...parentOf(record, target(record)), ...extra });

    test('every share record has both reads on both families, each needing share:read', () => {
      assert.equal(SHARE_READ_OPERATIONS.length, SHARE_UPDATE_RECORDS.length * 2 * FAMILIES.length);
      assert.ok(SHARE_READ_OPERATIONS.every((op) => op.scope === 'share:read' && op.service === 'account'));
    });

    for (const family of FAMILIES) {
      for (const record of SHARE_UPDATE_RECORDS) {
        test(`${family} get${record.name}SelectFields reads back what ${operationName(record)} wrote, and only the selected field`, async () => {
          const field = updatableField(record, family);
          const value = sampleValue(field, family === 'P1' ? 101 : 202);
          const updated = await update(record, family, { [field.name]: value });
          assert.equal(updated.statusCode, 200, updated.body);
          assert.equal(updated.json().UpdateStatus.isAllFieldsUpdateSuccess, true, updated.body);

          const read = await readOne(record, family, {
            SelectableFields: { [`${record.name}Fields`]: { [field.name]: true } },
          });
          assert.equal(read.statusCode, 200, read.body);
          assert.deepEqual(read.json(), { [record.name]: { [field.name]: value } });
        });

        test(`${family} get${record.name}PagedListSelectFields lists the updated record with its new value`, async () => {
          const field = updatableField(record, family);
          const value = sampleValue(field, family === 'P1' ? 303 : 404);
          assert.equal((await update(record, family, { [field.name]: value })).statusCode, 200);

          const page = await readPage(record, family, {
            PagingRequestContext: { NumberOfRecordsToReturn: 1000 },
            SelectableFields: { [`${record.name}Fields`]: { [keyField(record)]: true, [field.name]: true } },
          });
          assert.equal(page.statusCode, 200, page.body);
          const { [record.name]: records, Token } = page.json() as Record<string, unknown>;
          assert.equal(Token, '', 'one page holds them all');
          const listed = (records as Record<string, unknown>[]).find(
            (r) => r[keyField(record)] === keyValue(record, target(record)),
          );
          assert.deepEqual(listed, { [keyField(record)]: keyValue(record, target(record)), [field.name]: value });
        });
      }
    }

    describe('field selection', () => {
      test('without SelectableFields, or with IncludeAll, every field of every record is returned but the protected ones', async () => {
        for (const record of SHARE_UPDATE_RECORDS) {
          const readable = record.fields.filter((f) => !f.protection).map((f) => f.name);
          for (const extra of [{}, { SelectableFields: { [`IncludeAll${record.name}Fields`]: true } }]) {
            const read = await readOne(record, 'P2', extra);
            assert.equal(read.statusCode, 200, read.body);
            assert.deepEqual(Object.keys(read.json()[record.name]).sort(), [...readable].sort(), record.name);
          }
        }
        const names = await readOne(name, 'P1');
        assert.ok(!('Ssn' in names.json().ShareName), 'a name never shows its SSN');
      });

      test('a repeating field updated by EntryId reads back by EntryId', async () => {
        const lines = [
          { EntryId: 2, Text: 'SECOND LINE' },
          { EntryId: 5, Text: 'FIFTH LINE' },
        ];
        assert.equal((await update(note, 'P1', { Text: lines })).statusCode, 200);
        const all = await readOne(note, 'P1', { SelectableFields: { ShareNoteFields: { Text: true } } });
        assert.deepEqual(
          all.json().ShareNote.Text.filter((entry: { EntryId: number }) => [2, 5].includes(entry.EntryId)),
          lines,
        );
        const one = await readOne(note, 'P1', { SelectableFields: { ShareNoteFields: { Text: [5] } } });
        assert.deepEqual(one.json(), { ShareNote: { Text: [lines[1]] } });
      });

      test('a field the record does not have is a 400 naming it', async () => {
        const read = await readOne(hold, 'P2', { SelectableFields: { ShareHoldFields: { Reference9: true } } });
        assert.equal(read.statusCode, 400);
        assert.equal(read.json().code, 'VALIDATION_FAILED');
        assert.ok(
          read
            .json()
            .errors.some((e: { pointer: string }) => e.pointer === '/SelectableFields/ShareHoldFields/Reference9'),
          read.body,
        );
      });

      test('a protected field cannot be selected: 400 naming it', async () => {
        const read = await readOne(name, 'P1', { SelectableFields: { ShareNameFields: { Ssn: true } } });
        assert.equal(read.statusCode, 400);
        assert.ok(
          read.json().errors.some((e: { pointer: string }) => e.pointer === '/SelectableFields/ShareNameFields/Ssn'),
          read.body,
        );
      });

      test("an EntryId beyond the field's entries is a 400 naming the field", async () => {
        const read = await readOne(note, 'P2', { SelectableFields: { ShareNoteFields: { Text: [0] } } });
        assert.equal(read.statusCode, 400);
        assert.ok(
          read
            .json()
            .errors.some((e: { pointer: string }) => e.pointer.startsWith('/SelectableFields/ShareNoteFields/Text')),
          read.body,
        );
      });
    });

    describe('paging', () => {
      test("a walk of an account's shares one by one visits each share once, in order, and ends with an empty Token", async () => {
        const account = target(share).accountNumber;
        const { rows } = await sql<{ share_id: string }>`select share_id from share
          where account_number = ${account} order by share_id`.execute(h.database.db);
        assert.ok(rows.length > 1, 'the account has several shares');
        const seen: string[] = [];
        let token = '';
        do {
          const page = await readPage(share, 'P1', {
            PagingRequestContext: { NumberOfRecordsToReturn: 1, ...(token ? { Token: token } : {}) },
            SelectableFields: { ShareFields: { Id: true } },
          });
          assert.equal(page.statusCode, 200, page.body);
          seen.push(...page.json().Share.map((s: { Id: string }) => s.Id));
          token = page.json().Token;
        } while (token !== '' && seen.length <= rows.length);
        assert.deepEqual(
          seen,
          rows.map((r) => r.share_id),
        );
      });

      test("a token of another share's list is a 400 INVALID_PAGING_TOKEN", async () => {
        const first = await readPage(share, 'P2', { PagingRequestContext: { NumberOfRecordsToReturn: 1 } });
        const token = first.json().Token as string;
        assert.notEqual(token, '');
        const other = await h.call(readPath(share, 'PagedListSelectFields', 'P2'), {
          AccountNumber: '0000000002',
          PagingRequestContext: { Token: token },
        });
        assert.equal(other.statusCode, 400);
        assert.equal(other.json().code, 'INVALID_PAGING_TOKEN');
      });
    });

    describe('what does not exist', () => {
      const notFound = (response: { statusCode: number; body: string; json(): { code: string } }) => {
        assert.equal(response.statusCode, 404, response.body);
        assert.equal(response.json().code, 'RECORD_NOT_FOUND');
      };

      test('a locator no record of the account has is 404', async () => {
        notFound(await readOne(hold, 'P1', { ShareHoldLocator: 999_999 }));
      });

      test('a ShareId that is not the record’s share is 404', async () => {
        notFound(await readOne(hold, 'P2', { ShareId: 'ZZZZ' }));
      });

      test('a share the account does not have is 404', async () => {
        notFound(await readOne(share, 'P1', { ShareId: 'ZZZZ' }));
      });

      test('the records of a share the account does not have, or the shares of an unknown account, are 404', async () => {
        notFound(await readPage(hold, 'P2', { ShareId: 'ZZZZ' }));
        notFound(await h.call(readPath(share, 'PagedListSelectFields', 'P1'), { AccountNumber: '0000099999' }));
      });

      test('a share without records of the type is an empty page, not a 404', async () => {
        const { rows } = await sql<{ account_number: string; share_id: string }>`select s.account_number, s.share_id
          from share s where not exists (select 1 from share_hold x
            where x.account_number = s.account_number and x.share_id = s.share_id) limit 1`.execute(h.database.db);
        assert.ok(rows[0], 'the seeded data has a share without holds');
        const page = await h.call(readPath(hold, 'PagedListSelectFields', 'P1'), {
          AccountNumber: rows[0].account_number,
          ShareId: rows[0].share_id,
        });
        assert.equal(page.statusCode, 200, page.body);
        assert.deepEqual(page.json(), { ShareHold: [], Token: '' });
      });
    });

    describe('who may read', () => {
      test('a token with share:write but not share:read is 403; one with share:read reads', async () => {
        const path = readPath(hold, 'SelectFields', 'P1');
        const body = JSON.stringify({
          ...shareAddress(hold, target(hold)),
          Credentials: { AdministrativeCredentials: { Password: 'test-admin-password' } },
        });
        const as = async (scopes: Parameters<Harness['tokenWith']>[0]) =>
          h.app.inject({
            method: 'POST',
            url: path,
            headers: { authorization: `Bearer ${await h.tokenWith(scopes)}`, 'content-type': 'application/json' },
            payload: body,
          });
        const writer = await as(['share:write']);
        assert.equal(writer.statusCode, 403);
        assert.equal(writer.json().code, 'FORBIDDEN');
        assert.equal((await as(['share:read'])).statusCode, 200);
      });

      test("a member reads their own account's records, and not another's", async () => {
        const own = target(hold).accountNumber;
        const credentials = (account: string) => ({
          AccountNumberCredentials: {
            AccountNumber: account,
            HomeBankingPassword: demoMemberSecret(account).homeBankingPassword,
          },
        });
        const mine = await readOne(hold, 'P2', { Credentials: credentials(own) });
        assert.equal(mine.statusCode, 200, mine.body);
        const other = own === '0000000001' ? '0000000002' : '0000000001';
        const theirs = await readOne(hold, 'P2', { Credentials: credentials(other) });
        assert.equal(theirs.statusCode, 403);
        assert.equal(theirs.json().code, 'FORBIDDEN');
      });
    });
  });
}
