/**
 * The data lifecycle of a store: `coregate export` writes every record to a records file, `coregate
 * import` loads one in a single transaction, `coregate reset` goes back to the seeded demo dataset.
 */
import { once } from 'node:events';
import { createReadStream, createWriteStream, renameSync, rmSync, statSync } from 'node:fs';
import { createInterface } from 'node:readline';
import type { Writable } from 'node:stream';
import type { Config } from '../config.js';
import type { Imported, ResetAnswer, ResetBody } from '../contract/admin.js';
import { importRecordFile, storeBusy } from '../operations/administration.js';
import { resetToDemo } from '../seed/reset.js';
import { createProgress } from '../seed/progress.js';
import { DEFAULT_SEED } from '../seed/load.js';
import { demoDataset, type DemoDataset } from '../store/access.js';
import { recordFileEndOf, type RecordFileHeader } from '../store/record-file.js';
import { exportRecords, StoreBusyError, type RecordCounts } from '../store/record-transfer.js';
import { integerOption, parseCommand, UsageError, type CommandSpec } from './args.js';
import { administer, storeOnly } from './commands.js';
import { adminCall, adminStream, adminUpload } from './remote.js';

type Print = (line: string) => void;

const toStderr: Print = (line) => process.stderr.write(`${line}\n`);
const integer = new Intl.NumberFormat('en-US');
const total = (counts: RecordCounts) => Object.values(counts).reduce((sum, count) => sum + count, 0);
const seconds = (started: number) => `${((performance.now() - started) / 1000).toFixed(1)} s`;
const describeDataset = ({ seed, accounts }: DemoDataset) =>
  `seed ${seed}, ${integer.format(accounts)} account${accounts === 1 ? '' : 's'}`;

/** Writes a line, waiting while the output's buffer is full; throws once the output failed or closed. */
function lineWriter(output: Writable): (line: string) => Promise<void> | undefined {
  return (line) => {
    if (output.destroyed) throw output.errored ?? new Error('the output was closed');
    if (output.write(`${line}\n`)) return undefined;
    // `once` rejects when the output emits an error; a close without one ends the wait too. The wait's
    // listeners go with it (aborted once one event came).
    const waiting = new AbortController();
    const { signal } = waiting;
    return Promise.race([once(output, 'drain', { signal }), once(output, 'close', { signal })])
      .finally(() => waiting.abort())
      .then(() => {
        if (output.destroyed) throw output.errored ?? new Error('the output was closed');
      });
  };
}

const EXPORT: CommandSpec = {
  usage: `Usage: coregate export [--out FILE]

Writes every record of the store as NDJSON: a header line, then one line per record
({"record":"<Name>", <column>: <value>, …}) in catalog order, FM history included, then the member
secrets, then an end line counting them. Protected values are written as stored: SSNs, card and MICR
numbers as their HMAC and ciphertext (readable only under this store's secret), member passwords as
scrypt hashes. API tokens, users, the administrative password and the audit trail are not exported.
  --out FILE   write to FILE, which appears only once complete (default: standard output)`,
  options: { out: { type: 'string' } },
};

/**
 * Writes the records file, from the live server's admin API when one holds the data directory (or
 * COREGATE_URL is set), else from the data directory; returns its counts (its end line's).
 */
async function writeExport(config: Config, write: (line: string) => Promise<void> | undefined): Promise<RecordCounts> {
  return administer<RecordCounts>(config, 'export', {
    local: async ({ database }) => exportRecords(database.db, write),
    remote: async (server) => {
      let lines = 0;
      let last: string | undefined;
      for await (const line of adminStream(server, '/admin/export')) {
        lines += 1;
        last = line;
        await write(line);
      }
      // The end line comes last and counts every record: without it, or with fewer lines, the answer was cut off.
      const counts = recordFileEndOf(last)?.counts;
      const records = Math.max(lines - 1, 0) - (counts ? 1 : 0);
      if (counts === undefined || records !== total(counts)) {
        throw new Error(`the export of ${server.description} ended after ${records} records, before its end`);
      }
      return counts;
    },
  });
}

export async function exportCommand(argv: string[], config: Config, print: Print): Promise<void> {
  const { values, flags } = parseCommand(EXPORT, argv);
  if (flags.has('help')) return print(EXPORT.usage);
  storeOnly(config, 'export');
  const out = values.out;
  const started = performance.now();
  if (out === undefined) {
    try {
      const counts = await writeExport(config, lineWriter(process.stdout));
      // On standard output the records are the output: the summary goes to stderr.
      toStderr(
        `Exported ${integer.format(total(counts))} records (${integer.format(counts.Account ?? 0)} accounts) in ${seconds(started)}`,
      );
    } catch (error) {
      // A reader that stops early (`coregate export | head`) is not a failure of the export.
      if ((error as { code?: unknown }).code === 'EPIPE') return;
      throw error;
    }
    return;
  }
  // The file appears whole or not at all: written beside it, renamed once complete, removed on any failure.
  const partial = `${out}.partial`;
  const file = createWriteStream(partial, { mode: 0o600 });
  // A write error (a full disk) is found by the next line written, or by the end: never an uncaught event.
  file.on('error', () => undefined);
  const opened = once(file, 'open').then(
    () => undefined,
    (error: unknown) => error,
  );
  const removePartial = () => rmSync(partial, { force: true });
  const interrupted = (signal: NodeJS.Signals) => {
    file.destroy();
    removePartial();
    process.exit(signal === 'SIGINT' ? 130 : 143);
  };
  process.once('SIGINT', interrupted);
  process.once('SIGTERM', interrupted);
  try {
    // A file that cannot be created stops the export before anything is read.
    const failedToOpen = await opened;
    if (failedToOpen) throw failedToOpen;
    const counts = await writeExport(config, lineWriter(file));
    await new Promise<void>((resolve, reject) =>
      file.end((error?: Error | null) => (error ? reject(error) : resolve())),
    );
    renameSync(partial, out);
    print(
      `Exported ${integer.format(total(counts))} records (${integer.format(counts.Account ?? 0)} accounts) to ${out} in ${seconds(started)}`,
    );
  } catch (error) {
    // Closed first: a file still being opened or written would be created again after its removal.
    if (!file.closed) {
      file.destroy();
      await once(file, 'close').catch(() => undefined);
    }
    removePartial();
    throw error;
  } finally {
    process.removeListener('SIGINT', interrupted);
    process.removeListener('SIGTERM', interrupted);
  }
}

const IMPORT: CommandSpec = {
  usage: `Usage: coregate import FILE [--replace]

Loads a records file written by coregate export, in one transaction. Every line is checked against the
record catalog (record type, columns, types and rules); the first bad line stops the import with its
line number and column, and nothing is applied. Protected values must have been exported under this
store's secret (COREGATE_SECRET, or the data directory's secret.key). Idempotency keys and lockouts are
cleared; tokens, users, the administrative password and the audit trail stay.
  --replace    replace the records the store holds (without it, a store that holds any is refused)`,
  options: { replace: { type: 'boolean' } },
};

/**
 * Records the file announces in its end line (format 1: its header), or else its lines after the header,
 * for the progress bar.
 */
async function recordsInFile(file: string): Promise<number> {
  const input = createReadStream(file);
  try {
    let lines = -1;
    let last: string | undefined;
    for await (const line of createInterface({ input, crlfDelay: Infinity })) {
      if (lines === -1) {
        try {
          const counts = (JSON.parse(line) as Partial<RecordFileHeader>).counts;
          if (counts && typeof counts === 'object') return total(counts as RecordCounts);
        } catch {
          // Not a header: the import says so.
        }
      }
      if (line.trim() === '') continue;
      lines += 1;
      last = line;
    }
    const end = lines > 0 ? recordFileEndOf(last) : undefined;
    return end ? total(end.counts) : Math.max(lines, 0);
  } finally {
    input.destroy();
  }
}

export async function importCommand(argv: string[], config: Config, print: Print): Promise<void> {
  const { flags, positionals } = parseCommand(IMPORT, argv);
  if (flags.has('help')) return print(IMPORT.usage);
  const file = positionals[0];
  if (file === undefined || positionals.length > 1) throw new UsageError(`Give one FILE to import\n\n${IMPORT.usage}`);
  try {
    if (!statSync(file).isFile()) throw new Error('not a file');
  } catch (error) {
    throw new UsageError(`Cannot read ${file}: ${(error as Error).message}`);
  }
  storeOnly(config, 'import');
  const replace = flags.has('replace');
  let imported: Imported;
  try {
    imported = await administer<Imported>(config, 'import', {
      remote: (server) => adminUpload(server, `/admin/import${replace ? '?replace=true' : ''}`, file),
      local: async ({ database, secrets }) => {
        const progress = createProgress('Importing records', await recordsInFile(file));
        const input = createReadStream(file);
        try {
          const lines = createInterface({ input, crlfDelay: Infinity });
          const summary = await importRecordFile(database.db, secrets, lines, {
            replace,
            onProgress: (records) => progress.update(records),
          });
          progress.finish();
          return summary;
        } finally {
          input.destroy();
        }
      },
      rewrite: (code) =>
        code === 'STORE_NOT_EMPTY'
          ? new UsageError('The store already holds records; add --replace to replace them')
          : undefined,
    });
  } catch (error) {
    // The bar's line is left as it was drawn; the error starts on a line of its own.
    if (process.stderr.isTTY) process.stderr.write('\n');
    if (error instanceof UsageError) throw error;
    const message = (error as Error).message;
    throw new Error(message.endsWith('nothing was imported') ? message : `${message}; nothing was imported`, {
      cause: error,
    });
  }
  print(
    `Imported ${integer.format(total(imported.records))} records (${integer.format(imported.records.Account ?? 0)} accounts) from ${file} in ${(imported.elapsedMs / 1000).toFixed(1)} s`,
  );
  if (imported.demoDataset) {
    print(`The records are demo dataset ${describeDataset(imported.demoDataset)}: coregate reset goes back to it`);
  }
}

const RESET: CommandSpec = {
  usage: `Usage: coregate reset [--accounts N [--seed S]]

Puts the store back to its seeded demo dataset, in one transaction: every record (FM history included)
and the demo member secrets as seeded; idempotency keys and lockouts cleared. API tokens, users, the
administrative password (so demo-credentials.json stays true) and the audit trail are kept. A running
server does the same on POST /admin/reset.
  --accounts N   reset to N accounts instead of the dataset the store was seeded with
  --seed S       generator seed with --accounts (default ${DEFAULT_SEED})`,
  options: { accounts: { type: 'string' }, seed: { type: 'string' } },
};

export async function resetCommand(argv: string[], config: Config, print: Print): Promise<void> {
  const { values, flags } = parseCommand(RESET, argv);
  if (flags.has('help')) return print(RESET.usage);
  if (values.seed !== undefined && values.accounts === undefined) {
    throw new UsageError(`--seed needs --accounts\n\n${RESET.usage}`);
  }
  const accounts = integerOption(values.accounts, 'accounts', 0, RESET);
  if (values.accounts !== undefined && accounts < 1)
    throw new UsageError(`--accounts must be at least 1\n\n${RESET.usage}`);
  const given: ResetBody | undefined =
    values.accounts === undefined
      ? undefined
      : { seed: integerOption(values.seed, 'seed', DEFAULT_SEED, RESET), accounts };
  storeOnly(config, 'reset');
  const noDataset = () =>
    new UsageError(
      'This store records no demo dataset (its records were imported, or seeded by an earlier coregate); give --accounts N [--seed S]',
    );
  const answer = await administer<ResetAnswer>(config, 'reset', {
    remote: (server) => adminCall(server, 'POST', '/admin/reset', given ?? {}),
    local: async ({ database: { db }, secrets }) => {
      const dataset = given ? { seed: given.seed ?? DEFAULT_SEED, accounts } : await demoDataset.get(db);
      if (!dataset) throw noDataset();
      const progress = createProgress('Resetting accounts', dataset.accounts);
      try {
        const { counts, elapsedMs } = await resetToDemo(db, secrets, dataset, {
          onProgress: (done) => progress.update(done),
        });
        progress.finish();
        return { status: 'reset', dataset, records: counts, elapsedMs };
      } catch (error) {
        throw error instanceof StoreBusyError ? storeBusy(error) : error;
      }
    },
    rewrite: (code) => (code === 'NOT_A_DEMO_DATASET' ? noDataset() : undefined),
  });
  print(
    `Reset to demo dataset ${describeDataset(answer.dataset)} (${integer.format(total(answer.records))} records) in ${(answer.elapsedMs / 1000).toFixed(1)} s; API tokens, users and the administrative password are unchanged`,
  );
}
