/**
 * FindBy and collateral answers kept in memory (store/answer-cache.ts): served again only while nothing they read has
 * changed; never after a committed change, whoever made it: this instance, another instance on the same
 * database, or any other client of it.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import type { Db } from '../src/database/database.js';
import { AnswerCache, answerCache, existingAnswerCache } from '../src/store/answer-cache.js';
import { LOOKUP_COLUMNS } from '../src/database/schema.js';
import { GENERATION_TABLES } from '../src/database/schema.js';
import { recordDef, type RecordDef } from '../src/catalog/index.js';
import { querySnapshotFile } from '../src/store/query-snapshot.js';
import { account, insert } from './support/fixtures.js';
import { BACKENDS, createHarness, openTestDatabase, type Harness } from './support/harness.js';

const P1 = '/gw/627/persistent/findby';
const SHARE_NAME_UPDATE = '/gw/627/persistent/account/updateShareNameByID';
const P2 = '/gw/627/2022.01/collateral';

async function loadFixtures(h: Harness): Promise<void> {
  const { db } = h.database;
  const keys = (n: number) => ({ account_number: account(n) });
  await insert(db, h.secrets, 'Card', [
    { keys: keys(1), Locator: 1, CardNumber: '4000000000000002', Status: 0, ExpirationDate: '2099-12-31' },
    { keys: keys(2), Locator: 1, CardNumber: '4000000000000036', Status: 1, ExpirationDate: '2099-12-31' },
    { keys: keys(3), Locator: 1, CardNumber: '4000000000000036', Status: 0, ExpirationDate: '2099-12-31' },
  ]);
  await insert(db, h.secrets, 'HomeBankingUser', [{ keys: keys(6), Locator: 1, UserName: 'JSmith42', Status: 0 }]);
  await insert(db, h.secrets, 'Micr', [
    { keys: keys(7), Locator: 1, MicrNumber: '123456789012', Draft: '1', ShareId: '0010' },
  ]);
  await insert(db, h.secrets, 'Lookup', [
    { keys: keys(8), Locator: 1, LookupType: 5, LookupNumber: 'EMP-100', ShareId: '0001' },
  ]);
  await insert(db, h.secrets, 'ShareName', [
    { keys: { ...keys(10), share_id: null }, Locator: 1, Ssn: '123456789', ShortName: 'SMITH J', Last: 'Smith' },
    { keys: { ...keys(11), share_id: null }, Locator: 1, Ssn: '123456789', ShortName: 'SMITH J', Last: 'Smith' },
    { keys: { ...keys(12), share_id: '0001' }, Locator: 3, Ssn: '555443333', ShortName: 'DOE A', Last: 'Doe' },
  ]);
}

/** A change made by another client of the database, and what the lookup answers before and after it. */
interface Case {
  readonly title: string;
  readonly operation: string;
  readonly body: Record<string, unknown>;
  readonly change: (db: Db, h: Harness) => Promise<unknown>;
  readonly before: unknown;
  readonly after: unknown;
}

const CASES: readonly Case[] = [
  {
    title: 'an SSN changed on a name record',
    operation: 'findBySSN',
    body: { SSN: '123456789' },
    change: (db, h) =>
      sql`update share_name set ssn_hmac = ${h.secrets.lookupHash('ssn', '999887777')}
        where account_number = ${account(11)}`.execute(db),
    before: { AccountNumber: [account(10), account(11)], MessageId: 'findBySSN' },
    after: { AccountNumber: [account(10)], MessageId: 'findBySSN' },
  },
  {
    title: 'a name record inserted',
    operation: 'findByShortName',
    body: { ShortName: 'DOE A' },
    change: (db, h) =>
      insert(db, h.secrets, 'ShareName', [
        { keys: { account_number: account(9), share_id: null }, Locator: 1, ShortName: 'DOE A' },
      ]),
    before: { AccountNumber: [account(12)] },
    after: { AccountNumber: [account(9), account(12)] },
  },
  {
    title: 'a card deactivated',
    operation: 'findByActiveCard',
    body: { CardNumber: '4000000000000002' },
    change: (db) => sql`update card set status = 1 where account_number = ${account(1)}`.execute(db),
    before: { AccountNumber: account(1), MessageId: 'findByActiveCard' },
    after: { AccountNumber: null, MessageId: 'findByActiveCard' },
  },
  {
    title: 'a card expired',
    operation: 'findByActiveCard',
    body: { CardNumber: '4000000000000036' },
    change: (db) =>
      sql`update card set expiration_date = '2020-01-31' where account_number = ${account(3)}`.execute(db),
    before: { AccountNumber: account(3), MessageId: 'findByActiveCard' },
    after: { AccountNumber: null, MessageId: 'findByActiveCard' },
  },
  {
    title: 'a card deleted',
    operation: 'findByAnyCard',
    body: { CardNumber: '4000000000000036' },
    change: (db) => sql`delete from card where account_number = ${account(2)}`.execute(db),
    before: { AccountNumber: [account(2), account(3)], MessageId: 'findByAnyCard', Version_1: null, _value_1: null },
    after: { AccountNumber: [account(3)], MessageId: 'findByAnyCard', Version_1: null, _value_1: null },
  },
  {
    title: 'a home-banking user renamed',
    operation: 'findByHomeUser',
    body: { HomeBankingUserName: 'jsmith42' },
    change: (db) => sql`update home_banking_user set user_name = 'JSMITH43'`.execute(db),
    before: { AccountNumber: account(6), MessageId: 'findByHomeUser' },
    after: { AccountNumber: null, MessageId: 'findByHomeUser' },
  },
  {
    title: 'a MICR moved to another share',
    operation: 'findByMICR',
    body: { MICR: '123456789012', Draft: '1' },
    change: (db) => sql`update micr set share_id = '0020'`.execute(db),
    before: { Result: { AccountNumber: account(7), IdType: 'SHARE', Id: '0010' }, MessageId: 'findByMICR' },
    after: { Result: { AccountNumber: account(7), IdType: 'SHARE', Id: '0020' }, MessageId: 'findByMICR' },
  },
  {
    title: 'a lookup number changed',
    operation: 'findByLookup',
    body: { LookupType: 5, LookupNumber: 'EMP-100' },
    change: (db) => sql`update lookup set lookup_number = 'EMP-101'`.execute(db),
    before: {
      Result: { AccountNumber: account(8), IdType: 'SHARE', Id: '0001' },
      AccountNumber: account(8),
      MessageId: 'findByLookup',
    },
    after: { Result: null, AccountNumber: null, MessageId: 'findByLookup' },
  },
  {
    title: 'the name records truncated',
    operation: 'findBySSN',
    body: { SSN: '555443333' },
    change: (db) => sql`truncate share_name`.execute(db),
    before: { AccountNumber: [account(12)], MessageId: 'findBySSN' },
    after: { AccountNumber: [], MessageId: 'findBySSN' },
  },
];

for (const backend of BACKENDS) {
  describe(`FindBy answers from memory on ${backend.name}`, () => {
    let h: Harness;
    /** The database as another client sees it: another instance's connections on PostgreSQL. */
    let otherClient: Db;
    before(async () => {
      h = await createHarness(backend);
      await loadFixtures(h);
      otherClient = backend.url ? (await h.anotherInstance()).db : h.database.db;
    });
    after(() => h.close());

    const cache = () => answerCache(h.database.db, 'lookup', h.config.lookupCacheEntries)!;
    const find = async (call: Harness['call'], operation: string, body: Record<string, unknown>) => {
      const response = await call(`${P1}/${operation}`, body);
      assert.equal(response.statusCode, 200, response.body);
      return response.json();
    };

    test('a lookup asked again with nothing changed is answered from memory', async () => {
      const body = { SSN: '123456789' };
      const first = await find(h.call, 'findBySSN', body);
      const { hits } = cache().counts;
      assert.deepEqual(await find(h.call, 'findBySSN', body), first);
      assert.equal(cache().counts.hits, hits + 1);
    });

    test('a change to a column no lookup reads keeps the answers in memory', async () => {
      const body = { SSN: '123456789' };
      await find(h.call, 'findBySSN', body);
      await sql`update share_name set last = 'Smythe' where account_number = ${account(10)}`.execute(otherClient);
      const { hits } = cache().counts;
      await find(h.call, 'findBySSN', body);
      assert.equal(cache().counts.hits, hits + 1);
    });

    // In order: each case's change leaves the fixtures as the later cases expect them.
    for (const c of CASES) {
      test(`${c.operation} sees ${c.title} by another client at once`, async () => {
        assert.deepEqual(await find(h.call, c.operation, c.body), c.before);
        assert.deepEqual(await find(h.call, c.operation, c.body), c.before, 'answered again, from memory');
        await c.change(otherClient, h);
        assert.deepEqual(await find(h.call, c.operation, c.body), c.after);
      });
    }

    // On PostgreSQL: the embedded database has one connection, on which nothing runs concurrently.
    if (backend.url)
      test('transactions changing different lookup tables do not wait for each other (the sessions of a bulk load)', async () => {
        let release!: () => void;
        const held = new Promise<void>((resolve) => (release = resolve));
        let entered!: () => void;
        const inside = new Promise<void>((resolve) => (entered = resolve));
        const first = h.database.db.transaction().execute(async (trx) => {
          await sql`update card set status = status where account_number = ${account(1)}`.execute(trx);
          entered();
          await held;
        });
        await inside;
        // Would wait for the first transaction to end, and fail after the lock timeout, were they to share a counter.
        await otherClient.transaction().execute(async (trx) => {
          await sql`set local lock_timeout = '2s'`.execute(trx);
          await sql`update share_name set short_name = short_name where account_number = ${account(10)}`.execute(trx);
        });
        release();
        await first;
      });
  });
}

/** A share name's short name, written through the API of an instance. */
async function rename(call: Harness['call'], shortName: string): Promise<void> {
  const response = await call(SHARE_NAME_UPDATE, {
    AccountNumber: account(20),
    ShareNameLocator: 1,
    ShareNameFields: { ShortName: shortName },
  });
  assert.equal(response.statusCode, 200, response.body);
  assert.equal(response.json().UpdateStatus.isAllFieldsUpdateSuccess, true, response.body);
}

for (const backend of BACKENDS) {
  describe(`FindBy answers after an update through the API on ${backend.name}`, () => {
    let h: Harness;
    /** Where lookups are asked: another instance on PostgreSQL, the same one on the embedded database. */
    let reader: Harness['call'];
    before(async () => {
      h = await createHarness(backend);
      await insert(h.database.db, h.secrets, 'ShareName', [
        { keys: { account_number: account(20), share_id: null }, Locator: 1, ShortName: 'NAME 0' },
      ]);
      reader = backend.url ? (await h.anotherInstance()).call : h.call;
    });
    after(() => h.close());

    const accountsNamed = async (shortName: string) => {
      const response = await reader(`${P1}/findByShortName`, { ShortName: shortName });
      assert.equal(response.statusCode, 200, response.body);
      return (response.json() as { AccountNumber: string[] }).AccountNumber;
    };

    test('every lookup after an acknowledged update answers as of the update, while other lookups keep arriving', async () => {
      // Lookups of both names keep arriving throughout, so a read of the generation is always in flight
      // when the update is acknowledged and the lookup that must see it arrives.
      let running = true;
      const background = (async () => {
        let asked = 0;
        while (running) {
          await Promise.all([accountsNamed('NAME 0'), accountsNamed('OTHER')]);
          asked += 2;
        }
        return asked;
      })();
      for (let i = 1; i <= 30; i += 1) {
        assert.deepEqual(await accountsNamed(`NAME ${i - 1}`), [account(20)]);
        assert.deepEqual(await accountsNamed(`NAME ${i}`), []);
        await rename(h.call, `NAME ${i}`);
        assert.deepEqual(await accountsNamed(`NAME ${i}`), [account(20)], `after rename ${i}`);
        assert.deepEqual(await accountsNamed(`NAME ${i - 1}`), [], `the old name after rename ${i}`);
      }
      running = false;
      assert.ok((await background) > 0);
    });
  });
}

const COLLATERAL = '7000000001';
const collateralKeys = (extra: Record<string, unknown> = {}) => ({ collateral_number: COLLATERAL, ...extra });

/** One collateral with a record of every kind in its tree. */
async function loadCollateral(h: Harness): Promise<void> {
  const { db } = h.database;
  const k = collateralKeys();
  await insert(db, h.secrets, 'Collateral', [
    { keys: k, Number: COLLATERAL, Description: 'TEST VEHICLE', Value: 25000 },
  ]);
  await insert(db, h.secrets, 'CollateralCollHold', [
    { keys: k, Locator: 1, Amount: 50 },
    { keys: k, Locator: 2, Amount: 150 },
  ]);
  await insert(db, h.secrets, 'CollateralDocument', [{ keys: k, Locator: 1, Description: 'TITLE' }]);
  await insert(db, h.secrets, 'CollateralDocumentTracking', [
    { keys: collateralKeys({ document_locator: 1 }), Locator: 1, UserChar1: 'FILED' },
  ]);
  await insert(db, h.secrets, 'CollateralFmHistory', [{ keys: k, SequenceNumber: 1, FieldName: 'Value' }]);
  await insert(db, h.secrets, 'CollateralTracking', [{ keys: k, Locator: 1, UserChar1: 'T1' }]);
}

interface Tree {
  Collateral: {
    Description: string;
    CollateralCollHoldList: { CollateralCollHold: { Amount: number }[] };
    CollateralDocumentList: {
      CollateralDocument: {
        Description: string;
        CollateralDocumentTrackingList: { CollateralDocumentTracking: { UserChar1: string }[] };
      }[];
    };
    CollateralFmHistoryList: { CollateralFmHistory: unknown[] };
    CollateralTrackingList: { CollateralTracking: { UserChar1: string }[] };
  };
}

/** A change to one table of the collateral tree by another client, and what it shows in the tree. */
interface TreeCase {
  readonly table: string;
  readonly title: string;
  readonly change: (db: Db, h: Harness) => Promise<unknown>;
  /** The part of the tree the change shows in, before and after it. */
  readonly seen: (tree: Tree) => unknown;
  readonly before: unknown;
  readonly after: unknown;
}

const TREE_CASES: readonly TreeCase[] = [
  {
    table: 'collateral',
    title: 'the collateral described anew',
    change: (db) => sql`update collateral set description = 'TEST TRUCK'`.execute(db),
    seen: (tree) => tree.Collateral.Description,
    before: 'TEST VEHICLE',
    after: 'TEST TRUCK',
  },
  {
    table: 'collateral_coll_hold',
    title: 'a hold deleted',
    change: (db) => sql`delete from collateral_coll_hold where locator = 2`.execute(db),
    seen: (tree) => tree.Collateral.CollateralCollHoldList.CollateralCollHold.map((hold) => hold.Amount),
    before: [50, 150],
    after: [50],
  },
  {
    table: 'collateral_document',
    title: 'a document inserted',
    change: (db, h) =>
      insert(db, h.secrets, 'CollateralDocument', [{ keys: collateralKeys(), Locator: 2, Description: 'LIEN' }]),
    seen: (tree) => tree.Collateral.CollateralDocumentList.CollateralDocument.map((d) => d.Description),
    before: ['TITLE'],
    after: ['TITLE', 'LIEN'],
  },
  {
    table: 'collateral_document_tracking',
    title: "a document's tracking record changed, two levels down",
    change: (db) => sql`update collateral_document_tracking set user_char1 = 'RETURNED'`.execute(db),
    seen: (tree) =>
      tree.Collateral.CollateralDocumentList.CollateralDocument[0]!.CollateralDocumentTrackingList
        .CollateralDocumentTracking[0]!.UserChar1,
    before: 'FILED',
    after: 'RETURNED',
  },
  {
    table: 'collateral_fm_history',
    title: 'the history truncated',
    change: (db) => sql`truncate collateral_fm_history`.execute(db),
    seen: (tree) => tree.Collateral.CollateralFmHistoryList.CollateralFmHistory.length,
    before: 1,
    after: 0,
  },
  {
    table: 'collateral_tracking',
    title: 'a tracking record changed',
    change: (db) => sql`update collateral_tracking set user_char1 = 'T2'`.execute(db),
    seen: (tree) => tree.Collateral.CollateralTrackingList.CollateralTracking[0]!.UserChar1,
    before: 'T1',
    after: 'T2',
  },
];

for (const backend of BACKENDS) {
  describe(`collateral answers from memory on ${backend.name}`, () => {
    let h: Harness;
    /** The database as another client sees it: another instance's connections on PostgreSQL. */
    let otherClient: Db;
    before(async () => {
      h = await createHarness(backend);
      await loadCollateral(h);
      otherClient = backend.url ? (await h.anotherInstance()).db : h.database.db;
    });
    after(() => h.close());

    const cache = () => existingAnswerCache(h.database.db, 'collateral')!;
    const read = async (operation: string, body: Record<string, unknown> = {}) => {
      const response = await h.call(`${P2}/${operation}`, { CollateralNumber: COLLATERAL, ...body });
      assert.equal(response.statusCode, 200, response.body);
      return response.json() as Tree;
    };

    test('a record read again with nothing changed is answered from memory', async () => {
      const first = await read('getCollateral');
      const { hits } = cache().counts;
      assert.deepEqual(await read('getCollateral'), first);
      assert.equal(cache().counts.hits, hits + 1);
    });

    test('each selection of fields is an answer of its own', async () => {
      const described = await read('getCollateralSelectFields', {
        SelectableFields: { CollateralFields: { Description: true } },
      });
      const valued = await read('getCollateralSelectFields', {
        SelectableFields: { CollateralFields: { Value: true } },
      });
      assert.deepEqual(described.Collateral, { Description: 'TEST VEHICLE' });
      assert.deepEqual(valued.Collateral, { Value: 25000 });
    });

    test('a change to a table outside the collateral tree keeps the answers in memory', async () => {
      await read('getCollateral');
      await sql`update coregate_lookup_generation set generation = generation + 1 where table_name = 'card'`.execute(
        otherClient,
      );
      const { hits } = cache().counts;
      await read('getCollateral');
      assert.equal(cache().counts.hits, hits + 1);
    });

    test('a record not found is found once it is inserted', async () => {
      const missing = { CollateralNumber: '7000000009' };
      assert.equal((await h.call(`${P2}/getCollateral`, missing)).statusCode, 404);
      assert.equal((await h.call(`${P2}/getCollateral`, missing)).statusCode, 404);
      await insert(otherClient, h.secrets, 'Collateral', [
        { keys: { collateral_number: '7000000009' }, Number: '7000000009' },
      ]);
      assert.equal((await h.call(`${P2}/getCollateral`, missing)).statusCode, 200);
    });

    // In order: each case's change leaves the fixtures as the later cases expect them.
    for (const c of TREE_CASES) {
      test(`a collateral read sees ${c.title} by another client at once`, async () => {
        assert.deepEqual(c.seen(await read('getCollateral')), c.before);
        assert.deepEqual(c.seen(await read('getCollateral')), c.before, 'answered again, from memory');
        await c.change(otherClient, h);
        assert.deepEqual(c.seen(await read('getCollateral')), c.after);
      });
    }
  });
}

/** Every record type nested under a record, to any depth. */
const descendants = (record: RecordDef): RecordDef[] =>
  record.children.flatMap((child) => [recordDef(child.record), ...descendants(recordDef(child.record))]);

describe('the answer cache', () => {
  let database: Awaited<ReturnType<typeof openTestDatabase>>;
  before(async () => {
    database = await openTestDatabase({});
  });
  after(() => database.close());

  test('every column a lookup query reads is one whose change moves the generation', async () => {
    // The lookups' SQL as the store sends it (a test keeps the snapshot equal to what the code builds).
    const snapshot = readFileSync(querySnapshotFile('lookups'), 'utf8');
    const queries = [...snapshot.matchAll(/^-- (findBy\w+) \(2 of 2\)\n([^;]*);$/gm)];
    assert.equal(queries.length, 7, 'one query of each lookup');
    for (const [, name, query = ''] of queries) {
      const table = /\bfrom (\w+)/.exec(query)?.[1] ?? '';
      const { rows } = await sql<{ column_name: string }>`select column_name from information_schema.columns
        where table_schema = current_schema() and table_name = ${table}`.execute(database.db);
      const read = rows.map((row) => row.column_name).filter((column) => new RegExp(`\\b${column}\\b`).test(query));
      assert.ok(read.length > 0, `${name}: no column of ${table} found in its query`);
      const unwatched = read.filter((column) => !LOOKUP_COLUMNS[table]?.includes(column));
      assert.deepEqual(unwatched, [], `${name} reads columns of ${table} that LOOKUP_COLUMNS does not name`);
    }
  });

  test('a change to every table of the collateral tree is seen by the next collateral read (a case each)', () => {
    const tables = [recordDef('Collateral'), ...descendants(recordDef('Collateral'))].map((record) => record.table);
    assert.deepEqual(Object.keys(GENERATION_TABLES.collateral).sort(), [...tables].sort());
    assert.deepEqual(TREE_CASES.map((c) => c.table).sort(), [...tables].sort());
  });

  test('keeps answers up to its capacity by their weight, dropping the least recently used', async () => {
    const cache = new AnswerCache(database.db, 'collateral', 10, (value) => String(value).length);
    const reads: string[] = [];
    const answer = (key: string) =>
      cache.answer(key, async () => {
        reads.push(key);
        return key.repeat(4);
      });
    await answer('a');
    await answer('b');
    await answer('a'); // a is now the most recently used
    await answer('c'); // 12 > 10: drops b
    assert.deepEqual([cache.size, cache.weight], [2, 8]);
    await answer('a');
    await answer('b');
    assert.deepEqual(reads, ['a', 'b', 'c', 'b']);
  });

  test('an answer heavier than the whole capacity is answered but not kept', async () => {
    const cache = new AnswerCache(database.db, 'collateral', 10, (value) => String(value).length);
    assert.equal(await cache.answer('big', async () => 'x'.repeat(11)), 'x'.repeat(11));
    assert.deepEqual([cache.size, cache.weight], [0, 0]);
    await cache.answer('big', async () => 'x'.repeat(11));
    assert.equal(cache.counts.misses, 2);
  });

  test('keeps at most its number of answers, dropping the least recently used', async () => {
    const cache = new AnswerCache(database.db, 'lookup', 2);
    const reads: string[] = [];
    const answer = (key: string) =>
      cache.answer(key, async () => {
        reads.push(key);
        return [key];
      });
    await answer('a');
    await answer('b');
    await answer('a'); // a is now the most recently used
    await answer('c'); // drops b
    assert.equal(cache.size, 2);
    await answer('a');
    await answer('b');
    assert.deepEqual(reads, ['a', 'b', 'c', 'b']);
  });

  test('a lookup arriving while the generation is being read waits for the next read; those waiting share it', async () => {
    const cache = new AnswerCache(database.db, 'lookup', 10);
    const read = async () => ['0000000001'];
    const first = cache.answer('k', read); // sends a read
    const second = cache.answer('k', read); // arrives after it was sent: waits for the next
    const third = cache.answer('k', read); // joins the second's
    await Promise.all([first, second, third]);
    assert.equal(cache.counts.generationReads, 2);
    assert.deepEqual(cache.counts, { hits: 2, misses: 1, generationReads: 2 });
  });

  test('an answer kept is frozen: a request cannot change what the next one is served', async () => {
    const cache = new AnswerCache(database.db, 'lookup', 10);
    const kept = await cache.answer('k', async () => ({ AccountNumber: ['0000000001'] }));
    assert.throws(() => kept.AccountNumber.push('0000000002'), TypeError);
  });

  test('with no entries allowed there is no cache: every lookup reads the database', () => {
    assert.equal(answerCache(database.db, 'lookup', 0), undefined);
  });

  test('a lookup whose generation cannot be read fails, even with its answer in memory', async () => {
    const own = await openTestDatabase({});
    const cache = new AnswerCache(own.db, 'lookup', 10);
    assert.deepEqual(await cache.answer('k', async () => ['0000000001']), ['0000000001']);
    await own.close();
    await assert.rejects(cache.answer('k', async () => ['0000000001']));
  });
});
