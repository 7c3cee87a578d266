/**
 * The demo dataset: deterministic, valid against the catalog, free of clear sensitive values, and
 * consistent with the examples documented in docs/demo-data.md.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { after, test } from 'node:test';
import { sql } from 'kysely';
import { RECORDS, fieldOf, recordDef, type FieldDef, type RecordDef } from '../src/catalog/index.js';
import { renderDemoDataDoc } from '../src/seed/demo-data-doc.js';
import { demoExamples, type DemoExamples } from '../src/seed/examples.js';
import {
  NUMBERINGS,
  SEEDED_RECORD_NAMES,
  UNSEEDED_RECORD_NAMES,
  generateAccount,
  type AccountBundle,
} from '../src/seed/generate.js';
import { DEFAULT_DEMO_ACCOUNTS, DEFAULT_SEED, seedDatabase, type SeedSummary } from '../src/seed/load.js';
import { createProgress } from '../src/seed/progress.js';
import { secretsFromMaster } from '../src/crypto/secrets.js';
import { dropSchema, openDatabase, type Database, type Db } from '../src/database/database.js';
import { migratedTemplate } from './support/migrated-template.js';
import { migrate } from '../src/database/migrations.js';
import type { Row, WireRecord } from '../src/store/records.js';

const SEED = DEFAULT_SEED;
/** A record type's table, from the catalog. */
const table = (record: string) => sql.table(recordDef(record).table);
const ACCOUNTS = 200;
const secrets = secretsFromMaster(Buffer.alloc(32, 7));

function bundles(seed: number, count: number): AccountBundle[] {
  return Array.from({ length: count }, (_, position) => generateAccount(seed, position + 1));
}

// ---- Seeded databases, opened once and shared by the tests below ----

interface SeededStore {
  readonly database: Database;
  readonly summary: SeedSummary;
}

const closers: (() => Promise<void>)[] = [];
after(async () => {
  for (const close of closers) await close();
});

async function seededStore(accounts: number, url?: string, chunkSize?: number, workers?: number): Promise<SeededStore> {
  const schema = url ? `seed_test_${randomBytes(6).toString('hex')}` : undefined;
  const database = await openDatabase(url ? { url, schema } : { loadDataDir: await migratedTemplate() });
  closers.push(async () => {
    await database.close();
    if (url && schema) await dropSchema(url, schema);
  });
  await migrate(database.db, database.kind);
  const summary = await seedDatabase(database, secrets, { accounts, seed: SEED, chunkSize, workers });
  return { database, summary };
}

function once<T>(make: () => Promise<T>): () => Promise<T> {
  let made: Promise<T> | undefined;
  return () => (made ??= make());
}

const embedded = once(() => seededStore(ACCOUNTS));
const embeddedAgain = once(() => seededStore(ACCOUNTS));
const postgresUrl = process.env.TEST_DATABASE_URL;
const postgres = once(() => seededStore(ACCOUNTS, postgresUrl));

/** A table's rows in primary-key order; bytea as base64, so that dumps compare and scan as text. */
async function tableRows(db: Db, record: RecordDef): Promise<Row[]> {
  const order = sql.join(record.primaryKey.map((column) => sql.ref(column)));
  const result = await sql<Row>`select * from ${sql.table(record.table)} order by ${order}`.execute(db);
  return result.rows.map((row) =>
    Object.fromEntries(
      Object.entries(row).map(([column, value]) => [
        column,
        value instanceof Uint8Array ? Buffer.from(value).toString('base64') : value,
      ]),
    ),
  );
}

/** Rows without the AES-GCM ciphertext, which differs on every run (random IV). */
async function comparableRows(db: Db, record: RecordDef): Promise<Row[]> {
  return (await tableRows(db, record)).map((row) =>
    Object.fromEntries(Object.entries(row).filter(([column]) => !column.endsWith('_enc'))),
  );
}

// ---- Generation ----

test('an account is the same for the same seed and index', () => {
  for (let index = 1; index <= 50; index += 1) {
    assert.deepEqual(generateAccount(SEED, index), generateAccount(SEED, index));
  }
});

test('a different seed gives different accounts', () => {
  for (let index = 1; index <= 10; index += 1) {
    assert.notDeepEqual(generateAccount(SEED, index), generateAccount(SEED + 1, index));
  }
});

test('every catalog record type is seeded, except those left empty on purpose', () => {
  const covered = [...SEEDED_RECORD_NAMES, ...Object.keys(UNSEEDED_RECORD_NAMES)].sort();
  assert.deepEqual(covered, RECORDS.map((record) => record.name).sort());
});

test('the unique-number schemes are bijections that stay within exact integer arithmetic', () => {
  const gcd = (a: number, b: number): number => (b === 0 ? a : gcd(b, a % b));
  for (const [name, { modulus, multiplier }] of Object.entries(NUMBERINGS)) {
    assert.equal(gcd(multiplier, modulus), 1, `${name}: multiplier and modulus must be coprime`);
    assert.ok(modulus * multiplier < Number.MAX_SAFE_INTEGER, `${name}: products must stay exact`);
  }
});

/** Why a value breaks its catalog field, or undefined. */
function scalarProblem(field: FieldDef, value: unknown): string | undefined {
  const inRange = (n: number) =>
    (field.minimum === undefined || n >= field.minimum) && (field.maximum === undefined || n <= field.maximum);
  const hasDecimals = (n: number, places: number) => Math.abs(n * 10 ** places - Math.round(n * 10 ** places)) < 1e-6;
  switch (field.kind) {
    case 'string':
      if (typeof value !== 'string') return 'not a string';
      if (field.maxLength !== undefined && value.length > field.maxLength) return `longer than ${field.maxLength}`;
      if (field.pattern && !new RegExp(field.pattern).test(value)) return `does not match ${field.pattern}`;
      return undefined;
    case 'integer':
      return Number.isInteger(value) && inRange(value as number) ? undefined : 'not an integer in range';
    case 'money':
      return typeof value === 'number' && inRange(value) && hasDecimals(value, 2) ? undefined : 'not money in range';
    case 'rate':
      return typeof value === 'number' && inRange(value) && hasDecimals(value, 3) ? undefined : 'not a rate in range';
    case 'date':
      return typeof value === 'string' &&
        /^\d{4}-\d{2}-\d{2}$/.test(value) &&
        new Date(`${value}T00:00:00Z`).toISOString().startsWith(value)
        ? undefined
        : 'not a YYYY-MM-DD date';
  }
}

function recordProblems(record: RecordDef, values: WireRecord): string[] {
  const problems: string[] = [];
  for (const [name, value] of Object.entries(values)) {
    const field = fieldOf(record, name);
    if (!field) {
      problems.push(`${record.name}.${name} is not in the catalog`);
      continue;
    }
    if (value === undefined) continue;
    if (!field.repeating) {
      const problem = scalarProblem(field, value);
      if (problem) problems.push(`${record.name}.${name} = ${JSON.stringify(value)}: ${problem}`);
      continue;
    }
    const repeatingEntries = value as { EntryId: number; [field: string]: unknown }[];
    if (!Array.isArray(repeatingEntries) || repeatingEntries.length > field.repeating.maxEntries) {
      problems.push(`${record.name}.${name}: not a list of at most ${field.repeating.maxEntries} entries`);
      continue;
    }
    repeatingEntries.forEach((entry, position) => {
      const problem = entry.EntryId === position + 1 ? scalarProblem(field, entry[name]) : 'EntryId out of order';
      if (problem) problems.push(`${record.name}.${name}[${position}]: ${problem}`);
    });
  }
  return problems;
}

test('every generated value satisfies its catalog field', () => {
  const problems = bundles(SEED, 300).flatMap(({ records }) =>
    SEEDED_RECORD_NAMES.flatMap((name) =>
      records[name].flatMap(({ values }) => recordProblems(recordDef(name), values)),
    ),
  );
  assert.deepEqual(problems.slice(0, 10), []);
});

function luhnValid(number: string): boolean {
  let sum = 0;
  [...number].reverse().forEach((character, position) => {
    const digit = Number(character) * (position % 2 === 1 ? 2 : 1);
    sum += digit > 9 ? digit - 9 : digit;
  });
  return sum % 10 === 0;
}

test('card numbers are Luhn-valid and unique, except reissued numbers on two accounts with one active', () => {
  const holders = new Map<string, { account: string; active: boolean }[]>();
  for (const { accountNumber, records } of bundles(SEED, 2000)) {
    for (const { values } of records.Card) {
      const number = String(values.CardNumber);
      assert.match(number, /^[0-9]{16}$/);
      assert.ok(luhnValid(number), `${number} fails the Luhn check`);
      const active = values.Status === 0 && String(values.ExpirationDate) >= '2028-01-01';
      holders.set(number, [...(holders.get(number) ?? []), { account: accountNumber, active }]);
    }
  }
  const reissued = [...holders.values()].filter((cards) => cards.length > 1);
  assert.ok(reissued.length >= 10, 'some numbers are reissued');
  for (const cards of reissued) {
    assert.equal(cards.length, 2);
    assert.notEqual(cards[0]?.account, cards[1]?.account);
    assert.equal(cards.filter((card) => card.active).length, 1);
  }
});

test('SSNs are valid and shared only by the same person on several accounts', () => {
  const people = new Map<string, { person: string; accounts: Set<string> }>();
  for (const { accountNumber, records } of bundles(SEED, 2000)) {
    for (const { values } of records.ShareName) {
      const ssn = String(values.Ssn);
      assert.match(ssn, /^(?!000|666|9)[0-9]{3}(?!00)[0-9]{2}(?!0000)[0-9]{4}$/);
      const person = `${String(values.First)} ${String(values.Last)} ${String(values.BirthDate)}`;
      const known = people.get(ssn) ?? { person, accounts: new Set<string>() };
      assert.equal(known.person, person, `SSN ${ssn} names two different people`);
      known.accounts.add(accountNumber);
      people.set(ssn, known);
    }
  }
  assert.ok(
    [...people.values()].filter(({ accounts }) => accounts.size > 1).length >= 10,
    'some SSNs are on several accounts',
  );
});

test('every account has a hold and a note on its primary savings share 0000', () => {
  for (const { records } of bundles(SEED, 300)) {
    assert.ok(records.ShareHold.some(({ keys }) => keys.share_id === '0000'));
    assert.ok(records.ShareNote.some(({ keys }) => keys.share_id === '0000'));
  }
});

test('a non-terminal progress report prints one line per 10%', () => {
  const lines: string[] = [];
  let clock = 0;
  const progress = createProgress('Seeding', 1000, { isTTY: false, write: (text) => lines.push(text) }, () => clock);
  for (let done = 50; done <= 1000; done += 50) {
    clock += 100;
    progress.update(done);
  }
  progress.finish();
  assert.equal(lines.length, 11);
  assert.match(lines[0] ?? '', /^Seeding 100\/1,000 10\.0% 500\/s ETA 0:02\n$/);
  assert.match(lines[10] ?? '', /^Seeding done: 1,000 in 0:02 \(500\/s\)\n$/);
});

// ---- Seeding ----

test('seeding writes rows of every seeded record type', async () => {
  const { summary } = await embedded();
  for (const name of SEEDED_RECORD_NAMES) {
    assert.ok((summary.rows[recordDef(name).table] ?? 0) > 0, `${name} has rows`);
  }
  assert.equal(summary.rows.account, ACCOUNTS);
});

test('seeding twice gives identical tables apart from ciphertext', async () => {
  const [first, second] = [await embedded(), await embeddedAgain()];
  for (const record of RECORDS) {
    assert.deepEqual(
      await comparableRows(second.database.db, record),
      await comparableRows(first.database.db, record),
      `table ${record.table}`,
    );
  }
});

test('an account does not depend on how many accounts are seeded or on the chunk size', async () => {
  const accounts = 30;
  const small = await seededStore(accounts, undefined, 7);
  const { database } = await embedded();
  const generated = bundles(SEED, accounts);
  for (const record of RECORDS) {
    const smallRows = await comparableRows(small.database.db, record);
    const largeRows = new Set((await comparableRows(database.db, record)).map((row) => JSON.stringify(row)));
    const expected = SEEDED_RECORD_NAMES.includes(record.name as never)
      ? generated.reduce((count, { records }) => count + (records[record.name as keyof typeof records]?.length ?? 0), 0)
      : 0;
    assert.equal(smallRows.length, expected, `rows of ${record.table}`);
    for (const row of smallRows)
      assert.ok(largeRows.has(JSON.stringify(row)), `${record.table} row ${JSON.stringify(row)}`);
  }
});

test('encoder worker threads write the same rows as the seeding thread', async () => {
  const [threaded, inline] = [await seededStore(ACCOUNTS, undefined, 40, 2), await embedded()];
  for (const record of RECORDS) {
    assert.deepEqual(
      await comparableRows(threaded.database.db, record),
      await comparableRows(inline.database.db, record),
      `table ${record.table}`,
    );
  }
});

/** The schema's indexes by name, as PostgreSQL would create them. */
async function indexDefinitions(db: Db): Promise<Record<string, string>> {
  const { rows } = await sql<{ indexname: string; indexdef: string }>`
    select indexname, indexdef from pg_indexes where schemaname = current_schema() order by indexname`.execute(db);
  return Object.fromEntries(rows.map((row) => [row.indexname, row.indexdef]));
}

test('seeding keeps every index of the schema, built again after the rows are in', async () => {
  const database = await openDatabase({ loadDataDir: await migratedTemplate() });
  await migrate(database.db, database.kind);
  const migrated = await indexDefinitions(database.db);
  assert.ok(Object.keys(migrated).includes('share_name_ssn_idx'));
  await seedDatabase(database, secrets, { accounts: 20, seed: SEED });
  assert.deepEqual(await indexDefinitions(database.db), migrated);
  await database.close();
});

test('a seed that fails part-way leaves every table and index as it was', async () => {
  const accounts = 20;
  const { database } = await seededStore(accounts);
  const indexes = await indexDefinitions(database.db);
  const before = await Promise.all(RECORDS.map((record) => comparableRows(database.db, record)));
  await assert.rejects(
    seedDatabase(database, secrets, {
      accounts: 200,
      seed: SEED + 1,
      chunkSize: 50,
      onProgress: (done) => {
        if (done >= 100) throw new Error('interrupted after two chunks');
      },
    }),
    /interrupted after two chunks/,
  );
  const after = await Promise.all(RECORDS.map((record) => comparableRows(database.db, record)));
  assert.deepEqual(after, before);
  assert.deepEqual(await indexDefinitions(database.db), indexes);
});

test('no card number, SSN or MICR number is stored in clear, and each can be decrypted', async () => {
  const { database } = await embedded();
  const generated = bundles(SEED, ACCOUNTS);
  const clearValues = new Set(
    generated.flatMap(({ records }) => [
      ...records.Card.map(({ values }) => String(values.CardNumber)),
      ...records.ShareName.map(({ values }) => String(values.Ssn)),
      ...records.Micr.map(({ values }) => String(values.MicrNumber)),
    ]),
  );
  for (const record of RECORDS) {
    const dump = JSON.stringify(await tableRows(database.db, record));
    for (const clear of clearValues) assert.ok(!dump.includes(clear), `${record.table} holds a clear value`);
  }
  const cards = await sql<{ account_number: string; locator: number; card_number_enc: Uint8Array }>`
    select account_number, locator, card_number_enc from ${table('Card')} order by account_number, locator`.execute(
    database.db,
  );
  const expected = generated.flatMap(({ accountNumber, records }) =>
    records.Card.map(({ values }) => `${accountNumber}/${String(values.Locator)}/${String(values.CardNumber)}`),
  );
  const decrypted = cards.rows.map(
    (row) => `${row.account_number}/${row.locator}/${secrets.decrypt(row.card_number_enc)}`,
  );
  assert.deepEqual(decrypted, expected);
});

/** Runs the SQL equivalent of every documented lookup and checks the documented answer. */
async function assertExamplesHold(db: Db, examples: DemoExamples): Promise<void> {
  const accountsOf = async (query: ReturnType<typeof sql<{ account_number: string }>>) =>
    (await query.execute(db)).rows.map((row) => row.account_number);
  const pan = (value: string) => secrets.lookupHash('pan', value);
  const activeCard = (number: string) =>
    accountsOf(sql`select account_number from ${table('Card')}
      where card_number_hmac = ${pan(number)} and status = 0 and expiration_date >= current_date`);
  const anyCard = (number: string) =>
    accountsOf(
      sql`select distinct account_number from ${table('Card')} where card_number_hmac = ${pan(number)} order by 1`,
    );

  const { activeCard: active, inactiveCard, expiredCard, reissuedCard, noMatch } = examples;
  assert.deepEqual(await activeCard(active.cardNumber), [active.accountNumber], 'active card');
  assert.deepEqual(await anyCard(active.cardNumber), [active.accountNumber], 'active card, any status');
  for (const [label, card] of [
    ['inactive', inactiveCard],
    ['expired', expiredCard],
  ] as const) {
    assert.deepEqual(await activeCard(card.cardNumber), [], `${label} card is not active`);
    assert.deepEqual(await anyCard(card.cardNumber), [card.accountNumber], `${label} card, any status`);
  }
  assert.deepEqual(await activeCard(reissuedCard.cardNumber), [reissuedCard.activeAccountNumber], 'reissued card');
  assert.deepEqual(await anyCard(reissuedCard.cardNumber), reissuedCard.accountNumbers, 'reissued card, any status');
  assert.deepEqual(await anyCard(noMatch.cardNumber), [], 'unknown card');

  const homeUser = (name: string) =>
    accountsOf(sql`select account_number from ${table('HomeBankingUser')} where lower(user_name) = lower(${name})`);
  assert.deepEqual(await homeUser(examples.homeBankingUser.userName), [examples.homeBankingUser.accountNumber]);
  assert.deepEqual(await homeUser(noMatch.homeBankingUserName), []);

  type Target = { account_number: string; share_id: string | null };
  const asResult = (rows: Target[]) =>
    rows.map((row) => ({
      AccountNumber: row.account_number,
      IdType: row.share_id ? 'SHARE' : 'NONE',
      Id: row.share_id,
    }));
  const micr = async (number: string, draft: string) =>
    asResult(
      (
        await sql<Target>`select account_number, share_id from ${table('Micr')}
      where micr_number_hmac = ${secrets.lookupHash('micr', number)} and draft = ${draft}`.execute(db)
      ).rows,
    );
  assert.deepEqual(await micr(examples.micr.micrNumber, examples.micr.draft), [examples.micr.result]);
  assert.deepEqual(await micr(noMatch.micrNumber, noMatch.draft), []);

  const lookup = async (type: number, number: string) =>
    asResult(
      (
        await sql<Target>`select account_number, share_id from ${table('Lookup')}
      where lookup_type = ${type} and lookup_number = ${number}`.execute(db)
      ).rows,
    );
  for (const example of [examples.lookupWithShare, examples.lookupWithoutShare]) {
    assert.deepEqual(await lookup(example.lookupType, example.lookupNumber), [example.result]);
  }
  assert.deepEqual(await lookup(noMatch.lookupType, noMatch.lookupNumber), []);

  const bySsn = (ssn: string) =>
    accountsOf(
      sql`select distinct account_number from ${table('ShareName')} where ssn_hmac = ${secrets.lookupHash('ssn', ssn)} order by 1`,
    );
  assert.deepEqual(await bySsn(examples.sharedSsn.ssn), examples.sharedSsn.accountNumbers);
  assert.ok(examples.sharedSsn.accountNumbers.length >= 2);
  assert.deepEqual(await bySsn(noMatch.ssn), []);

  const byShortName = (name: string) =>
    accountsOf(
      sql`select distinct account_number from ${table('ShareName')} where upper(short_name) = upper(${name}) order by 1`,
    );
  assert.deepEqual(await byShortName(examples.shortName.shortName), examples.shortName.accountNumbers);
  assert.ok(examples.shortName.accountNumbers.length >= 2);
  assert.deepEqual(await byShortName(noMatch.shortName), []);

  const corpTransfer = async (date: string, sequence: number) =>
    (
      await sql<{ from_account: string; amount: number }>`select from_account, amount from ${table('CorpTransfer')}
      where global_sequence_date = ${date} and global_sequence = ${sequence}`.execute(db)
    ).rows;
  const { corpTransfer: transfer } = examples;
  assert.deepEqual(await corpTransfer(transfer.globalSequenceDate, transfer.globalSequence), [
    { from_account: transfer.fromAccount, amount: transfer.amount },
  ]);
  assert.deepEqual(await corpTransfer(noMatch.globalSequenceDate, noMatch.globalSequence), []);

  const { collateral } = examples;
  const count = async (record: string, where: Row) => {
    const conditions = Object.entries(where).map(([column, value]) => sql`${sql.ref(column)} = ${value}`);
    const result = await sql<{ count: number }>`select count(*)::int as count from ${table(record)}
      where ${sql.join(conditions, sql` and `)}`.execute(db);
    return result.rows[0]?.count;
  };
  const ofCollateral = { collateral_number: collateral.collateralNumber };
  assert.equal(await count('Collateral', ofCollateral), 1);
  assert.equal(
    await count('CollateralCollHold', { ...ofCollateral, account_number: collateral.accountNumber }),
    collateral.holds,
  );
  assert.equal(await count('CollateralDocument', ofCollateral), collateral.documents);
  assert.equal(await count('CollateralFmHistory', ofCollateral), collateral.fmHistory);
  assert.equal(await count('CollateralTracking', ofCollateral), collateral.trackings);
  const ofDocument = { ...ofCollateral, document_locator: collateral.documentLocator };
  assert.equal(await count('CollateralDocumentTracking', ofDocument), collateral.documentTrackings);
  assert.equal(
    await count('CollateralDocumentTracking', { ...ofDocument, locator: collateral.documentTrackingLocator }),
    1,
  );
  assert.equal(await count('Collateral', { collateral_number: noMatch.collateralNumber }), 0);

  for (const target of examples.shareTargets) {
    const key = { account_number: target.accountNumber, share_id: target.shareId, locator: target.locator };
    assert.equal(await count(target.record, key), 1, `${target.record} target`);
  }
  assert.equal(await count('Account', { account_number: noMatch.accountNumber }), 0);
}

test('the demo examples hold in a database seeded with the same seed', async () => {
  const { database } = await embedded();
  await assertExamplesHold(database.db, demoExamples(SEED, ACCOUNTS));
});

test('the documented examples are those checked here, apart from the short-name list', () => {
  const {
    accounts: _accounts,
    shortName: _shortName,
    noMatch: _noMatch,
    ...documented
  } = demoExamples(SEED, DEFAULT_DEMO_ACCOUNTS);
  const { accounts: _a, shortName: _s, noMatch: _n, ...checked } = demoExamples(SEED, ACCOUNTS);
  assert.deepEqual(documented, checked);
});

test('docs/demo-data.md is up to date (npm run demo-data:doc)', () => {
  const committed = readFileSync(new URL('../docs/demo-data.md', import.meta.url), 'utf8');
  assert.equal(committed, renderDemoDataDoc(demoExamples(DEFAULT_SEED, DEFAULT_DEMO_ACCOUNTS)));
});

test(
  'on PostgreSQL the name lookups read account numbers from the index alone',
  { skip: !postgresUrl && 'TEST_DATABASE_URL is not set' },
  async () => {
    const { database } = await postgres();
    const lookups = {
      share_name_ssn_idx: sql`ssn_hmac = ${Buffer.alloc(32)}`,
      share_name_short_name_idx: sql`upper(short_name) = upper('SMITH J')`,
    };
    for (const [index, condition] of Object.entries(lookups)) {
      // The tables of a test are small; without these the planner would rather read them whole.
      const plan = await database.db.transaction().execute(async (trx) => {
        await sql`set local enable_seqscan = off`.execute(trx);
        await sql`set local enable_bitmapscan = off`.execute(trx);
        return sql<{ 'QUERY PLAN': string }>`explain (costs off)
          select distinct account_number from share_name where ${condition} order by account_number limit 1000`.execute(
          trx,
        );
      });
      const text = plan.rows.map((row) => row['QUERY PLAN']).join('\n');
      assert.match(text, new RegExp(`Index Only Scan using ${index}`), text);
    }
  },
);

test(
  'seeding on PostgreSQL stores the same rows and answers the examples alike',
  { skip: !postgresUrl && 'TEST_DATABASE_URL is not set' },
  async () => {
    const [onPostgres, onEmbedded] = [await postgres(), await embedded()];
    for (const record of RECORDS) {
      assert.deepEqual(
        await comparableRows(onPostgres.database.db, record),
        await comparableRows(onEmbedded.database.db, record),
        `table ${record.table}`,
      );
    }
    await assertExamplesHold(onPostgres.database.db, demoExamples(SEED, ACCOUNTS));
    // The audit trail is partitioned on PostgreSQL alone (its partitions' indexes, no index on `at` beside the
    // key): both have its key and its accounts' index, and every other index is the same.
    const [postgresIndexes, embeddedIndexes] = await Promise.all(
      [onPostgres, onEmbedded].map(async ({ database }) => Object.keys(await indexDefinitions(database.db))),
    );
    const outsideTheTrail = (names: string[]) => names.filter((name) => !name.startsWith('audit_event'));
    assert.deepEqual(outsideTheTrail(postgresIndexes!), outsideTheTrail(embeddedIndexes!), 'the same indexes');
    for (const indexes of [postgresIndexes!, embeddedIndexes!]) {
      assert.ok(indexes.includes('audit_event_pkey') && indexes.includes('audit_event_accounts_idx'), indexes.join());
    }
  },
);
