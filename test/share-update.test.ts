/**
 * updateShare (spec document 1): all twenty routes, per-field failures, file-maintenance history,
 * atomicity, concurrency and idempotency, on each database.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import fc from 'fast-check';
import { sql } from 'kysely';
import { fieldOf, FAMILIES, type Family, type FieldDef, type RecordDef } from '../src/catalog/index.js';
import { updatableFieldsName } from '../src/catalog/schemas.js';
import { locatorName, operationName, SHARE_UPDATE_RECORDS } from '../src/operations/share-update.js';
import { operationPath } from '../src/operations/types.js';
import { hashPassword } from '../src/crypto/passwords.js';
import { seedDatabase } from '../src/seed/load.js';
import { users } from '../src/store/access.js';
import { recordTree } from '../src/store/record-tree.js';
import type { Row } from '../src/store/records.js';
import { validValue, sampleValue } from './support/field-values.js';
import { BACKENDS, createHarness, type Harness } from './support/harness.js';
import { firstShareTarget, shareAddress, type ShareTarget } from './support/share-targets.js';

const pathOf = (record: RecordDef, family: Family) =>
  operationPath({ family, service: 'account', name: operationName(record) });
const hasMessageId = (record: RecordDef) => !['ShareName', 'ShareTracking'].includes(record.name);

function keyOf(record: RecordDef, target: ShareTarget): Row {
  return locatorName(record)
    ? { account_number: target.accountNumber, locator: target.locator }
    : { account_number: target.accountNumber, share_id: target.shareId };
}

/** Updatable plain fields of a record on a family (not read-only, not protected). */
const updatable = (record: RecordDef, family: Family) =>
  record.fields.filter((f) => f.families.includes(family) && !f.readOnly && !f.protection);

async function stored(h: Harness, record: RecordDef, target: ShareTarget, fields: readonly FieldDef[]) {
  return recordTree.read(h.database.db, { record, fields }, keyOf(record, target));
}

async function historyRows(h: Harness, where = sql`true`) {
  const { rows } = await sql<Row>`select * from account_fm_history where ${where} order by sequence_number`.execute(
    h.database.db,
  );
  return rows;
}

const hold = SHARE_UPDATE_RECORDS.find((r) => r.name === 'ShareHold')!;
/** The PrimaryKeyField of a hold's failure: its account, share and locator. */
const holdKey = (target: ShareTarget) => [
  { Name: 'AccountNumber', Value: target.accountNumber },
  { Name: 'ShareId', Value: target.shareId },
  { Name: 'ShareHoldLocator', Value: String(target.locator) },
];
const name = SHARE_UPDATE_RECORDS.find((r) => r.name === 'ShareName')!;
const note = SHARE_UPDATE_RECORDS.find((r) => r.name === 'ShareNote')!;
const share = SHARE_UPDATE_RECORDS.find((r) => r.name === 'Share')!;

for (const backend of BACKENDS) {
  describe(`updateShare on ${backend.name}`, () => {
    let h: Harness;
    const targets = new Map<string, ShareTarget>();
    before(async () => {
      h = await createHarness(backend);
      await seedDatabase(h.database, h.secrets, { accounts: 3, seed: 627 });
      for (const record of SHARE_UPDATE_RECORDS) targets.set(record.name, await firstShareTarget(h, record));
    });
    after(() => h.close());

    const update = (
      record: RecordDef,
      family: Family,
      fields: Record<string, unknown>,
      extra: Record<string, unknown> = {},
      headers: Record<string, string> = {},
    ) =>
      h.call(
        pathOf(record, family),
        { ...shareAddress(record, targets.get(record.name)!), [updatableFieldsName(record, family)]: fields, ...extra },
        headers,
      );

    test('the share tables leave room on each page for updated versions of its rows (fill factor 80)', async () => {
      const { rows } = await sql<{ table: string; options: string[] | null }>`select relname as table,
          reloptions as options from pg_class where relname in (${sql.join(SHARE_UPDATE_RECORDS.map((r) => r.table))})
          and relkind = 'r' and relnamespace = current_schema()::regnamespace order by relname`.execute(h.database.db);
      assert.deepEqual(
        rows.map((row) => [row.table, row.options]),
        SHARE_UPDATE_RECORDS.map((r) => [r.table, ['fillfactor=80']]).sort(),
      );
    });

    for (const family of FAMILIES) {
      for (const record of SHARE_UPDATE_RECORDS) {
        test(`${family} ${operationName(record)}: a valid one-field update returns the success shape and is stored`, async () => {
          const field = updatable(record, family).find((f) => !f.repeating)!;
          const value = sampleValue(field, family === 'P1' ? 11 : 22);
          const response = await update(record, family, { [field.name]: value });
          assert.equal(response.statusCode, 200, response.body);
          const failed =
            family === 'P2'
              ? []
              : hasMessageId(record)
                ? null
                : { Record: null, ErrorCode: null, ErrorMessage: null, PrimaryKeyField: [] };
          const updateStatus = {
            isAllFieldsUpdateSuccess: true,
            FailedUpdateStatus: failed,
            ...(family === 'P1' && hasMessageId(record) ? { Version_1: null, _value_1: null } : {}),
          };
          assert.deepEqual(
            response.json(),
            hasMessageId(record)
              ? { UpdateStatus: updateStatus, MessageId: operationName(record) }
              : { UpdateStatus: updateStatus },
          );
          assert.deepEqual(await stored(h, record, targets.get(record.name)!, [field]), { [field.name]: value });
        });
      }
    }

    test('a mixed request applies the valid fields and reports exactly the over-long one', async () => {
      const response = await update(hold, 'P2', {
        Amount: 77.25,
        Reference1: 'x'.repeat(41),
        Reference2: 'CHECK 1021',
      });
      const body = response.json();
      assert.equal(response.statusCode, 200);
      assert.equal(body.UpdateStatus.isAllFieldsUpdateSuccess, false);
      const target = targets.get('ShareHold')!;
      assert.deepEqual(body.UpdateStatus.FailedUpdateStatus, [
        {
          Record: 'ShareHold',
          ErrorCode: 'STRING_TOO_LONG',
          ErrorMessage: 'Reference1 must be at most 40 characters',
          PrimaryKeyField: holdKey(target),
        },
      ]);
      const after = await stored(
        h,
        hold,
        target,
        ['Amount', 'Reference1', 'Reference2'].map((n) => fieldOf(hold, n)!),
      );
      assert.equal(after!.Amount, 77.25);
      assert.equal(after!.Reference2, 'CHECK 1021');
      assert.notEqual(after!.Reference1, 'x'.repeat(41));
    });

    test('P1 reports the failures of the first eight operations as one object naming every failed field, with Version_1 and _value_1', async () => {
      const target = targets.get('ShareHold')!;
      const body = (await update(hold, 'P1', { Reference2: 'OK', Amount: 1.005, Reference1: 'x'.repeat(41) })).json();
      assert.deepEqual(body.UpdateStatus.FailedUpdateStatus, {
        Record: 'ShareHold',
        ErrorCode: 'TOO_MANY_DECIMALS',
        ErrorMessage: 'Amount takes at most 2 decimal places; Reference1 must be at most 40 characters',
        PrimaryKeyField: holdKey(target),
      });
      assert.equal(body.UpdateStatus.isAllFieldsUpdateSuccess, false);
      assert.equal(body.UpdateStatus.Version_1, null);
    });

    test("a check order's SSN entries are updated one at a time, kept sealed, and masked in history", async () => {
      const checkOrder = SHARE_UPDATE_RECORDS.find((r) => r.name === 'ShareCheckOrder')!;
      const target = targets.get('ShareCheckOrder')!;
      for (const [EntryId, Ssn] of [
        [1, '123456789'],
        [2, '987654321'],
      ] as const) {
        const response = await update(checkOrder, 'P2', { Ssn: [{ EntryId, Ssn }] });
        assert.equal(response.json().UpdateStatus.isAllFieldsUpdateSuccess, true, response.body);
      }
      const { rows } = await sql<{ enc: Uint8Array }>`select ssn_enc as enc from share_check_order
        where account_number = ${target.accountNumber} and locator = ${target.locator}`.execute(h.database.db);
      assert.deepEqual(JSON.parse(h.secrets.decrypt(rows[0]!.enc)), [
        { EntryId: 1, Ssn: '123456789' },
        { EntryId: 2, Ssn: '987654321' },
      ]);
      const history = await historyRows(
        h,
        sql`record_name = 'ShareCheckOrder' and field_name = 'Ssn' and account_number = ${target.accountNumber}`,
      );
      assert.deepEqual(
        history.slice(-2).map((row) => row.new_character),
        ['*****6789', '*****4321'],
      );
    });

    test('each field rule is a per-field failure with its own code', async () => {
      const cases: [RecordDef, Record<string, unknown>, string][] = [
        [name, { Ssn: '12345' }, 'PATTERN_MISMATCH'],
        [name, { First: 'ANN\tB' }, 'INVALID_CHARACTER'],
        [name, { First: 'A'.repeat(21) }, 'STRING_TOO_LONG'],
        [name, { Type: 10000 }, 'OUT_OF_RANGE'],
        [name, { BeneficialPercent: 100.5 }, 'OUT_OF_RANGE'],
        [name, { IdentIdNumber: [{ EntryId: 4, IdentIdNumber: 'X1' }] }, 'INVALID_ENTRY_ID'],
        [name, { IdentIdNumber: [{ EntryId: 40000, IdentIdNumber: 'X1' }] }, 'INVALID_ENTRY_ID'],
        [name, { IdentIdNumber: [1, 2, 3, 4].map((EntryId) => ({ EntryId, IdentIdNumber: 'X' })) }, 'TOO_MANY_ENTRIES'],
        // The core's own wire ranges and calendar are field rules too (DESIGN, Errors).
        [name, { Type: 40000 }, 'OUT_OF_RANGE'],
        [name, { Type: -40000 }, 'OUT_OF_RANGE'],
        [name, { BirthDate: '2023-02-30' }, 'INVALID_DATE'],
        [name, { BirthDate: '0000-01-01' }, 'INVALID_DATE'],
        [hold, { Amount: 1e300 }, 'OUT_OF_RANGE'],
        [share, { Balance: 1000 }, 'READ_ONLY_FIELD'],
        [share, { Id: '0099' }, 'READ_ONLY_FIELD'],
      ];
      for (const [record, fields, code] of cases) {
        const response = await update(record, 'P2', fields);
        assert.equal(response.statusCode, 200, response.body);
        const failures = response.json().UpdateStatus.FailedUpdateStatus;
        assert.deepEqual(
          failures.map((f: { ErrorCode: string }) => f.ErrorCode),
          [code],
          JSON.stringify(fields),
        );
      }
    });

    test('a value that is not of its JSON type, or text no message can carry, is a 400 naming it', async () => {
      const cases: [RecordDef, Record<string, unknown>, string][] = [
        [name, { BirthDate: 'yesterday' }, '/ShareNameUpdatableFields/BirthDate'],
        [name, { BirthDate: '2024-1-5' }, '/ShareNameUpdatableFields/BirthDate'],
        [name, { First: 'ANN\u0001' }, '/ShareNameUpdatableFields/First'],
        [name, { Type: 1.5 }, '/ShareNameUpdatableFields/Type'],
        [name, { First: null }, '/ShareNameUpdatableFields/First'],
        [share, { Description: null }, '/ShareUpdatableFields/Description'],
      ];
      for (const [record, fields, pointer] of cases) {
        const response = await update(record, 'P2', fields);
        assert.equal(response.statusCode, 400, JSON.stringify(fields));
        assert.deepEqual(
          response.json().errors.map((e: { pointer: string }) => e.pointer),
          [pointer],
          JSON.stringify(fields),
        );
      }
    });

    test('P1 name and tracking return a single failure object, with empty members when nothing failed', async () => {
      const ok = (await update(name, 'P1', { First: 'MARIA' })).json();
      assert.deepEqual(ok.UpdateStatus.FailedUpdateStatus, {
        Record: null,
        ErrorCode: null,
        ErrorMessage: null,
        PrimaryKeyField: [],
      });
      const failed = (await update(name, 'P1', { Locator: 9 })).json();
      assert.equal(failed.UpdateStatus.FailedUpdateStatus.ErrorCode, 'READ_ONLY_FIELD');
      assert.equal(failed.UpdateStatus.FailedUpdateStatus.ErrorMessage, 'Locator is read-only');
      assert.equal(failed.UpdateStatus.isAllFieldsUpdateSuccess, false);
    });

    test('2022.01 ShareNameUpdatableFields rejects MemberNumber, and tracking rejects Locator, with 400', async () => {
      const response = await update(name, 'P2', { MemberNumber: '123' });
      assert.equal(response.statusCode, 400);
      assert.deepEqual(response.json().errors, [
        { pointer: '/ShareNameUpdatableFields/MemberNumber', detail: 'is not a known property' },
      ]);
      const tracking = SHARE_UPDATE_RECORDS.find((r) => r.name === 'ShareTracking')!;
      const trackingResponse = await update(tracking, 'P2', { Locator: 2, FmLastDate: '2024-01-01' });
      assert.deepEqual(
        trackingResponse
          .json()
          .errors.map((e: { pointer: string }) => e.pointer)
          .sort(),
        ['/ShareTrackingUpdatableFields/FmLastDate', '/ShareTrackingUpdatableFields/Locator'],
      );
      assert.equal((await update(name, 'P1', { MemberNumber: '123' })).statusCode, 200, 'P1 has MemberNumber');
    });

    test('a value of the wrong JSON type is a 400, not a per-field failure', async () => {
      const response = await update(hold, 'P2', { Amount: '12.00', Reference1: 5 });
      assert.equal(response.statusCode, 400);
      assert.deepEqual(
        response
          .json()
          .errors.map((e: { pointer: string }) => e.pointer)
          .sort(),
        ['/ShareHoldUpdatableFields/Amount', '/ShareHoldUpdatableFields/Reference1'],
      );
    });

    test('repeating entries are added, replaced and removed by EntryId', async () => {
      const target = targets.get('ShareNote')!;
      const text = fieldOf(note, 'Text')!;
      await update(note, 'P2', {
        Text: [
          { EntryId: 1, Text: 'FIRST' },
          { EntryId: 7, Text: 'SEVENTH' },
        ],
      });
      await update(note, 'P2', { Text: [{ EntryId: 7, Text: 'SEVENTH AGAIN' }] });
      const entries = (await stored(h, note, target, [text]))!.Text as { EntryId: number; Text: string }[];
      assert.deepEqual(
        entries.filter((e) => [1, 7].includes(e.EntryId)),
        [
          { EntryId: 1, Text: 'FIRST' },
          { EntryId: 7, Text: 'SEVENTH AGAIN' },
        ],
      );
      await update(note, 'P2', { Text: [{ EntryId: 7, Text: null }] });
      const after = (await stored(h, note, target, [text]))!.Text as { EntryId: number }[];
      assert.ok(!after.some((e) => e.EntryId === 7));
    });

    test('an updated SSN is stored protected and found by findBySSN', async () => {
      const target = targets.get('ShareName')!;
      await update(name, 'P2', { Ssn: '219099999' });
      const found = await h.call('/gw/627/persistent/findby/findBySSN', { SSN: '219099999' });
      assert.deepEqual(found.json().AccountNumber, [target.accountNumber]);
      const history = await historyRows(h, sql`field_name = 'Ssn'`);
      assert.equal(history.at(-1)!.new_character, '*****9999', 'history holds the SSN masked');
    });

    describe('addressing', () => {
      test('a request that cannot identify the record is 400 naming what is missing', async () => {
        const response = await h.call(pathOf(hold, 'P2'), { ShareId: '0000', ShareHoldUpdatableFields: { Amount: 1 } });
        assert.equal(response.statusCode, 400);
        assert.deepEqual(
          response
            .json()
            .errors.map((e: { pointer: string }) => e.pointer)
            .sort(),
          ['/AccountNumber', '/ShareHoldLocator'],
        );
        const noFields = await h.call(pathOf(share, 'P1'), { AccountNumber: '0000000001' });
        assert.deepEqual(
          noFields
            .json()
            .errors.map((e: { pointer: string }) => e.pointer)
            .sort(),
          ['/ShareFields', '/ShareId'],
        );
      });

      test('an empty fields object is 400', async () => {
        assert.equal((await update(hold, 'P2', {})).statusCode, 400);
      });

      test('a key that names no record is 404 RECORD_NOT_FOUND', async () => {
        for (const extra of [{ ShareHoldLocator: 999 }, { ShareId: 'ZZZZ' }, { AccountNumber: '0000009999' }]) {
          const response = await update(hold, 'P2', { Amount: 5 }, extra);
          assert.equal(response.statusCode, 404, JSON.stringify(extra));
          assert.equal(response.json().code, 'RECORD_NOT_FOUND');
        }
      });
    });

    describe('file-maintenance history', () => {
      test('each changed field writes one row with old and new value, FmType 1 and the user number', async () => {
        await users.add(h.database.db, 31, 'Teller', await hashPassword('teller-31'));
        const target = targets.get('ShareHold')!;
        const before = (await stored(h, hold, target, [fieldOf(hold, 'Amount')!]))!.Amount;
        const since = (await historyRows(h)).length;
        const response = await h.call(pathOf(hold, 'P1'), {
          ...shareAddress(hold, target),
          ShareHoldFields: { Amount: 401.99, Reference3: 'BRANCH 7' },
          Credentials: { UserNumberCredentials: { UserNumber: 31, Password: 'teller-31' } },
        });
        assert.equal(response.statusCode, 200, response.body);
        const rows = (await historyRows(h)).slice(since);
        assert.equal(rows.length, 2);
        const amount = rows.find((r) => r.field_name === 'Amount')!;
        assert.equal(amount.record_name, 'ShareHold');
        assert.equal(amount.data_type, 3);
        assert.equal(amount.old_money, before);
        assert.equal(amount.new_money, 401.99);
        assert.equal(amount.fm_type, 1);
        assert.equal(amount.user_number, 31);
        assert.equal(amount.account_number, target.accountNumber);
        assert.equal(amount.share_id, target.shareId);
        assert.equal(amount.record_locator, target.locator);
        assert.equal(amount.post_date, new Date().toISOString().slice(0, 10));
        assert.ok(Number.isInteger(amount.post_time) && Number(amount.sequence_number) > 0);
        const reference = rows.find((r) => r.field_name === 'Reference3')!;
        assert.equal(reference.data_type, 0);
        assert.equal(reference.new_character, 'BRANCH 7');
      });

      test('unchanged values and failed fields write nothing', async () => {
        await update(hold, 'P2', { Amount: 55.5 });
        const since = (await historyRows(h)).length;
        const response = await update(hold, 'P2', { Amount: 55.5, Reference1: 'y'.repeat(50) });
        assert.equal(response.json().UpdateStatus.isAllFieldsUpdateSuccess, false);
        assert.equal((await historyRows(h)).length, since);
      });
    });

    test('a failure part-way through leaves nothing applied', async () => {
      const target = targets.get('ShareHold')!;
      const before = await stored(h, hold, target, [fieldOf(hold, 'Amount')!, fieldOf(hold, 'Reference1')!]);
      const historyBefore = (await historyRows(h)).length;
      // The second history row fails to insert; the record update and the first row must roll back.
      await sql
        .raw(
          `create function refuse_reference1() returns trigger language plpgsql as $$
        begin if new.field_name = 'Reference1' then raise exception 'history store unavailable'; end if; return new; end $$`,
        )
        .execute(h.database.db);
      await sql
        .raw(
          `create trigger refuse_reference1 before insert on account_fm_history
        for each row execute function refuse_reference1()`,
        )
        .execute(h.database.db);
      try {
        const response = await update(hold, 'P2', { Amount: 999.99, Reference1: 'NEVER STORED' });
        assert.equal(response.statusCode, 500);
        assert.equal(response.json().code, 'INTERNAL');
        assert.doesNotMatch(response.body, /history store unavailable|account_fm_history|insert/);
      } finally {
        await sql.raw('drop trigger refuse_reference1 on account_fm_history').execute(h.database.db);
        await sql.raw('drop function refuse_reference1()').execute(h.database.db);
      }
      assert.deepEqual(await stored(h, hold, target, [fieldOf(hold, 'Amount')!, fieldOf(hold, 'Reference1')!]), before);
      assert.equal((await historyRows(h)).length, historyBefore);
    });

    test('two hundred parallel updates of one hold serialize: two hundred history rows, the last committed value stored', async () => {
      const target = targets.get('ShareHold')!;
      await update(hold, 'P2', { Amount: 0 });
      const since = Number((await historyRows(h)).at(-1)!.sequence_number);
      const amounts = Array.from({ length: 200 }, (_, i) => i + 1);
      const responses = await Promise.all(
        amounts.map((amount) => update(hold, amounts.length % 2 ? 'P1' : 'P2', { Amount: amount })),
      );
      assert.ok(responses.every((r) => r.statusCode === 200));
      const rows = await historyRows(h, sql`sequence_number > ${since} and field_name = 'Amount'`);
      assert.equal(rows.length, 200);
      // Serialized: each change starts from the value the previous one left.
      let previous = 0;
      for (const row of rows) {
        assert.equal(row.old_money, previous);
        previous = row.new_money as number;
      }
      assert.deepEqual((await stored(h, hold, target, [fieldOf(hold, 'Amount')!]))!.Amount, previous);
      assert.deepEqual(
        [...new Set(rows.map((r) => r.new_money))].sort((a, b) => (a as number) - (b as number)),
        amounts,
      );
    });

    describe('Idempotency-Key', () => {
      test('a retried update returns the first response without applying it again', async () => {
        await update(hold, 'P2', { Amount: 10 });
        const since = (await historyRows(h)).length;
        const headers = { 'idempotency-key': `retry-${backend.name}` };
        const first = await update(hold, 'P2', { Amount: 20 }, {}, headers);
        await update(hold, 'P2', { Amount: 30 });
        const retry = await update(hold, 'P2', { Amount: 20 }, {}, headers);
        assert.equal(retry.statusCode, 200);
        assert.equal(retry.body, first.body);
        assert.equal(retry.headers['idempotent-replayed'], 'true');
        const target = targets.get('ShareHold')!;
        assert.equal(
          (await stored(h, hold, target, [fieldOf(hold, 'Amount')!]))!.Amount,
          30,
          'the retry did not apply again',
        );
        assert.equal((await historyRows(h)).length, since + 2);
      });

      test('the same key with a different body is 422 IDEMPOTENCY_KEY_REUSED', async () => {
        const headers = { 'idempotency-key': `reuse-${backend.name}` };
        await update(hold, 'P2', { Amount: 41 }, {}, headers);
        const reused = await update(hold, 'P2', { Amount: 42 }, {}, headers);
        assert.equal(reused.statusCode, 422);
        assert.equal(reused.json().code, 'IDEMPOTENCY_KEY_REUSED');
      });

      test('parallel requests with one key apply once', async () => {
        const since = (await historyRows(h)).length;
        const headers = { 'idempotency-key': `parallel-${backend.name}` };
        const responses = await Promise.all(
          Array.from({ length: 10 }, () => update(hold, 'P2', { Amount: 314.15 }, {}, headers)),
        );
        assert.ok(responses.every((r) => r.statusCode === 200 && r.body === responses[0]!.body));
        assert.ok((await historyRows(h)).length <= since + 1);
      });

      test('a malformed key is 400', async () => {
        const response = await update(hold, 'P2', { Amount: 1 }, {}, { 'idempotency-key': 'é'.repeat(3) });
        assert.equal(response.statusCode, 400);
      });
    });

    test('property: random valid field subsets round-trip on every record and family', async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.constantFrom(...SHARE_UPDATE_RECORDS),
          fc.constantFrom(...FAMILIES),
          fc.integer({ min: 1, max: 2 ** 31 - 1 }),
          async (record, family, seed) => {
            const fields = updatable(record, family);
            const chosen = fc.sample(fc.subarray(fields, { minLength: 1, maxLength: Math.min(6, fields.length) }), {
              numRuns: 1,
              seed,
            })[0]!;
            const values = Object.fromEntries(chosen.map((f, i) => [f.name, sampleValue(f, seed + i)]));
            const response = await update(record, family, values);
            assert.equal(response.statusCode, 200, response.body);
            assert.equal(response.json().UpdateStatus.isAllFieldsUpdateSuccess, true, response.body);
            const saved = (await stored(h, record, targets.get(record.name)!, chosen))!;
            for (const field of chosen) {
              if (!field.repeating) {
                assert.deepEqual(saved[field.name], values[field.name], field.name);
                continue;
              }
              const entries = saved[field.name] as Record<string, unknown>[];
              for (const entry of values[field.name] as Record<string, unknown>[]) {
                assert.deepEqual(
                  entries.find((e) => e.EntryId === entry.EntryId),
                  entry,
                  field.name,
                );
              }
            }
          },
        ),
        { numRuns: 60 },
      );
    });

    test('property: random values of any JSON type never produce a 500', async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.constantFrom(...SHARE_UPDATE_RECORDS),
          fc.constantFrom(...FAMILIES),
          fc.integer({ min: 1, max: 2 ** 31 - 1 }),
          fc.array(fc.oneof(fc.jsonValue(), fc.string(), fc.double(), fc.integer({ min: -(2 ** 40), max: 2 ** 40 }))),
          async (record, family, seed, junk) => {
            const fields = record.fields.filter((f) => f.families.includes(family));
            const chosen = fc.sample(fc.subarray(fields, { minLength: 1, maxLength: Math.min(4, fields.length) }), {
              numRuns: 1,
              seed,
            })[0]!;
            const values = Object.fromEntries(
              chosen.map((f, i) => [f.name, junk.length > 0 ? junk[i % junk.length] : fc.sample(validValue(f), 1)[0]]),
            );
            const response = await update(record, family, values);
            assert.ok([200, 400].includes(response.statusCode), `${response.statusCode}: ${response.body}`);
          },
        ),
        { numRuns: 150 },
      );
    });
  });
}
