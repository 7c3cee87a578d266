/**
 * A store's records as a whole: `exportRecords` writes them as a records file (record-file.ts), read a page
 * at a time, `replaceRecords` swaps them for others in one transaction (what `coregate import`, `coregate
 * reset` and `POST /admin/reset` do), and `importRecords` feeds it a records file.
 */
import { sql } from 'kysely';
import { RECORDS, SHARE_RECORD_NAMES, recordDef, type RecordDef } from '../catalog/index.js';
import type { Secrets } from '../crypto/secrets.js';
import { demoDataset, type DemoDataset } from './access.js';
import type { Db } from '../database/database.js';
import {
  DATA_RECORDS,
  RECORD_FILE_FORMAT,
  RecordFileError,
  decodeRecordLine,
  parseRecordFileHeader,
  recordLine,
  type RecordFileEnd,
  type RecordFileHeader,
} from './record-file.js';
import { insertStatement, quoted, type Row } from './records.js';
import { tableColumns } from '../database/schema.js';

/** Records per table, by record name. */
export type RecordCounts = Record<string, number>;

/**
 * State about the records that a replacement clears: stored responses of earlier writes (a retried
 * Idempotency-Key applies again to the new records) and password lockouts and slow-downs. Tokens, users, the
 * administrative password, sessions and the audit trail are the instance's, and stay.
 */
const CLEARED_TABLES = ['idempotency_key', 'credential_lockout', 'credential_slowdown'];

/**
 * The tables a replacement locks, in the order the request path's writes take them (its Idempotency-Key,
 * then one share record, then that record's FM history): a replacement waiting for a write never holds a
 * table the write asks for next, so the two cannot deadlock. Reads are single statements.
 */
const LOCK_ORDER: readonly string[] = [
  ...new Set([
    'idempotency_key',
    ...SHARE_RECORD_NAMES.map((name) => recordDef(name).table),
    recordDef('AccountFmHistory').table,
    ...DATA_RECORDS.map((record) => record.table),
    ...CLEARED_TABLES,
  ]),
];

/** How long a replacement waits for requests in flight to release the tables before it gives up. */
const LOCK_TIMEOUT = '10s';
/** Rows per INSERT (one JSON parameter each). */
const INSERT_ROWS = 1000;
/** Rows per page of an export, each page one statement. */
const PAGE_ROWS = 1000;

/** The store holds records and the caller did not ask to replace them. */
export class StoreNotEmptyError extends Error {
  constructor() {
    super('The store already holds records; replace them explicitly (coregate import --replace)');
    this.name = 'StoreNotEmptyError';
  }
}

/** The store's tables stayed locked by requests in flight for longer than `LOCK_TIMEOUT`. */
export class StoreBusyError extends Error {
  constructor(cause: unknown) {
    super(`The store's tables stayed in use for ${LOCK_TIMEOUT}; nothing was changed, try again`, { cause });
    this.name = 'StoreBusyError';
  }
}

/** The store's records were replaced while an export read them: its file would mix two stores. */
export class StoreReplacedError extends Error {
  constructor() {
    super(
      "The store's records were replaced (an import or a reset) during the export; nothing complete was exported, export again",
    );
    this.name = 'StoreReplacedError';
  }
}

/** Where a replacement's new records go. */
export interface RecordSink {
  /** Adds one row; `line` is the records-file line it came from, named if the database refuses it. */
  add(record: RecordDef, row: Row, line?: number): Promise<void>;
  /** Rows added so far, by record name. */
  readonly counts: Readonly<RecordCounts>;
}

/** Rows collected per table and inserted a batch at a time. */
class BatchSink implements RecordSink {
  readonly counts: RecordCounts = {};
  private readonly pending = new Map<RecordDef, { rows: Row[]; lines: (number | undefined)[] }>();

  constructor(private readonly trx: Db) {}

  async add(record: RecordDef, row: Row, line?: number): Promise<void> {
    let batch = this.pending.get(record);
    if (!batch) this.pending.set(record, (batch = { rows: [], lines: [] }));
    batch.rows.push(row);
    batch.lines.push(line);
    this.counts[record.name] = (this.counts[record.name] ?? 0) + 1;
    if (batch.rows.length >= INSERT_ROWS) await this.write(record);
  }

  async flush(): Promise<void> {
    for (const record of this.pending.keys()) await this.write(record);
  }

  private async write(record: RecordDef): Promise<void> {
    const batch = this.pending.get(record)!;
    const { rows, lines } = batch;
    if (rows.length === 0) return;
    this.pending.set(record, { rows: [], lines: [] });
    try {
      await this.trx.executeQuery(insertStatement(record, rows));
    } catch (error) {
      throw refusedRows(record, rows, lines, error);
    }
  }
}

/**
 * A batch the database refused, as the line at fault where it can be told: a key given twice is found in
 * the batch by the key the database names.
 */
function refusedRows(record: RecordDef, rows: readonly Row[], lines: readonly (number | undefined)[], error: unknown) {
  const { code, detail } = error as { code?: unknown; detail?: unknown };
  const duplicate = typeof detail === 'string' ? /^Key \((.+)\)=\((.+)\) already exists/.exec(detail) : null;
  if (code === '23505' && duplicate) {
    const columns = duplicate[1]!.split(', ');
    const values = duplicate[2]!.split(', ');
    const matching = rows.flatMap((row, index) =>
      columns.every((column, i) => String(row[column]) === values[i]) ? [lines[index]] : [],
    );
    const line = matching.at(-1);
    if (line !== undefined) {
      const earlier = matching.length > 1 ? ` (also line ${matching.at(-2)})` : ' (as an earlier line does)';
      return new RecordFileError(line, `${record.name} (${duplicate[1]})=(${duplicate[2]}) is given twice${earlier}`);
    }
  }
  const given = lines.filter((line) => line !== undefined);
  const where = given.length > 0 ? `, lines ${given[0]}–${given.at(-1)}` : '';
  return new Error(`${record.name}${where}: ${(error as Error).message}`, { cause: error });
}

export interface ReplaceOptions {
  /** false: refuse a store that holds any record (`StoreNotEmptyError`). */
  readonly replace: boolean;
  /** The demo dataset the new records are, if they are one: what a later reset goes back to. */
  readonly demoDataset: DemoDataset | undefined;
  /** Adds the new records; throwing leaves the store as it was. */
  readonly fill: (sink: RecordSink) => Promise<void>;
  /** Checks the counts of the records written, before they are committed; throwing leaves the store as it was. */
  readonly verify?: (counts: Readonly<RecordCounts>) => void;
}

/**
 * Replaces every record of the store (the catalog's tables and member secrets) in one transaction, and
 * clears the state that described the old ones (`CLEARED_TABLES`). Requests meanwhile see the records
 * before or after, never part of each: the tables are locked for the transaction (reads wait for it on
 * PostgreSQL; the embedded database serves one transaction at a time anyway).
 * @example await replaceRecords(db, { replace: true, demoDataset: undefined, fill: async (sink) => sink.add(recordDef('Account'), row) })
 */
export async function replaceRecords(db: Db, options: ReplaceOptions): Promise<RecordCounts> {
  try {
    return await db.transaction().execute(async (trx) => {
      await sql.raw(`set local lock_timeout = '${LOCK_TIMEOUT}'`).execute(trx);
      await sql.raw(`lock table ${LOCK_ORDER.join(', ')} in access exclusive mode`).execute(trx);
      if (!options.replace && (await storeHoldsRecords(trx))) throw new StoreNotEmptyError();
      const emptied = [...DATA_RECORDS.map((record) => record.table), ...CLEARED_TABLES];
      await sql.raw(`truncate ${emptied.join(', ')} restart identity`).execute(trx);
      const sink = new BatchSink(trx);
      await options.fill(sink);
      await sink.flush();
      options.verify?.(sink.counts);
      // Numbers the records brought with them are taken: the database numbers on from the highest.
      for (const record of RECORDS.filter((r) => r.identityColumn)) {
        const column = record.identityColumn!;
        await sql`select setval(pg_get_serial_sequence(${record.table}, ${column}), coalesce(max(${sql.ref(column)}), 0) + 1, false)
          from ${sql.table(record.table)}`.execute(trx);
      }
      await demoDataset.set(trx, options.demoDataset);
      return { ...sink.counts };
    });
  } catch (error) {
    // lock_not_available: requests held the tables past the lock timeout.
    if ((error as { code?: unknown }).code === '55P03') throw new StoreBusyError(error);
    throw error;
  }
}

/** Whether any record (or member secret) is stored. */
export async function storeHoldsRecords(db: Db): Promise<boolean> {
  const any = DATA_RECORDS.map((record) => `exists (select 1 from ${record.table})`).join(' or ');
  const { rows } = await sql.raw<{ holds: boolean }>(`select ${any} as holds`).execute(db);
  return rows[0]?.holds ?? false;
}

/**
 * Writes every record of the store as a records file, line by line to `write` (awaited, so a slow output
 * holds the reading back): the header, then each record type in catalog order, each ordered by its key,
 * then the member secrets, then the end line with the counts. Each type is read in pages by key, each page
 * a statement of its own, so that no connection or transaction is held while `write` waits (the embedded
 * database has one connection): each record is written once, as it was when its page was read, and one
 * written meanwhile is in the file if its page was read after it (docs/decisions.md, "The line format, and
 * an export read in pages"). A replacement of the records meanwhile fails the export (`StoreReplacedError`)
 * before its end line.
 * @example await exportRecords(db, (line) => lines.push(line))
 */
export async function exportRecords(db: Db, write: (line: string) => unknown): Promise<RecordCounts> {
  const storage = await recordStorage(db);
  const header: RecordFileHeader = {
    coregate: 'records',
    format: RECORD_FILE_FORMAT,
    exportedAt: new Date().toISOString(),
    demoDataset: (await demoDataset.get(db)) ?? null,
  };
  await write(JSON.stringify(header));
  const counts: RecordCounts = {};
  for (const record of DATA_RECORDS) {
    let count = 0;
    for await (const row of rowsByKey(db, record)) {
      await write(recordLine(record, row));
      count += 1;
    }
    counts[record.name] = count;
  }
  if ((await recordStorage(db)) !== storage) throw new StoreReplacedError();
  const end: RecordFileEnd = { coregate: 'end', counts };
  await write(JSON.stringify(end));
  return counts;
}

/**
 * A record type's rows in key order (`bytea` columns as hex), read `PAGE_ROWS` at a time: each page starts
 * after the last key of the one before, so a row is read once however the table changes between pages.
 */
async function* rowsByKey(db: Db, record: RecordDef): AsyncGenerator<Row> {
  const columns = tableColumns(record).map(({ name, sqlType }) =>
    sqlType === 'bytea' ? `encode(${quoted(name)}, 'hex') as ${quoted(name)}` : quoted(name),
  );
  const key = record.primaryKey.map(quoted).join(', ');
  const select = `select ${columns.join(', ')} from ${quoted(record.table)}`;
  const order = sql.raw(`order by ${key} limit ${PAGE_ROWS}`);
  let after: unknown[] | undefined;
  for (;;) {
    const page = after
      ? sql<Row>`${sql.raw(select)} where (${sql.raw(key)}) > (${sql.join(after)}) ${order}`
      : sql<Row>`${sql.raw(select)} ${order}`;
    const { rows } = await page.execute(db);
    yield* rows;
    if (rows.length < PAGE_ROWS) return;
    const last = rows.at(-1)!;
    after = record.primaryKey.map((column) => last[column]);
  }
}

/**
 * Where the record tables' rows are stored (each one's relfilenode), as one text. TRUNCATE gives a table new
 * storage, and every replacement of the records (`replaceRecords`, `coregate seed --reset`) truncates them.
 */
async function recordStorage(db: Db): Promise<string> {
  const nodes = DATA_RECORDS.map((record) => `pg_relation_filenode('${record.table}')`);
  const { rows } = await sql
    .raw<{ storage: string }>(`select concat_ws(',', ${nodes.join(', ')}) as storage`)
    .execute(db);
  return rows[0]!.storage;
}

export interface ImportOptions {
  /** Replace the records the store holds; without it a store that holds any is refused. */
  readonly replace: boolean;
  /** Told how many records are in so far (every thousand, and at the end). */
  readonly onProgress?: (records: number) => void;
}

export interface ImportSummary {
  readonly header: RecordFileHeader;
  readonly counts: RecordCounts;
}

const PROGRESS_EVERY = 1000;

/** The non-blank lines of a text with their numbers (1-based, blank lines counted). */
async function* numberedLines(lines: AsyncIterable<string> | Iterable<string>) {
  let number = 0;
  for await (const text of lines) {
    number += 1;
    if (text.trim() !== '') yield { text, number };
  }
}

/**
 * Loads a records file (its lines, as `coregate export` wrote them) in one transaction: every line is
 * checked against the catalog as it is read, and the first bad one ends the import with a
 * `RecordFileError` naming its line and column; so does a file with fewer or more records than its end
 * line (format 1: its header) counts, and a format 2 file without its end line (cut off). Nothing is
 * applied unless everything is.
 * @example await importRecords(db, secrets, readline.createInterface({ input: createReadStream(file) }), { replace: false })
 */
export async function importRecords(
  db: Db,
  secrets: Secrets,
  lines: AsyncIterable<string> | Iterable<string>,
  options: ImportOptions,
): Promise<ImportSummary> {
  const numbered = numberedLines(lines);
  const first = await numbered.next();
  const header = parseRecordFileHeader(first.done ? undefined : first.value.text);
  let lastLine = 1;
  let end: RecordFileEnd | undefined;
  const counts = await replaceRecords(db, {
    replace: options.replace,
    demoDataset: header.demoDataset ?? undefined,
    fill: async (sink) => {
      let records = 0;
      for await (const { text, number } of numbered) {
        if (end) throw new RecordFileError(number, `follows the end line (line ${lastLine}), which is the last`);
        const decoded = decodeRecordLine(text, number, secrets);
        lastLine = number;
        if ('coregate' in decoded) {
          if (header.format === 1) throw new RecordFileError(number, 'a format 1 file has no end line');
          end = decoded;
          continue;
        }
        await sink.add(decoded.record, decoded.row, number);
        records += 1;
        if (records % PROGRESS_EVERY === 0) options.onProgress?.(records);
      }
      options.onProgress?.(records);
    },
    verify: (counts) => {
      if (header.format !== 1 && !end) {
        throw new RecordFileError(
          lastLine,
          'the file ends without its end line ({"coregate":"end",…}): it was cut off, or is not a whole export',
        );
      }
      const announced = header.format === 1 ? header.counts : end?.counts;
      const where = header.format === 1 ? 'its header' : 'its end line';
      for (const { name } of announced ? DATA_RECORDS : []) {
        const count = announced?.[name] ?? 0;
        const found = counts[name] ?? 0;
        if (found !== count) {
          throw new RecordFileError(
            lastLine,
            `the file holds ${found} ${name} records where ${where} counts ${count}: it is incomplete or was edited`,
          );
        }
      }
    },
  });
  return { header, counts };
}
