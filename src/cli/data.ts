/**
 * The data lifecycle of a store: `coregate export` writes every record to a records file, `coregate
 * import` loads one in a single transaction, `coregate reset` goes back to the seeded demo dataset.
 */
import { once } from 'node:events';
import { createReadStream, createWriteStream, renameSync, rmSync, statSync } from 'node:fs';
import { createInterface } from 'node:readline';
import type { Writable } from 'node:stream';
import type { Config } from '../config.js';
import { resetToDemo } from '../seed/reset.js';
import { createProgress } from '../seed/progress.js';
import { DEFAULT_SEED } from '../seed/load.js';
import { demoDataset, type DemoDataset } from '../store/access.js';
import type { RecordFileHeader } from '../store/record-file.js';
import { exportRecords, importRecords, StoreNotEmptyError, type RecordCounts } from '../store/record-transfer.js';
import { integerOption, parseCommand, UsageError, type CommandSpec } from './args.js';
import { storeOnly, withRuntime } from './commands.js';

type Print = (line: string) => void;

const toStderr: Print = (line) => process.stderr.write(`${line}\n`);
const integer = new Intl.NumberFormat('en-US');
const total = (counts: RecordCounts) => Object.values(counts).reduce((sum, count) => sum + count, 0);
const seconds = (started: number) => `${((performance.now() - started) / 1000).toFixed(1)} s`;
const describeDataset = ({ seed, accounts }: DemoDataset) =>
  `seed ${seed}, ${integer.format(accounts)} account${accounts === 1 ? '' : 's'}`;

/** Writes a line, waiting while the output's buffer is full. */
function lineWriter(output: Writable): (line: string) => Promise<void> | undefined {
  return (line) => (output.write(`${line}\n`) ? undefined : once(output, 'drain').then(() => undefined));
}

const EXPORT: CommandSpec = {
  usage: `Usage: coregate export [--out FILE]

Writes every record of the store as NDJSON: a header line, then one line per record
({"record":"<Name>", <column>: <value>, …}) in catalog order, FM history included, then the member
secrets. Protected values are written as stored: SSNs, card and MICR numbers as their HMAC and
ciphertext (readable only under this store's secret), member passwords as scrypt hashes. API tokens,
users, the administrative password and the audit trail are not exported.
  --out FILE   write to FILE, which appears only once complete (default: standard output)`,
  options: { out: { type: 'string' } },
};

export async function exportCommand(argv: string[], config: Config, print: Print): Promise<void> {
  const { values, flags } = parseCommand(EXPORT, argv);
  if (flags.has('help')) return print(EXPORT.usage);
  storeOnly(config, 'export');
  const out = values.out;
  const partial = out === undefined ? undefined : `${out}.partial`;
  const output = partial === undefined ? process.stdout : createWriteStream(partial, { mode: 0o600 });
  try {
    const { counts, started } = await withRuntime(config, async ({ database }) => {
      const started = performance.now();
      return { counts: await exportRecords(database.db, lineWriter(output)), started };
    });
    if (partial !== undefined && out !== undefined) {
      await new Promise<void>((resolve, reject) =>
        output.end((error?: Error | null) => (error ? reject(error) : resolve())),
      );
      renameSync(partial, out);
    }
    // On standard output the records are the output: the summary goes to stderr.
    (out === undefined ? toStderr : print)(
      `Exported ${integer.format(total(counts))} records (${integer.format(counts.Account ?? 0)} accounts)${out === undefined ? '' : ` to ${out}`} in ${seconds(started)}`,
    );
  } catch (error) {
    if (partial !== undefined) {
      output.destroy();
      rmSync(partial, { force: true });
    }
    // A reader that stops early (`coregate export | head`) is not a failure of the export.
    if (out === undefined && (error as { code?: unknown }).code === 'EPIPE') return;
    throw error;
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

/** Records the file announces in its header, or else its lines after the header, for the progress bar. */
async function recordsInFile(file: string): Promise<number> {
  const input = createReadStream(file);
  try {
    let lines = -1;
    for await (const line of createInterface({ input, crlfDelay: Infinity })) {
      if (lines === -1) {
        try {
          const counts = (JSON.parse(line) as Partial<RecordFileHeader>).counts;
          if (counts && typeof counts === 'object') return total(counts as RecordCounts);
        } catch {
          // Not a header: the import says so.
        }
      }
      if (line.trim() !== '') lines += 1;
    }
    return Math.max(lines, 0);
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
  const announced = await recordsInFile(file);
  const input = createReadStream(file);
  try {
    const { header, counts, started } = await withRuntime(config, async ({ database, secrets }) => {
      // Counted from here: opening (and on a new data directory, creating) the database is not importing.
      const started = performance.now();
      const progress = createProgress('Importing records', announced);
      const summary = await importRecords(database.db, secrets, createInterface({ input, crlfDelay: Infinity }), {
        replace: flags.has('replace'),
        onProgress: (records) => progress.update(records),
      });
      progress.finish();
      return { ...summary, started };
    });
    print(
      `Imported ${integer.format(total(counts))} records (${integer.format(counts.Account ?? 0)} accounts) from ${file} in ${seconds(started)}`,
    );
    if (header.demoDataset) {
      print(`The records are demo dataset ${describeDataset(header.demoDataset)}: coregate reset goes back to it`);
    }
  } catch (error) {
    // The bar's line is left as it was drawn; the error starts on a line of its own.
    if (process.stderr.isTTY) process.stderr.write('\n');
    if (error instanceof StoreNotEmptyError) {
      throw new UsageError('The store already holds records; add --replace to replace them');
    }
    throw new Error(`${(error as Error).message}; nothing was imported`, { cause: error });
  } finally {
    input.destroy();
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
  const given =
    values.accounts === undefined
      ? undefined
      : { seed: integerOption(values.seed, 'seed', DEFAULT_SEED, RESET), accounts };
  storeOnly(config, 'reset');
  await withRuntime(config, async ({ database: { db }, secrets }) => {
    const dataset = given ?? (await demoDataset.get(db));
    if (!dataset) {
      throw new UsageError(
        'This store records no demo dataset (its records were imported, or seeded by an earlier coregate); give --accounts N [--seed S]',
      );
    }
    const progress = createProgress('Resetting accounts', dataset.accounts);
    const { counts, elapsedMs } = await resetToDemo(db, secrets, dataset, {
      onProgress: (done) => progress.update(done),
    });
    progress.finish();
    print(
      `Reset to demo dataset ${describeDataset(dataset)} (${integer.format(total(counts))} records) in ${(elapsedMs / 1000).toFixed(1)} s; API tokens, users and the administrative password are unchanged`,
    );
  });
}
