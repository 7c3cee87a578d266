/**
 * The store on its own, on each database: the record reader (one record with its nested child lists, field
 * selection, EntryId filters, list maximum, lists and pages), the share records of the update path, every
 * FindBy lookup, and the fixed tables (their declared rows match the DDL). The committed snapshot of the hot
 * queries matches what the code sends.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { messages, PGlite, protocol } from '@electric-sql/pglite';
import { CompiledQuery, Kysely, sql } from 'kysely';
import { fieldOf, recordDef, type RecordDef } from '../src/catalog/index.js';
import { secretsFromMaster } from '../src/crypto/secrets.js';
import { memberSecrets, settings } from '../src/store/access.js';
import type { Database, Db } from '../src/database/database.js';
import { idempotencyKeys } from '../src/store/idempotency.js';
import { PGliteDialect } from '../src/database/pglite-dialect.js';
import {
  bindMessage,
  describeMessage,
  executeMessage,
  parseMessage,
  readReply,
  syncMessage,
  type Parsers,
} from '../src/database/pglite-wire.js';
import { lookups } from '../src/store/lookups.js';
import { QUERY_SNAPSHOT_DIR, querySnapshotFile, renderQuerySnapshots } from '../src/store/query-snapshot.js';
import { recordTree, type ReadPlan } from '../src/store/record-tree.js';
import { toRow, type Row, type WireRecord } from '../src/store/records.js';
import { shareRecords } from '../src/store/share-records.js';
import type { FixedTables } from '../src/database/tables.js';
import { HOT_QUERIES } from '../scripts/hot-queries.js';
import { account, insert } from './support/fixtures.js';
import { BACKENDS, openTestDatabase } from './support/harness.js';

const secrets = secretsFromMaster(randomBytes(32));
const COLLATERAL = '7000000001';
const EMPTY_COLLATERAL = '7000000002';
const LIST_MAXIMUM = 1000;

/** A plan of the named fields (all readable fields when `names` is 'all') and the given child lists. */
function plan(recordName: string, names: readonly string[] | 'all', children: ReadPlan['children'] = []): ReadPlan {
  const record = recordDef(recordName);
  const fields =
    names === 'all' ? record.fields.filter((f) => !f.protection) : names.map((name) => fieldOf(record, name)!);
  return { record, fields, children };
}

const child = (list: string, childPlan: ReadPlan) => ({ list, plan: childPlan });

async function loadRecords(db: Db): Promise<void> {
  const keys = (extra: Row = {}) => ({ collateral_number: COLLATERAL, ...extra });
  await insert(db, secrets, 'Collateral', [
    { keys: keys(), Number: COLLATERAL, Description: 'TEST VEHICLE', Value: 25000, Type: 1, CreateDate: '2022-05-01' },
    { keys: { collateral_number: EMPTY_COLLATERAL }, Number: EMPTY_COLLATERAL, Description: 'NOTHING ATTACHED' },
  ]);
  await insert(
    db,
    secrets,
    'CollateralCollHold',
    [50, 150, 250].map((amount, i) => ({
      keys: keys(),
      Locator: i + 1,
      Amount: amount,
      EffectiveDate: '2024-01-0' + (i + 1),
    })),
  );
  await insert(
    db,
    secrets,
    'CollateralDocument',
    [1, 2, 3].map((n) => ({ keys: keys(), Locator: n, Description: `DOCUMENT ${n}`, Type: n })),
  );
  // Inserted out of order: lists come back in position order.
  await insert(
    db,
    secrets,
    'CollateralDocumentTracking',
    [3, 1, 2].flatMap((document) =>
      [2, 1].map((n) => ({ keys: keys({ document_locator: document }), Locator: n, UserChar1: `D${document}T${n}` })),
    ),
  );
  await insert(
    db,
    secrets,
    'CollateralFmHistory',
    [1, 2].map((n) => ({ keys: keys(), SequenceNumber: n, FieldName: 'Description', RecordName: 'Collateral' })),
  );
  await insert(db, secrets, 'CollateralTracking', [{ keys: keys(), Locator: 1, UserChar1: 'T1' }]);
  await insert(db, secrets, 'CorpTransfer', [
    {
      GlobalSequenceDate: '2024-01-31',
      GlobalSequence: 7,
      Amount: 125.5,
      Memo: [
        { EntryId: 1, Memo: 'FIRST' },
        { EntryId: 2, Memo: 'SECOND' },
      ],
    },
  ]);
}

async function loadShares(db: Db): Promise<void> {
  await insert(db, secrets, 'Share', [
    { keys: { account_number: account(1) }, Id: '0000', Description: 'SAVINGS', DivRate: 0.5 },
    { keys: { account_number: account(1) }, Id: '0001', Description: 'CHECKING' },
  ]);
  await insert(db, secrets, 'ShareHold', [
    { keys: { account_number: account(1), share_id: '0001' }, Locator: 3, Reference1: 'CHECK 1040' },
  ]);
}

async function loadLookups(db: Db): Promise<void> {
  const keys = (n: number) => ({ account_number: account(n) });
  await insert(db, secrets, 'Card', [
    { keys: keys(21), Locator: 1, CardNumber: '4000000000000002', Status: 0, ExpirationDate: '2099-12-31' },
    { keys: keys(22), Locator: 1, CardNumber: '4000000000000010', Status: 1, ExpirationDate: '2099-12-31' },
    { keys: keys(23), Locator: 1, CardNumber: '4000000000000028', Status: 0, ExpirationDate: '2020-01-31' },
  ]);
  await insert(db, secrets, 'HomeBankingUser', [{ keys: keys(24), Locator: 1, UserName: 'JSmith42', Status: 0 }]);
  await insert(db, secrets, 'Micr', [
    { keys: keys(25), Locator: 1, MicrNumber: '123456789012', Draft: '1', ShareId: '0010' },
    { keys: keys(25), Locator: 2, MicrNumber: '123456789012', Draft: '2', ShareId: '0011' },
  ]);
  await insert(db, secrets, 'Lookup', [
    { keys: keys(26), Locator: 1, LookupType: 5, LookupNumber: 'EMP-100', ShareId: '0001' },
    { keys: keys(27), Locator: 1, LookupType: 5, LookupNumber: 'EMP-200', ShareId: null },
  ]);
  await insert(db, secrets, 'ShareName', [
    { keys: { ...keys(30), share_id: null }, Locator: 1, Ssn: '123456789', ShortName: 'SMITH J' },
    { keys: { ...keys(29), share_id: '0000' }, Locator: 1, Ssn: '123456789', ShortName: 'smith j' },
    { keys: { ...keys(29), share_id: '0001' }, Locator: 2, Ssn: '123456789', ShortName: 'SMITH J' },
    { keys: { ...keys(28), share_id: null }, Locator: 1, Ssn: '987654321', ShortName: 'DOE A' },
  ]);
}

describe('table rows from wire records', () => {
  test('hold their columns in field order whatever order the values came in, so statements written from them read the same', () => {
    const share = recordDef('Share');
    const forward = toRow(share, { Description: 'A', Nickname: 'B', DivRate: 1.5 }, { account_number: '1' }, secrets);
    const backward = toRow(share, { DivRate: 1.5, Nickname: 'B', Description: 'A' }, { account_number: '1' }, secrets);
    assert.deepEqual(forward, backward);
    assert.deepEqual(Object.keys(backward), Object.keys(forward));
    const positions = ['Description', 'Nickname', 'DivRate'].map((name) =>
      share.fields.findIndex((f) => f.name === name),
    );
    const inFieldOrder = [...positions].sort((a, b) => a - b).map((position) => share.fields[position]!.column);
    assert.deepEqual(Object.keys(forward), ['account_number', ...inFieldOrder]);
  });

  test('leave out values not given and names that are not fields', () => {
    const row = toRow(recordDef('Share'), { Nickname: undefined, NoSuchField: 1, Description: null }, {}, secrets);
    assert.deepEqual(row, { description: null });
  });
});

describe('the query snapshots', () => {
  test('the committed snapshot of each store module of its hot queries matches the SQL the code sends (run npm run queries:snapshot after a query change)', async () => {
    const snapshots = await renderQuerySnapshots(HOT_QUERIES);
    for (const [module, text] of snapshots) assert.equal(readFileSync(querySnapshotFile(module), 'utf8'), text, module);
    const committed = readdirSync(QUERY_SNAPSHOT_DIR).filter((file) => file !== 'schema.sql');
    assert.deepEqual(
      committed.sort(),
      [...snapshots.keys()].map((module) => `${module}.sql`).sort(),
      'no stale snapshot',
    );
  });

  test('every snapshot names a store module that exists', async () => {
    for (const module of (await renderQuerySnapshots(HOT_QUERIES)).keys())
      assert.ok(existsSync(new URL(`../src/store/${module}.ts`, import.meta.url)), `src/store/${module}.ts`);
  });
});

describe('the embedded database, one connection shared by every request', () => {
  let database: Database;
  before(async () => {
    database = await openTestDatabase({});
  });
  after(async () => {
    await database.close();
  });

  test('lets the event loop turn while statements queue for the connection, so new clients are accepted meanwhile', async () => {
    const statements = 20;
    let done = 0;
    const queued = Array.from({ length: statements }, () =>
      sql`select pg_sleep(0.005)`.execute(database.db).then(() => (done += 1)),
    );
    // Runs at the event loop's next turn, where Node.js also accepts connections: before the queue drains.
    const doneAtNextTurn = new Promise<number>((resolve) => setImmediate(() => resolve(done)));
    await Promise.all(queued);
    assert.ok((await doneAtNextTurn) < statements, 'the queue ran to its end in one turn of the event loop');
  });

  test('keeps at most 200 statements prepared, letting the least recently used go', async () => {
    const db = database.db;
    const hot = 'select 1 as hot';
    const prepared = async () =>
      (await sql<{ statement: string }>`select statement from pg_prepared_statements`.execute(db)).rows.map(
        (row) => row.statement,
      );
    for (let i = 0; i < 300; i++) {
      assert.deepEqual((await sql.raw<{ n: number }>(`select ${i} as n`).execute(db)).rows, [{ n: i }]);
      if (i % 50 === 0) await sql.raw(hot).execute(db);
    }
    const kept = await prepared();
    assert.ok(kept.length <= 200, `${kept.length} statements prepared`);
    assert.ok(kept.includes(hot), 'a statement used now and then stays prepared');
    assert.ok(kept.includes('select 299 as n') && !kept.includes('select 0 as n'));
    assert.deepEqual((await sql.raw('select 0 as n').execute(db)).rows, [{ n: 0 }], 'one let go is prepared again');
  });

  describe("the connection's own reading of the wire protocol", () => {
    let pglite: PGlite;
    let db: Kysely<unknown>;
    before(async () => {
      pglite = await PGlite.create();
      db = new Kysely<unknown>({ dialect: new PGliteDialect(pglite) });
      await pglite.exec(
        `create table wire_probe (id integer primary key, name text not null constraint wire_probe_name unique)`,
      );
    });
    after(async () => {
      await db.destroy();
    });

    test("reads every value as PGlite's own query does: nulls, empty text, multi-byte text both ways, numbers, dates, bytes, JSON", async () => {
      const text = `select $1::text as sent, '' as empty, null::int as nothing, 42 as n, 9007199254740993::int8 as big,
        12.5::numeric as amount, 1.5::float8 as ratio, true as yes, date '2024-02-29' as day,
        timestamptz '2024-02-29 12:00:00+00' as at, '\\x00ff10'::bytea as bytes, '{"a": [1, "é"]}'::jsonb as doc,
        array[1, 2, 3] as list, 'Zoë 🐢 中文' as wide`;
      const sent = 'Ünïcødé 🐢 — 中文';
      const ours = await sql.raw<Record<string, unknown>>(text.replace('$1', `'${sent}'`)).execute(db);
      const bound = await db.executeQuery<Record<string, unknown>>(CompiledQuery.raw(text, [sent]));
      const theirs = await pglite.query<Record<string, unknown>>(text, [sent]);
      assert.deepEqual(bound.rows, theirs.rows);
      assert.deepEqual(ours.rows, theirs.rows);
      assert.equal(bound.rows[0]?.sent, sent);
    });

    test("its Bind says to the backend what PGlite's own serializer says: text values, nulls, multi-byte text", async () => {
      const values = ['Ünïcødé 🐢 — 中文', null, '42', ''];
      const text = 'select $1::text as a, $2::text as b, $3::int as c, $4::text as d';
      const run = async (bind: Uint8Array) => {
        const chunks: Buffer[] = [];
        const messages = [parseMessage('', text), bind, describeMessage('P'), executeMessage(), syncMessage()];
        await pglite.execProtocolRawStream(Buffer.concat(messages), {
          onRawData: (chunk) => void chunks.push(Buffer.from(chunk)),
        });
        return readReply(Buffer.concat(chunks), pglite.parsers as Parsers).results.map((result) => result.rows);
      };
      const theirs = await run(protocol.serialize.bind({ statement: '', values }));
      assert.deepEqual(await run(bindMessage('', values)), theirs);
      assert.deepEqual(theirs, [[{ a: values[0], b: null, c: 42, d: '' }]]);
    });

    test('says how many rows a statement changed', async () => {
      await db.executeQuery(CompiledQuery.raw(`insert into wire_probe values (1, 'a'), (2, 'b'), (3, 'c')`));
      const updated = await db.executeQuery(
        CompiledQuery.raw(`update wire_probe set name = name || '!' where id > $1`, [1]),
      );
      assert.equal(updated.numAffectedRows, 2n);
      const deleted = await db.executeQuery(CompiledQuery.raw(`delete from wire_probe where id = $1`, [3]));
      assert.equal(deleted.numAffectedRows, 1n);
    });

    test('reports a database error with its SQLSTATE, detail, table and constraint, and the connection goes on', async () => {
      const error = await db.executeQuery(CompiledQuery.raw(`insert into wire_probe values ($1, $2)`, [9, 'a'])).then(
        () => undefined,
        (failure: unknown) => failure,
      );
      assert.ok(error instanceof messages.DatabaseError, 'a DatabaseError, as PGlite reports one');
      assert.equal(error.code, '23505');
      assert.equal(error.severity, 'ERROR');
      assert.equal(error.table, 'wire_probe');
      assert.equal(error.constraint, 'wire_probe_name');
      assert.equal(error.detail, 'Key (name)=(a) already exists.');
      assert.match(error.message, /duplicate key value violates unique constraint "wire_probe_name"/);
      const syntax = await db.executeQuery(CompiledQuery.raw('selec 1')).then(
        () => undefined,
        (failure: unknown) => failure,
      );
      assert.equal((syntax as messages.DatabaseError).code, '42601');
      assert.deepEqual((await db.executeQuery(CompiledQuery.raw('select 1 as one'))).rows, [{ one: 1 }]);
    });

    test("a reply larger than one chunk of the backend's output arrives whole", async () => {
      const { rows } = await db.executeQuery<{ n: number; t: string }>(
        CompiledQuery.raw(`select g as n, repeat('é', 100) as t from generate_series(1, $1::int) g`, [20000]),
      );
      assert.equal(rows.length, 20000);
      assert.deepEqual(rows.at(-1), { n: 20000, t: 'é'.repeat(100) });
      assert.ok(rows.every((row, i) => row.n === i + 1 && row.t.length === 100));
    });
  });

  describe('transactions, whose begin goes with their first statement', () => {
    const db = () => database.db;
    before(async () => {
      await sql`create table tx_probe (n integer primary key)`.execute(db());
    });

    test('commit what they wrote, at the isolation level asked for', async () => {
      const level = await db()
        .transaction()
        .setIsolationLevel('serializable')
        .execute(async (tx) => {
          await sql`insert into tx_probe values (1)`.execute(tx);
          return (await sql<{ level: string }>`select current_setting('transaction_isolation') as level`.execute(tx))
            .rows[0]?.level;
        });
      assert.equal(level, 'serializable');
      assert.deepEqual((await sql`select n from tx_probe`.execute(db())).rows, [{ n: 1 }]);
    });

    test('roll back wholly when a later statement fails, and when the first one does', async () => {
      await assert.rejects(
        db()
          .transaction()
          .execute(async (tx) => {
            await sql`insert into tx_probe values (2)`.execute(tx);
            await sql`insert into tx_probe values (1)`.execute(tx);
          }),
        /duplicate key/,
      );
      await assert.rejects(
        db()
          .transaction()
          .execute(async (tx) => {
            await sql`select no_such_column from tx_probe`.execute(tx);
          }),
        /no_such_column/,
      );
      assert.deepEqual((await sql`select n from tx_probe order by n`.execute(db())).rows, [{ n: 1 }]);
      // A savepoint is refused outside a transaction block: the connection is left outside any transaction.
      await assert.rejects(sql`savepoint probe`.execute(db()), /only be used in transaction blocks/);
    });

    test('a transaction that runs nothing commits and rolls back cleanly', async () => {
      await db()
        .transaction()
        .execute(async () => undefined);
      await assert.rejects(
        db()
          .transaction()
          .execute(async () => {
            throw new Error('nothing done');
          }),
        /nothing done/,
      );
      assert.deepEqual((await sql`select count(*)::int as n from tx_probe`.execute(db())).rows, [{ n: 1 }]);
    });
  });
});

for (const backend of BACKENDS) {
  describe(`the store on ${backend.name}`, () => {
    let database: Database;
    let db: Db;
    before(async () => {
      database = await openTestDatabase(backend);
      db = database.db;
      await loadRecords(db);
      await loadShares(db);
      await loadLookups(db);
    });
    after(async () => {
      await database.close();
    });

    describe('the record reader', () => {
      const tree = () =>
        plan(
          'Collateral',
          ['Number', 'Description'],
          [
            child('CollateralCollHoldList', plan('CollateralCollHold', ['Locator', 'Amount'])),
            child(
              'CollateralDocumentList',
              plan(
                'CollateralDocument',
                ['Locator'],
                [child('CollateralDocumentTrackingList', plan('CollateralDocumentTracking', ['Locator', 'UserChar1']))],
              ),
            ),
            child('CollateralFmHistoryList', plan('CollateralFmHistory', ['SequenceNumber'])),
            child('CollateralTrackingList', plan('CollateralTracking', ['UserChar1'])),
          ],
        );

      test('reads a collateral with each of its child lists, in position order, and document tracking nested in each document', async () => {
        const tracking = (document: number) => ({
          hasReachedMaximumListSize: false,
          CollateralDocumentTracking: [1, 2].map((n) => ({ Locator: n, UserChar1: `D${document}T${n}` })),
        });
        assert.deepEqual(await recordTree.read(db, tree(), { collateral_number: COLLATERAL }, LIST_MAXIMUM), {
          Number: COLLATERAL,
          Description: 'TEST VEHICLE',
          CollateralCollHoldList: {
            hasReachedMaximumListSize: false,
            CollateralCollHold: [50, 150, 250].map((amount, i) => ({ Locator: i + 1, Amount: amount })),
          },
          CollateralDocumentList: {
            hasReachedMaximumListSize: false,
            CollateralDocument: [1, 2, 3].map((n) => ({ Locator: n, CollateralDocumentTrackingList: tracking(n) })),
          },
          CollateralFmHistoryList: {
            hasReachedMaximumListSize: false,
            CollateralFmHistory: [{ SequenceNumber: 1 }, { SequenceNumber: 2 }],
          },
          CollateralTrackingList: { hasReachedMaximumListSize: false, CollateralTracking: [{ UserChar1: 'T1' }] },
        });
      });

      test('one plan read again and again answers each read for its own key and list maximum', async () => {
        const kept = tree();
        const read = (collateral: string, maximum: number) =>
          recordTree.read(db, kept, { collateral_number: collateral }, maximum);
        const full = await read(COLLATERAL, LIST_MAXIMUM);
        assert.equal((await read(EMPTY_COLLATERAL, LIST_MAXIMUM))?.Number, EMPTY_COLLATERAL);
        assert.equal(await read('7999999999', LIST_MAXIMUM), undefined);
        const cut = await read(COLLATERAL, 2);
        assert.deepEqual(cut?.CollateralCollHoldList, {
          hasReachedMaximumListSize: true,
          CollateralCollHold: [50, 150].map((amount, i) => ({ Locator: i + 1, Amount: amount })),
        });
        assert.deepEqual(await read(COLLATERAL, LIST_MAXIMUM), full);
      });

      test('a record without children has each of its child lists empty', async () => {
        const found = await recordTree.read(db, tree(), { collateral_number: EMPTY_COLLATERAL }, LIST_MAXIMUM);
        assert.deepEqual(found?.CollateralCollHoldList, { hasReachedMaximumListSize: false, CollateralCollHold: [] });
        assert.deepEqual(found?.CollateralDocumentList, { hasReachedMaximumListSize: false, CollateralDocument: [] });
      });

      test('returns only the selected fields, typed as the catalog says, and only the child lists planned', async () => {
        const selected = plan(
          'Collateral',
          ['Value', 'CreateDate'],
          [child('CollateralTrackingList', plan('CollateralTracking', []))],
        );
        assert.deepEqual(await recordTree.read(db, selected, { collateral_number: COLLATERAL }, LIST_MAXIMUM), {
          Value: 25000,
          CreateDate: '2022-05-01',
          CollateralTrackingList: { hasReachedMaximumListSize: false, CollateralTracking: [{}] },
        });
      });

      test('a child list stops at the list maximum and sets hasReachedMaximumListSize', async () => {
        const found = await recordTree.read(db, tree(), { collateral_number: COLLATERAL }, 2);
        assert.deepEqual(found?.CollateralCollHoldList, {
          hasReachedMaximumListSize: true,
          CollateralCollHold: [
            { Locator: 1, Amount: 50 },
            { Locator: 2, Amount: 150 },
          ],
        });
        assert.equal(
          (found?.CollateralFmHistoryList as { hasReachedMaximumListSize: boolean }).hasReachedMaximumListSize,
          false,
        );
      });

      test("a child list's filter leaves out the records it does not match", async () => {
        const filtered = plan(
          'Collateral',
          [],
          [
            child('CollateralCollHoldList', {
              ...plan('CollateralCollHold', ['Locator']),
              filter: sql`"amount" > 100`,
            }),
          ],
        );
        const found = await recordTree.read(db, filtered, { collateral_number: COLLATERAL }, LIST_MAXIMUM);
        assert.deepEqual(found?.CollateralCollHoldList, {
          hasReachedMaximumListSize: false,
          CollateralCollHold: [{ Locator: 2 }, { Locator: 3 }],
        });
      });

      test('reads a record by a composite key, with EntryId filters applied to a repeating field', async () => {
        const corpTransfer = {
          ...plan('CorpTransfer', ['GlobalSequence', 'Amount', 'Memo']),
          entryFilters: new Map([['Memo', new Set([2])]]),
        };
        assert.deepEqual(
          await recordTree.read(db, corpTransfer, { global_sequence_date: '2024-01-31', global_sequence: 7 }),
          {
            GlobalSequence: 7,
            Amount: 125.5,
            Memo: [{ EntryId: 2, Memo: 'SECOND' }],
          },
        );
      });

      test('an unknown key reads nothing, and exists says whether a key names a record', async () => {
        assert.equal(await recordTree.read(db, tree(), { collateral_number: '7999999999' }, LIST_MAXIMUM), undefined);
        const document = recordDef('CollateralDocument');
        assert.equal(await recordTree.exists(db, document, { collateral_number: COLLATERAL, locator: 3 }), true);
        assert.equal(await recordTree.exists(db, document, { collateral_number: COLLATERAL, locator: 4 }), false);
      });

      test('child lists cannot be read without the list maximum', async () => {
        await assert.rejects(recordTree.read(db, tree(), { collateral_number: COLLATERAL }), /needs the list maximum/);
      });

      test('lists a page of children in position order, each with its own child lists, and says where the next page starts', async () => {
        const documents = plan(
          'CollateralDocument',
          ['Description'],
          [child('CollateralDocumentTrackingList', plan('CollateralDocumentTracking', ['Locator']))],
        );
        const parent = { collateral_number: COLLATERAL };
        const first = await recordTree.list(db, documents, parent, { limit: 2 }, LIST_MAXIMUM);
        const trackingList = {
          hasReachedMaximumListSize: false,
          CollateralDocumentTracking: [{ Locator: 1 }, { Locator: 2 }],
        };
        assert.deepEqual(first, {
          records: [1, 2].map((n) => ({ Description: `DOCUMENT ${n}`, CollateralDocumentTrackingList: trackingList })),
          more: true,
          lastPosition: 2,
        });
        const next = await recordTree.list(
          db,
          documents,
          parent,
          { limit: 2, after: first.lastPosition },
          LIST_MAXIMUM,
        );
        assert.deepEqual(next, {
          records: [{ Description: 'DOCUMENT 3', CollateralDocumentTrackingList: trackingList }],
          more: false,
          lastPosition: 3,
        });
      });

      test('a list skips records with an offset and passes only those its filter matches', async () => {
        const holds = { ...plan('CollateralCollHold', ['Locator']), filter: sql`"amount" > 100` };
        const page = await recordTree.list(
          db,
          holds,
          { collateral_number: COLLATERAL },
          { limit: 10, offset: 1 },
          LIST_MAXIMUM,
        );
        assert.deepEqual(page, { records: [{ Locator: 3 }], more: false, lastPosition: 3 });
        const none = await recordTree.list(
          db,
          holds,
          { collateral_number: EMPTY_COLLATERAL },
          { limit: 10 },
          LIST_MAXIMUM,
        );
        assert.deepEqual(none, { records: [], more: false, lastPosition: undefined });
      });
    });

    describe('share records', () => {
      const share = recordDef('Share');
      const hold = recordDef('ShareHold');
      const history = recordDef('AccountFmHistory');
      const historyRow = (
        record: RecordDef,
        fieldName: string,
        shareId: string,
        locator: number | null,
        change: WireRecord,
      ) =>
        toRow(
          history,
          {
            AccountNumber: account(1),
            RecordName: record.name,
            FieldName: fieldName,
            FmType: 1,
            PostDate: '2024-02-01',
            ...change,
          },
          { share_id: shareId, record_locator: locator },
          secrets,
        );
      const historyOf = async (fieldName: string) =>
        (
          await sql<Row>`select share_id, record_locator, old_character, new_character from account_fm_history
            where account_number = ${account(1)} and field_name = ${fieldName} order by sequence_number`.execute(db)
        ).rows;

      test('locks a share by account and share id, returning the columns of the fields asked for and its key', async () => {
        const fieldsNamed = (...names: string[]) => share.fields.filter((field) => names.includes(field.name));
        await db.transaction().execute(async (trx) => {
          const row = await shareRecords.lock(
            trx,
            share,
            { accountNumber: account(1), shareId: '0000', locator: undefined },
            fieldsNamed('Description', 'DivRate'),
          );
          assert.deepEqual(row, {
            account_number: account(1),
            share_id: '0000',
            description: 'SAVINGS',
            div_rate: 0.5,
          });
        });
      });

      test('locks a sub-record by account and locator; a ShareId given must match too', async () => {
        await db.transaction().execute(async (trx) => {
          const key = { accountNumber: account(1), shareId: undefined, locator: 3 };
          const reference1 = hold.fields.filter((field) => field.name === 'Reference1');
          assert.equal((await shareRecords.lock(trx, hold, key, reference1))?.reference1, 'CHECK 1040');
          assert.equal((await shareRecords.lock(trx, hold, { ...key, shareId: '0001' }, []))?.share_id, '0001');
          assert.equal(await shareRecords.lock(trx, hold, { ...key, shareId: '0000' }, []), undefined);
          assert.equal(await shareRecords.lock(trx, hold, { ...key, locator: 4 }, []), undefined);
        });
      });

      test('writes the changed columns of a share and appends its history in the same statement', async () => {
        const key = { accountNumber: account(1), shareId: '0000', locator: undefined };
        await db
          .transaction()
          .execute((trx) =>
            shareRecords.write(trx, share, key, { description: 'HOLIDAY', div_rate: 1.25 }, [
              historyRow(share, 'Description', '0000', null, { OldCharacter: 'SAVINGS', NewCharacter: 'HOLIDAY' }),
            ]),
          );
        const stored = await recordTree.read(db, plan('Share', ['Description', 'DivRate']), {
          account_number: account(1),
          share_id: '0000',
        });
        assert.deepEqual(stored, { Description: 'HOLIDAY', DivRate: 1.25 });
        assert.deepEqual(
          await recordTree.read(db, plan('Share', ['Description']), { account_number: account(1), share_id: '0001' }),
          {
            Description: 'CHECKING',
          },
        );
        assert.deepEqual(await historyOf('Description'), [
          { share_id: '0000', record_locator: null, old_character: 'SAVINGS', new_character: 'HOLIDAY' },
        ]);
      });

      test('writes a sub-record by its locator; columns alone, or history alone, are written too', async () => {
        const key = { accountNumber: account(1), shareId: undefined, locator: 3 };
        await db.transaction().execute((trx) => shareRecords.write(trx, hold, key, { reference1: 'CHECK 1041' }, []));
        await db
          .transaction()
          .execute((trx) =>
            shareRecords.write(trx, hold, key, {}, [
              historyRow(hold, 'Reference1', '0001', 3, { OldCharacter: 'CHECK 1040', NewCharacter: 'CHECK 1041' }),
            ]),
          );
        assert.deepEqual(
          await recordTree.read(db, plan('ShareHold', ['Reference1']), { account_number: account(1), locator: 3 }),
          {
            Reference1: 'CHECK 1041',
          },
        );
        assert.deepEqual(await historyOf('Reference1'), [
          { share_id: '0001', record_locator: 3, old_character: 'CHECK 1040', new_character: 'CHECK 1041' },
        ]);
      });
    });

    describe('lookups', () => {
      test('activeCard finds the account of an active, unexpired card only', async () => {
        assert.equal(await lookups.activeCard(db, secrets.lookupHash('pan', '4000000000000002')), account(21));
        assert.equal(
          await lookups.activeCard(db, secrets.lookupHash('pan', '4000000000000010')),
          undefined,
          'inactive',
        );
        assert.equal(await lookups.activeCard(db, secrets.lookupHash('pan', '4000000000000028')), undefined, 'expired');
        assert.equal(await lookups.activeCard(db, secrets.lookupHash('pan', '4111111111111111')), undefined, 'unknown');
      });

      test('anyCard finds the accounts of a card whatever its status or expiry', async () => {
        assert.deepEqual(await lookups.anyCard(db, secrets.lookupHash('pan', '4000000000000028')), [account(23)]);
        assert.deepEqual(await lookups.anyCard(db, secrets.lookupHash('pan', '4111111111111111')), []);
      });

      test('a card number is matched by its keyed HMAC: under another secret it finds nothing', async () => {
        assert.equal(
          await lookups.activeCard(db, secretsFromMaster(randomBytes(32)).lookupHash('pan', '4000000000000002')),
          undefined,
        );
      });

      test('homeBankingUser matches the user name case-insensitively', async () => {
        assert.equal(await lookups.homeBankingUser(db, 'jsmith42'), account(24));
        assert.equal(await lookups.homeBankingUser(db, 'JSMITH42'), account(24));
        assert.equal(await lookups.homeBankingUser(db, 'jsmith4'), undefined);
      });

      test('micr finds the account and share of a MICR number and draft; micrAccount the account of any draft', async () => {
        assert.deepEqual(await lookups.micr(db, secrets.lookupHash('micr', '123456789012'), '2'), {
          accountNumber: account(25),
          shareId: '0011',
        });
        assert.equal(await lookups.micr(db, secrets.lookupHash('micr', '123456789012'), '3'), undefined);
        assert.equal(await lookups.micrAccount(db, secrets.lookupHash('micr', '123456789012')), account(25));
        assert.equal(await lookups.micrAccount(db, secrets.lookupHash('micr', '999999999999')), undefined);
      });

      test('lookup finds the account of a type and number, with its share when the lookup names one', async () => {
        assert.deepEqual(await lookups.lookup(db, 5, 'EMP-100'), { accountNumber: account(26), shareId: '0001' });
        assert.deepEqual(await lookups.lookup(db, 5, 'EMP-200'), { accountNumber: account(27), shareId: null });
        assert.equal(await lookups.lookup(db, 6, 'EMP-100'), undefined, 'another type');
      });

      test('bySsn lists distinct accounts with an account- or share-level name carrying the SSN, ascending, up to the limit', async () => {
        assert.deepEqual(await lookups.bySsn(db, secrets.lookupHash('ssn', '123456789'), 10), [
          account(29),
          account(30),
        ]);
        assert.deepEqual(await lookups.bySsn(db, secrets.lookupHash('ssn', '123456789'), 1), [account(29)]);
        assert.deepEqual(await lookups.bySsn(db, secrets.lookupHash('ssn', '111223333'), 10), []);
      });

      test('byShortName lists distinct accounts with a name of that short name, case-insensitive, ascending', async () => {
        assert.deepEqual(await lookups.byShortName(db, 'Smith J', 10), [account(29), account(30)]);
        assert.deepEqual(await lookups.byShortName(db, 'DOE', 10), []);
      });
    });

    describe('the fixed tables', () => {
      /** Every column of every fixed table, as `FixedTables` declares them: the compiler checks this list against the type. */
      const DECLARED = {
        coregate_setting: { key: true, value: true },
        api_token: {
          id: true,
          name: true,
          token_hash: true,
          scopes: true,
          created_at: true,
          expires_at: true,
          revoked_at: true,
          last_used_at: true,
        },
        idempotency_key: {
          token_name: true,
          key: true,
          request_hash: true,
          status: true,
          response: true,
          created_at: true,
        },
        session: {
          token_hash: true,
          token_name: true,
          user_number: true,
          created_at: true,
          last_used_at: true,
          ended_at: true,
        },
        member_secret: { account_number: true, home_banking_password_hash: true, audio_access_code_hash: true },
        credential_lockout: { subject: true, failures: true, locks: true, locked_until: true, failed_at: true },
        credential_slowdown: { credential: true, failures_until: true },
        audit_event: {
          id: true,
          at: true,
          request_id: true,
          token_name: true,
          user_number: true,
          member_account: true,
          operation: true,
          account_numbers: true,
          collateral_number: true,
          status: true,
          code: true,
          core_latency_ms: true,
          core_outcome: true,
          target: true,
          trace_id: true,
        },
        app_user: { user_number: true, name: true, password_hash: true, created_at: true, disabled_at: true },
        coregate_migration: { id: true, checksum: true, applied_at: true },
        coregate_store_secret: { singleton: true, fingerprint: true, recorded_at: true },
        fault_rule: {
          id: true,
          operations: true,
          face: true,
          effect: true,
          probability: true,
          times: true,
          remaining: true,
          fired: true,
          until: true,
          created_at: true,
          created_by: true,
        },
      } satisfies { [Table in keyof FixedTables]: Record<keyof FixedTables[Table], true> };

      test('FixedTables declares exactly the columns of the tables the migrations create', async () => {
        const { rows } = await sql<{ table_name: string; column_name: string }>`
          select table_name, column_name from information_schema.columns
          where table_schema = current_schema() and table_name in (${sql.join(Object.keys(DECLARED))})
          order by table_name, column_name`.execute(db);
        const actual: Record<string, string[]> = {};
        for (const row of rows) (actual[row.table_name] ??= []).push(row.column_name);
        const declared = Object.fromEntries(
          Object.entries(DECLARED).map(([table, columns]) => [table, Object.keys(columns).sort()]),
        );
        assert.deepEqual(
          actual,
          Object.fromEntries(
            Object.keys(declared)
              .sort()
              .map((table) => [table, declared[table]]),
          ),
        );
      });

      test('a setting set twice keeps the second value (on conflict do update)', async () => {
        await settings.set(db, 'store_test', 'one');
        await settings.set(db, 'store_test', 'two');
        assert.equal(await settings.get(db, 'store_test'), 'two');
        assert.equal(await settings.get(db, 'store_test_unset'), undefined);
      });

      test('a member secret left out keeps its stored value', async () => {
        await memberSecrets.set(db, account(40), { homeBankingPasswordHash: 'hb', audioAccessCodeHash: 'audio' });
        await memberSecrets.set(db, account(40), { audioAccessCodeHash: 'audio-2' });
        assert.deepEqual(await memberSecrets.find(db, account(40)), {
          homeBankingPasswordHash: 'hb',
          audioAccessCodeHash: 'audio-2',
        });
      });

      test('an idempotency key is reserved once, then replayed with its response, or refused for another request', async () => {
        const reserve = (hash: string) =>
          db.transaction().execute((trx) => idempotencyKeys.reserve(trx, 'store-test', 'key-1', hash, 24));
        assert.equal((await reserve('a'.repeat(64))).kind, 'reserved');
        await idempotencyKeys.complete(db, 'store-test', 'key-1', 200, { ok: true });
        assert.deepEqual(await reserve('a'.repeat(64)), { kind: 'replay', status: 200, response: { ok: true } });
        assert.deepEqual(await reserve('b'.repeat(64)), { kind: 'conflict' });
      });

      test('a late change to a key names its reservation: it leaves a later reservation of the key alone', async () => {
        const hash = 'c'.repeat(64);
        const reserve = () => idempotencyKeys.reserve(db, 'store-test', 'key-late', hash, 24);
        const pending = async () =>
          (
            await sql<{ status: number | null }>`select status from idempotency_key
              where token_name = 'store-test' and key = 'key-late'`.execute(db)
          ).rows;
        const first = await reserve();
        assert.equal(first.kind, 'reserved');
        const firstStamp = (first as { stamp: string }).stamp;
        await idempotencyKeys.release(db, 'store-test', 'key-late', firstStamp);
        assert.deepEqual(await pending(), [], 'released');
        const second = await reserve();
        assert.equal(second.kind, 'reserved');
        assert.notEqual((second as { stamp: string }).stamp, firstStamp);
        // The first attempt's release and answer, written late (store/key-writes.ts), find no reservation of theirs.
        await idempotencyKeys.release(db, 'store-test', 'key-late', firstStamp);
        await idempotencyKeys.complete(db, 'store-test', 'key-late', 504, { code: 'CORE_TIMEOUT' }, firstStamp);
        assert.deepEqual(await pending(), [{ status: null }], 'the second reservation, untouched');
        await idempotencyKeys.complete(
          db,
          'store-test',
          'key-late',
          200,
          { ok: 2 },
          (second as { stamp: string }).stamp,
        );
        assert.deepEqual(await reserve(), { kind: 'replay', status: 200, response: { ok: 2 } });
      });
    });
  });
}
