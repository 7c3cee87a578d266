/**
 * The data lifecycle: `coregate export` writes every record with protected values as stored, `coregate
 * import` loads them back in one transaction or not at all, and `coregate reset` / `POST /admin/reset` put
 * a demo store back to its seeded dataset, on each database; then the commands as a user runs them.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { sql } from 'kysely';
import { loadConfig } from '../src/config.js';
import { recordDef, type RecordDef } from '../src/catalog/index.js';
import { updatableFieldsName } from '../src/catalog/schemas.js';
import { secretsFromMaster } from '../src/crypto/secrets.js';
import { OPERATIONS } from '../src/operations/index.js';
import { locatorName, operationName } from '../src/operations/share-update.js';
import { operationPath } from '../src/operations/types.js';
import { generateAccount } from '../src/seed/generate.js';
import { DEFAULT_SEED, seedDatabase } from '../src/seed/load.js';
import { seedMemberSecrets } from '../src/seed/member-secrets.js';
import { demoDataset } from '../src/store/access.js';
import type { Database, Db } from '../src/database/database.js';
import { DATA_RECORDS, RecordFileError } from '../src/store/record-file.js';
import { exportRecords, importRecords, StoreNotEmptyError, StoreReplacedError } from '../src/store/record-transfer.js';
import type { Row } from '../src/store/records.js';
import { BACKENDS, createHarness, openTestDatabase, type Harness } from './support/harness.js';
import { clearPans, clearSsns } from './support/sensitive.js';
import { CLI, serve, stop } from './support/serve-process.js';

const DEMO = { seed: DEFAULT_SEED, accounts: 20 };

/** Seeds the demo dataset as the first start does: records, member secrets, and which dataset it is. */
async function seedDemo(database: Database, h: Harness): Promise<void> {
  await seedDatabase(database, h.secrets, DEMO);
  await seedMemberSecrets(database.db, DEMO.accounts);
  await demoDataset.set(database.db, DEMO);
}

async function exported(db: Db): Promise<string[]> {
  const lines: string[] = [];
  await exportRecords(db, (line) => lines.push(line));
  return lines;
}

/** The record lines (the header holds the export's time, the end line the counts). */
const recordsOf = (lines: readonly string[]) => lines.slice(1, -1);
/** The counts of an export's end line. */
const countsOf = (lines: readonly string[]) => JSON.parse(lines.at(-1)!).counts as Record<string, number>;

/** Record lines without what is sealed afresh each time: ciphertexts (a new IV) and password hashes (a new salt). */
const unsealed = (lines: readonly string[]) =>
  recordsOf(lines).map((line) =>
    JSON.stringify(Object.fromEntries(Object.entries(JSON.parse(line)).filter(([key]) => !/_(enc|hash)$/.test(key)))),
  );

const updatePath = (record: RecordDef) =>
  operationPath({ family: 'P2', service: 'account', name: operationName(record) });

/** The first record of a share record type, by key. */
async function firstRecord(db: Db, record: RecordDef): Promise<Row> {
  const { rows } = await sql<Row>`select * from ${sql.table(record.table)} where share_id is not null
    order by account_number, share_id limit 1`.execute(db);
  return rows[0]!;
}

/** A 2022.01 update of one share record's fields through the API. */
function update(h: Harness, record: RecordDef, target: Row, fields: Record<string, unknown>, headers = {}) {
  const locator = locatorName(record);
  return h.call(
    updatePath(record),
    {
      AccountNumber: target.account_number,
      ShareId: target.share_id,
      ...(locator ? { [locator]: target.locator } : {}),
      [updatableFieldsName(record, 'P2')]: fields,
    },
    headers,
  );
}

const share = recordDef('Share');
const hold = recordDef('ShareHold');

async function description(db: Db, target: Row): Promise<unknown> {
  const { rows } = await sql<{ description: string }>`select description from share
    where account_number = ${target.account_number} and share_id = ${target.share_id}`.execute(db);
  return rows[0]?.description;
}

const reset = (h: Harness, token = h.token) =>
  h.app.inject({ method: 'POST', url: '/admin/reset', headers: { authorization: `Bearer ${token}` } });

for (const backend of BACKENDS) {
  describe(`export and import on ${backend.name}`, () => {
    let h: Harness;
    /** A second, empty store with the same secret, to import into. */
    let target: Database;
    /** The source after some updates: with FM history. */
    let source: string[];

    before(async () => {
      h = await createHarness(backend);
      await seedDemo(h.database, h);
      const aShare = await firstRecord(h.database.db, share);
      assert.equal((await update(h, share, aShare, { Description: 'EXPORTED' })).statusCode, 200);
      const aHold = await firstRecord(h.database.db, hold);
      assert.equal((await update(h, hold, aHold, { Amount: 12.34, Reference1: 'EXPORT' })).statusCode, 200);
      source = await exported(h.database.db);
      target = await openTestDatabase(backend);
    });
    after(async () => {
      await target?.close();
      await h?.close();
    });

    test('an export is a header, every record in catalog order (FM history included), then an end line counting them', async () => {
      const header = JSON.parse(source[0]!);
      assert.equal(header.coregate, 'records');
      assert.equal(header.format, 2);
      assert.deepEqual(header.demoDataset, DEMO);
      const names = recordsOf(source).map((line) => JSON.parse(line).record as string);
      const order = DATA_RECORDS.map((record) => record.name);
      assert.deepEqual(
        names,
        [...names].sort((a, b) => order.indexOf(a) - order.indexOf(b)),
      );
      const end = JSON.parse(source.at(-1)!);
      assert.equal(end.coregate, 'end');
      for (const record of DATA_RECORDS) {
        assert.equal(end.counts[record.name], names.filter((name) => name === record.name).length, record.name);
      }
      assert.ok(end.counts.AccountFmHistory >= 3, 'the updates wrote FM history');
      assert.equal(end.counts.Account, DEMO.accounts);
      assert.equal(end.counts.MemberSecret, 5);
    });

    test('protected values stay protected: no clear card number or SSN, only their HMAC and ciphertext', () => {
      const text = source.join('\n');
      const generated = Array.from({ length: DEMO.accounts }, (_, i) => generateAccount(DEMO.seed, i + 1).records);
      const ssns = generated.flatMap((records) => records.ShareName.map((name) => String(name.values.Ssn)));
      const pans = generated.flatMap((records) => records.Card.map((card) => String(card.values.CardNumber)));
      assert.deepEqual(clearSsns(text, ssns), []);
      assert.deepEqual(clearPans(text), []);
      assert.deepEqual(
        pans.filter((pan) => text.includes(pan)),
        [],
      );
      const card = JSON.parse(recordsOf(source).find((line) => line.includes('"record":"Card"'))!);
      assert.match(card.card_number_hmac, /^[0-9a-f]{64}$/);
      assert.match(card.card_number_enc, /^[0-9a-f]+$/);
      assert.equal(card.card_number, undefined);
    });

    test('importing an export into an empty store and exporting it again gives the same records', async () => {
      const { counts } = await importRecords(target.db, h.secrets, source, { replace: false });
      assert.equal(counts.Account, DEMO.accounts);
      assert.deepEqual(recordsOf(await exported(target.db)), recordsOf(source));
      assert.deepEqual(await demoDataset.get(target.db), DEMO, 'a demo export stays resettable');
    });

    test('after an import the store numbers new FM history after the imported rows', async () => {
      const { rows } = await sql<{ max: number; next: number }>`select
        (select max(sequence_number) from account_fm_history) as max,
        nextval(pg_get_serial_sequence('account_fm_history', 'sequence_number')) as next`.execute(target.db);
      assert.equal(rows[0]!.next, rows[0]!.max + 1);
    });

    test('an import into a store that holds records is refused unless it replaces them', async () => {
      const before = recordsOf(await exported(target.db));
      await assert.rejects(importRecords(target.db, h.secrets, source, { replace: false }), StoreNotEmptyError);
      await importRecords(target.db, h.secrets, source, { replace: true });
      assert.deepEqual(recordsOf(await exported(target.db)), before);
    });

    /** The source with line `index` (0-based, the header is 0) rewritten. */
    const withLine = (index: number, change: (line: Record<string, unknown>) => unknown) =>
      source.map((line, i) => (i === index ? JSON.stringify(change(JSON.parse(line))) : line));
    const lineOf = (record: string) => source.findIndex((line) => line.startsWith(`{"record":"${record}"`));
    const other = secretsFromMaster(randomBytes(32));

    const badFiles: { name: string; lines: () => string[]; error: () => RegExp }[] = [
      {
        name: 'an unknown record type',
        lines: () => withLine(5, (line) => ({ ...line, record: 'Sharee' })),
        error: () => /^line 6: record: unknown record type "Sharee"/,
      },
      {
        name: 'a column the record does not have',
        lines: () => withLine(lineOf('Share'), (line) => ({ ...line, descripton: 'X' })),
        error: () => new RegExp(`^line ${lineOf('Share') + 1}: Share\\.descripton is not a column of Share`),
      },
      {
        name: 'a value of the wrong type',
        lines: () => withLine(lineOf('ShareHold'), (line) => ({ ...line, amount: '12.34' })),
        error: () => new RegExp(`^line ${lineOf('ShareHold') + 1}: ShareHold\\.amount must be a number, got string`),
      },
      {
        name: 'a string longer than its field',
        lines: () => withLine(lineOf('Share'), (line) => ({ ...line, description: 'X'.repeat(41) })),
        error: () => /Share\.description must be at most 40 characters/,
      },
      {
        name: 'a date that is not on the calendar',
        lines: () => withLine(lineOf('Account'), (line) => ({ ...line, open_date: '2024-02-30' })),
        error: () => /^line 2: Account\.open_date must be a calendar date/,
      },
      {
        name: "a value outside its field's pattern",
        lines: () => withLine(lineOf('Account'), (line) => ({ ...line, account_number: '12' })),
        error: () => /^line 2: Account\.account_number must match/,
      },
      {
        name: 'a missing key column',
        lines: () => withLine(lineOf('ShareHold'), (line) => ({ ...line, locator: undefined })),
        error: () => /ShareHold\.locator is required/,
      },
      {
        name: 'a repeating field with a bad entry',
        lines: () => withLine(lineOf('ShareNote'), (line) => ({ ...line, text: [{ EntryId: 0, Text: 'NOTE' }] })),
        error: () => /ShareNote\.text entry 1: EntryId must be a distinct integer from 1 to 50/,
      },
      {
        name: 'an HMAC that is not hex',
        lines: () => withLine(lineOf('Card'), (line) => ({ ...line, card_number_hmac: 'not hex' })),
        error: () => /Card\.card_number_hmac must be the 32-byte HMAC in lowercase hex/,
      },
      {
        name: 'a value sealed under another secret',
        lines: () =>
          withLine(lineOf('Card'), (line) => ({
            ...line,
            card_number_enc: other.encrypt('4000000000000002').toString('hex'),
          })),
        error: () => /Card\.card_number_enc cannot be opened with this store's secret/,
      },
      {
        name: 'an HMAC of another value than the one sealed',
        lines: () =>
          withLine(lineOf('Card'), (line) => ({
            ...line,
            card_number_hmac: h.secrets.lookupHash('pan', '4000000000000002').toString('hex'),
          })),
        error: () => /Card\.card_number_hmac is not the HMAC of the value sealed beside it/,
      },
      {
        name: 'a record given twice',
        lines: () => [...source.slice(0, 3), source[2]!, ...source.slice(3)],
        error: () => /^line 4: Account \(account_number\)=\(\d{10}\) is given twice \(also line 3\)/,
      },
      {
        name: 'a line that is not JSON',
        lines: () => [...source.slice(0, 3), '{"record":"Account",', ...source.slice(3)],
        error: () => /^line 4: not JSON/,
      },
      {
        name: 'a file cut short',
        lines: () => source.slice(0, -2),
        error: () => /the file ends without its end line \({"coregate":"end",…}\): it was cut off/,
      },
      {
        name: 'a record fewer than its end line counts',
        lines: () => [...source.slice(0, -2), source.at(-1)!],
        error: () => /MemberSecret records where its end line counts 5: it is incomplete or was edited/,
      },
      {
        name: 'a line after the end line',
        lines: () => [...source, source[1]!],
        error: () => new RegExp(`^line ${source.length + 1}: follows the end line \\(line ${source.length}\\)`),
      },
      {
        name: 'a header of another format',
        lines: () => withLine(0, (line) => ({ ...line, format: 3 })),
        error: () => /^line 1: header: format 3 is not 1 or 2/,
      },
      { name: 'an empty file', lines: () => [], error: () => /^line 1: the file is empty/ },
    ];

    for (const bad of badFiles) {
      test(`an import stops at ${bad.name}, naming the line and column, and applies nothing`, async () => {
        // The target holds the source's records (imported above).
        await assert.rejects(importRecords(target.db, h.secrets, bad.lines(), { replace: true }), (error: Error) => {
          assert.ok(error instanceof RecordFileError, `${error.name}: ${error.message}`);
          assert.match(error.message, bad.error());
          return true;
        });
        assert.deepEqual(recordsOf(await exported(target.db)), recordsOf(source));
      });
    }

    test('a file of format 1, its counts in the header and no end line, still imports', async () => {
      const header = { ...JSON.parse(source[0]!), format: 1, counts: countsOf(source) };
      await importRecords(target.db, h.secrets, [JSON.stringify(header), ...recordsOf(source)], { replace: true });
      assert.deepEqual(recordsOf(await exported(target.db)), recordsOf(source));
      const short = [JSON.stringify(header), ...recordsOf(source).slice(0, -1)];
      await assert.rejects(
        importRecords(target.db, h.secrets, short, { replace: true }),
        /MemberSecret records where its header counts 5: it is incomplete or was edited/,
      );
    });

    // Bounded: an export holding its database connection while its reader waits would wait for the write for ever.
    const HELD_BOUND = { timeout: 120_000 };

    test(
      'a write made while an export waits for its reader commits, and is in the pages read after it',
      HELD_BOUND,
      async () => {
        const aHold = await firstRecord(h.database.db, hold);
        const lines: string[] = [];
        let updated: LightMyRequestResponse | undefined;
        await exportRecords(h.database.db, async (line) => {
          lines.push(line);
          // While the first account's line waits to be taken, before the share holds are read.
          if (updated === undefined && line.startsWith('{"record":"Account"')) {
            updated = await update(h, hold, aHold, { Amount: 45.67 });
          }
        });
        assert.equal(updated?.statusCode, 200, updated?.body);
        const records = recordsOf(lines).map((line) => JSON.parse(line) as Row & { record: string });
        const written = records.find(
          (r) => r.record === 'ShareHold' && r.account_number === aHold.account_number && r.locator === aHold.locator,
        );
        assert.equal(written?.amount, 45.67);
        // Every record once, as many as the end line counts, and the file imports.
        const keyOf = (r: Row & { record: string }) =>
          JSON.stringify(DATA_RECORDS.find((d) => d.name === r.record)!.primaryKey.map((column) => r[column]));
        const keys = records.map((r) => `${r.record} ${keyOf(r)}`);
        assert.equal(new Set(keys).size, keys.length);
        const { rows } = await sql<{ n: number }>`select count(*)::int as n from account_fm_history`.execute(
          h.database.db,
        );
        assert.equal(countsOf(lines).AccountFmHistory, rows[0]!.n, "the update's FM history is in the file");
        await importRecords(target.db, h.secrets, lines, { replace: true });
      },
    );

    test('an export during which the records are replaced fails before its end line', HELD_BOUND, async () => {
      const lines: string[] = [];
      await assert.rejects(
        exportRecords(h.database.db, async (line) => {
          lines.push(line);
          if (lines.length === 2) await importRecords(h.database.db, h.secrets, source, { replace: true });
        }),
        StoreReplacedError,
      );
      assert.ok(lines.length > 2, 'the export went on after the replacement');
      assert.notEqual(JSON.parse(lines.at(-1)!).coregate, 'end');
    });

    test('an import of records that are not a demo dataset makes the store one that cannot be reset', async () => {
      const plain = withLine(0, (line) => ({ ...line, demoDataset: null }));
      await importRecords(target.db, h.secrets, plain, { replace: true });
      assert.equal(await demoDataset.get(target.db), undefined);
      await importRecords(target.db, h.secrets, source, { replace: true });
    });
  });

  describe(`reset to the demo dataset on ${backend.name}`, () => {
    let h: Harness;
    /** The store as seeded, before any update. */
    let seeded: string[];

    before(async () => {
      h = await createHarness(backend);
      await seedDemo(h.database, h);
      seeded = await exported(h.database.db);
    });
    after(() => h?.close());

    test('POST /admin/reset after updates restores the seeded records, and the credentials still work', async () => {
      const aShare = await firstRecord(h.database.db, share);
      const aHold = await firstRecord(h.database.db, hold);
      assert.equal((await update(h, share, aShare, { Description: 'CHANGED' })).statusCode, 200);
      assert.equal((await update(h, hold, aHold, { Amount: 99.99 })).statusCode, 200);
      assert.notDeepEqual(unsealed(await exported(h.database.db)), unsealed(seeded));

      const response = await reset(h);
      assert.equal(response.statusCode, 200, response.body);
      const answer = response.json();
      assert.equal(answer.status, 'reset');
      assert.deepEqual(answer.dataset, DEMO);
      assert.equal(answer.records.Account, DEMO.accounts);

      const after = await exported(h.database.db);
      assert.deepEqual(unsealed(after), unsealed(seeded));
      assert.equal(countsOf(after).AccountFmHistory, 0);
      // The harness's token and administrative password were not touched.
      assert.equal((await update(h, share, aShare, { Description: 'AFTER RESET' })).statusCode, 200);
      assert.equal(await description(h.database.db, aShare), 'AFTER RESET');
    });

    test('after a reset an Idempotency-Key used before it applies its request again', async () => {
      const aShare = await firstRecord(h.database.db, share);
      const headers = { 'idempotency-key': 'before-the-reset' };
      assert.equal((await update(h, share, aShare, { Description: 'KEYED' }, headers)).statusCode, 200);
      assert.equal((await reset(h)).statusCode, 200);
      const again = await update(h, share, aShare, { Description: 'KEYED' }, headers);
      assert.equal(again.statusCode, 200);
      assert.equal(again.headers['idempotent-replayed'], undefined);
      assert.equal(await description(h.database.db, aShare), 'KEYED');
    });

    test('requests during a reset see the records before or after it, never a mix', async () => {
      const ssn = generateAccount(DEMO.seed, 1).records.ShareName[0]!.values.Ssn;
      const { rows } = await sql<{ n: string }>`select min(collateral_number) as n from collateral`.execute(
        h.database.db,
      );
      const findBySsn = OPERATIONS.find((op) => op.name === 'findBySSN')!;
      const getCollateral = OPERATIONS.find((op) => op.name === 'getCollateral')!;
      const aShare = await firstRecord(h.database.db, share);
      const lookup = () => h.call(operationPath(findBySsn), { SSN: ssn });
      const collateral = () => h.call(operationPath(getCollateral), { CollateralNumber: rows[0]!.n });
      const [expectedLookup, expectedCollateral] = [(await lookup()).json(), (await collateral()).json()];

      // Three clients call over and over from before the reset starts until after it ends.
      let resetting = true;
      const answered = reset(h).finally(() => (resetting = false));
      const during: { response: LightMyRequestResponse; expected: unknown }[] = [];
      const client = async (call: () => Promise<LightMyRequestResponse>, expected: unknown) => {
        do during.push({ response: await call(), expected });
        while (resetting);
      };
      await Promise.all([
        client(lookup, expectedLookup),
        client(collateral, expectedCollateral),
        client(() => update(h, share, aShare, { Description: 'DURING THE RESET' }), undefined),
      ]);
      assert.equal((await answered).statusCode, 200);
      assert.ok(during.length > 6, `${during.length} calls overlapped the reset`);
      for (const { response, expected } of during) {
        assert.equal(response.statusCode, 200, response.body);
        // The demo dataset before the reset and after it are the same records: any other answer is a mix.
        if (expected !== undefined) assert.deepEqual(response.json(), expected);
      }
    });

    test('POST /admin/reset needs a token with the store:reset scope', async () => {
      const aShare = await firstRecord(h.database.db, share);
      assert.equal((await update(h, share, aShare, { Description: 'KEPT' })).statusCode, 200);
      const anonymous = await h.app.inject({ method: 'POST', url: '/admin/reset' });
      assert.equal(anonymous.statusCode, 401);
      assert.equal(anonymous.json().code, 'UNAUTHENTICATED');
      const refused = await reset(h, await h.tokenWith(['findby', 'share:write']));
      assert.equal(refused.statusCode, 403);
      assert.match(String(refused.headers['content-type']), /^application\/problem\+json/);
      assert.deepEqual(
        [refused.json().code, refused.json().detail],
        ['FORBIDDEN', 'The token lacks the store:reset scope'],
      );
      assert.equal(await description(h.database.db, aShare), 'KEPT');
    });

    test('POST /admin/reset refuses a store that holds no demo dataset, with 409 NOT_A_DEMO_DATASET', async () => {
      await demoDataset.set(h.database.db, undefined);
      try {
        const response = await reset(h);
        assert.equal(response.statusCode, 409);
        assert.equal(response.json().code, 'NOT_A_DEMO_DATASET');
      } finally {
        await demoDataset.set(h.database.db, DEMO);
      }
    });

    test('every reset is in the audit trail with who asked and how it ended', async () => {
      await reset(h, await h.tokenWith(['findby']));
      await h.app.audit.flush();
      const { rows } = await sql<{ token_name: string; status: number; code: string | null }>`
        select token_name, status, code from audit_event where operation = 'admin:reset' order by id`.execute(
        h.database.db,
      );
      assert.ok(rows.some((row) => row.token_name === 'test' && row.status === 200));
      assert.deepEqual(rows.at(-1), { token_name: rows.at(-1)!.token_name, status: 403, code: 'FORBIDDEN' });
    });
  });
}

// The refusal comes before the database is touched: one database is enough.
describe('POST /admin/reset in gateway mode', () => {
  let h: Harness;
  before(async () => {
    const config = loadConfig({ COREGATE_CORE: 'symxchange', COREGATE_SYMXCHANGE_URL: 'http://127.0.0.1:9/' });
    h = await createHarness({ name: 'pglite' }, { core: config.core, symxchange: config.symxchange });
  });
  after(() => h?.close());

  test("is refused with 501 STORE_ONLY: the records are the core's", async () => {
    const response = await reset(h);
    assert.equal(response.statusCode, 501);
    assert.equal(response.json().code, 'STORE_ONLY');
  });
});

describe('coregate export, import and reset as a user runs them', () => {
  const root = mkdtempSync(join(tmpdir(), 'coregate-data-'));
  // Both data directories share one secret, as instances of one deployment do.
  const secret = randomBytes(32).toString('hex');
  const cli = (dataDir: string, ...args: string[]) =>
    spawnSync(process.execPath, [...CLI, ...args], {
      env: { ...process.env, COREGATE_DATA_DIR: join(root, dataDir), COREGATE_SECRET: secret, DATABASE_URL: '' },
      encoding: 'utf8',
      maxBuffer: 256 * 1024 * 1024,
    });
  /** A data directory of another deployment: its own secret, generated into its secret.key. */
  const stranger = (...args: string[]) =>
    spawnSync(process.execPath, [...CLI, ...args], {
      env: { ...process.env, COREGATE_DATA_DIR: join(root, 'stranger'), COREGATE_SECRET: '', DATABASE_URL: '' },
      encoding: 'utf8',
    });
  const file = (name: string) => join(root, name);
  const records = (path: string) => recordsOf(readFileSync(path, 'utf8').trimEnd().split('\n'));

  before(() => {
    const seeded = cli('source', 'seed', '--accounts', '5');
    assert.equal(seeded.status, 0, seeded.stderr);
  });
  after(() => rmSync(root, { recursive: true, force: true }));

  test('export --out writes the file; import loads it into a new data directory with a progress report', () => {
    const exportedFile = cli('source', 'export', '--out', file('source.ndjson'));
    assert.equal(exportedFile.status, 0, exportedFile.stderr);
    assert.match(exportedFile.stdout, /^Exported [\d,]+ records \(5 accounts\) to .*source\.ndjson/);
    const imported = cli('copy', 'import', file('source.ndjson'));
    assert.equal(imported.status, 0, imported.stderr);
    assert.match(imported.stderr, /Importing records [\d,]+\/[\d,]+ 100\.0%/);
    assert.match(imported.stdout, /The records are demo dataset seed 627, 5 accounts/);
    const again = cli('copy', 'export', '--out', file('copy.ndjson'));
    assert.equal(again.status, 0, again.stderr);
    assert.deepEqual(records(file('copy.ndjson')), records(file('source.ndjson')));
  });

  test('export without --out writes the records to standard output and its summary to stderr', () => {
    const streamed = cli('source', 'export');
    assert.equal(streamed.status, 0, streamed.stderr);
    assert.deepEqual(recordsOf(streamed.stdout.trimEnd().split('\n')), records(file('source.ndjson')));
    assert.match(streamed.stderr, /^Exported [\d,]+ records/);
  });

  test('import into a data directory that holds records exits 2 unless --replace is given', () => {
    const refused = cli('copy', 'import', file('source.ndjson'));
    assert.equal(refused.status, 2);
    assert.match(refused.stderr, /The store already holds records; add --replace to replace them/);
    assert.equal(cli('copy', 'import', file('source.ndjson'), '--replace').status, 0);
  });

  test('import of a bad file exits 1 naming the line and column, and the data directory keeps its records', () => {
    const lines = readFileSync(file('source.ndjson'), 'utf8').trimEnd().split('\n');
    const bad = lines.map((line, i) =>
      i === 3 ? line.replace(/"record":"(\w+)"/, '"record":"$1","colour":"red"') : line,
    );
    writeFileSync(file('bad.ndjson'), `${bad.join('\n')}\n`);
    const failed = cli('copy', 'import', file('bad.ndjson'), '--replace');
    assert.equal(failed.status, 1);
    assert.match(
      failed.stderr,
      /coregate import failed: line 4: \w+\.colour is not a column of \w+; nothing was imported/,
    );
    assert.equal(cli('copy', 'export', '--out', file('after-bad.ndjson')).status, 0);
    assert.deepEqual(records(file('after-bad.ndjson')), records(file('source.ndjson')));
  });

  test('import of a file exported under another secret is refused', () => {
    const refused = stranger('import', file('source.ndjson'));
    assert.equal(refused.status, 1);
    assert.match(refused.stderr, /cannot be opened with this store's secret/);
  });

  test('reset goes back to the demo dataset the store records', () => {
    const done = cli('copy', 'reset');
    assert.equal(done.status, 0, done.stderr);
    assert.match(
      done.stdout,
      /^Reset to demo dataset seed 627, 5 accounts .*; API tokens, users and the administrative password are unchanged/,
    );
  });

  test('reset of a store that records no demo dataset asks for one; with --accounts it resets to that one', () => {
    // The failed import above left this data directory empty: no demo dataset.
    const asked = stranger('reset');
    assert.equal(asked.status, 2);
    assert.match(asked.stderr, /records no demo dataset .* give --accounts N/);
    const done = stranger('reset', '--accounts', '3');
    assert.equal(done.status, 0, done.stderr);
    assert.match(done.stdout, /^Reset to demo dataset seed 627, 3 accounts/);
  });

  test('a missing file is a usage error (exit 2)', () => {
    const missing = cli('copy', 'import', file('missing.ndjson'));
    assert.equal(missing.status, 2);
    assert.match(missing.stderr, /^Cannot read .*missing\.ndjson/);
  });
});

describe('the demo sandbox: reset over HTTP while serving', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'coregate-sandbox-'));
  after(() => rmSync(dataDir, { recursive: true, force: true }));

  test('the demo token resets the sandbox to the seeded records, and demo-credentials.json stays true', async () => {
    const env = { COREGATE_DATA_DIR: dataDir, PORT: '0', LOG_LEVEL: 'warn', DATABASE_URL: '' };
    const served = await serve({ env, ready: /Try it:\n.*\n/ });
    const { apiToken, adminPassword } = JSON.parse(readFileSync(join(dataDir, 'demo-credentials.json'), 'utf8'));
    const call = (path: string, body?: Record<string, unknown>) =>
      fetch(`${served.baseUrl}${path}`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${apiToken}`,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body:
          body === undefined
            ? undefined
            : JSON.stringify({ Credentials: { AdministrativeCredentials: { Password: adminPassword } }, ...body }),
      });
    const demoShare = generateAccount(627, 1).records.Share.find((s) => s.values.Id === '0000')!;
    try {
      const changed = await call(updatePath(share), {
        AccountNumber: '0000000001',
        ShareId: '0000',
        ShareUpdatableFields: { Description: 'CHANGED IN THE SANDBOX' },
      });
      assert.equal(changed.status, 200);
      const response = await call('/admin/reset');
      assert.equal(response.status, 200, await response.clone().text());
      assert.deepEqual(((await response.json()) as { dataset: unknown }).dataset, { seed: 627, accounts: 1000 });
      const findBySsn = OPERATIONS.find((op) => op.name === 'findBySSN')!;
      const ssn = generateAccount(627, 1).records.ShareName[0]!.values.Ssn;
      const found = await call(operationPath(findBySsn), { SSN: ssn });
      assert.equal(found.status, 200, 'the demo token and administrative password still work');
    } finally {
      assert.equal(await stop(served.child), 0);
    }
    const exportedFile = join(dataDir, 'after-reset.ndjson');
    const exportedNow = spawnSync(process.execPath, [...CLI, 'export', '--out', exportedFile], {
      env: { ...process.env, COREGATE_DATA_DIR: dataDir, DATABASE_URL: '' },
      encoding: 'utf8',
    });
    assert.equal(exportedNow.status, 0, exportedNow.stderr);
    const lines = readFileSync(exportedFile, 'utf8').trimEnd().split('\n');
    const first = JSON.parse(lines.find((line) => line.startsWith('{"record":"Share",'))!);
    assert.equal(first.description, demoShare.values.Description);
    assert.equal(countsOf(lines).AccountFmHistory, 0);
  });
});
