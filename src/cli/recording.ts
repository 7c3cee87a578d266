/**
 * `coregate recording import` and `coregate recording replay` (docs/recording.md): a cassette recorded by a
 * gateway (COREGATE_RECORD_DIR) made into a store of its own, or answered back as it was recorded.
 */
import { randomBytes } from 'node:crypto';
import { createReadStream, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import type { FastifyInstance } from 'fastify';
import { loadConfig, type Config } from '../config.js';
import type { CassetteLine } from '../recording/cassette.js';
import { integerOption, parseCommand, UsageError, type CommandSpec } from './args.js';
import { storeOnly } from './commands.js';
import { importCommand } from './data.js';

type Print = (line: string) => void;

/** What the replay's log names as its core: no core is called. */
const REPLAY_CORE_URL = 'http://replay.invalid';

const USAGE = `Usage: coregate recording import <cassette…> [--replace]
       coregate recording replay <cassette…> [--port N] [--no-latency]

A cassette is a file a gateway recorded with COREGATE_RECORD_DIR set, or that directory (its files, oldest
first). Its member data are pseudonyms already; the recording secret is not needed.

import   builds the store (COREGATE_DATA_DIR, or DATABASE_URL) from the cassette: the accounts, shares and
         sub-records, collateral and corporate transfers its reads answered, and the cards, names, users,
         MICR numbers and lookups its findBy calls found. "coregate serve" then answers them and takes updates.
  --replace      replace the records the store holds

replay   answers the recorded exchanges, stateless, on the JSON API and the SOAP face (PORT, or --port), after
         their recorded latency; a request the recording has no exchange for is 404 NOT_FOUND. On SIGINT or
         SIGTERM it prints the requests it could not match.
  --port N       the port to listen on (default PORT, 8627)
  --no-latency   answer at once`;

const IMPORT: CommandSpec = { usage: USAGE, options: { replace: { type: 'boolean' } } };
const REPLAY: CommandSpec = {
  usage: USAGE,
  options: { port: { type: 'string' }, 'no-latency': { type: 'boolean' } },
};

/** The exchanges of cassette files and record dirs, in the order they were recorded. */
export async function readCassettes(paths: readonly string[]): Promise<CassetteLine[]> {
  const { cassetteFiles } = await import('../recording/cassette.js');
  const files: string[] = [];
  for (const path of paths) {
    let isDir: boolean;
    try {
      isDir = statSync(path).isDirectory();
    } catch (error) {
      throw new UsageError(`Cannot read ${path}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`);
    }
    if (isDir) files.push(...(await cassetteFiles(path)).map((name) => join(path, name)));
    else files.push(path);
  }
  const lines: CassetteLine[] = [];
  for (const file of files) {
    let number = 0;
    for await (const text of createInterface({ input: createReadStream(file), crlfDelay: Infinity })) {
      number += 1;
      if (text.trim() === '') continue;
      try {
        lines.push(JSON.parse(text) as CassetteLine);
      } catch {
        throw new UsageError(`${file} line ${number} is not JSON: is it a cassette?`);
      }
    }
  }
  if (lines.length === 0) throw new UsageError(`No exchanges in ${paths.join(', ')}`);
  return lines;
}

export async function recordingCommand(argv: string[], config: Config, print: Print): Promise<void> {
  const [action, ...rest] = argv;
  if (action === 'import') return importRecording(rest, config, print);
  if (action === 'replay') return replayRecording(rest, config, print);
  if (action === '--help' || action === undefined) return print(USAGE);
  throw new UsageError(`Unknown recording command "${action}"\n\n${USAGE}`);
}

async function importRecording(argv: string[], config: Config, print: Print): Promise<void> {
  const { flags, positionals } = parseCommand(IMPORT, argv);
  if (flags.has('help')) return print(USAGE);
  if (positionals.length === 0) throw new UsageError(`Give the cassettes to import\n\n${USAGE}`);
  storeOnly(config, 'recording import');
  const exchanges = await readCassettes(positionals);
  const { openRuntime } = await import('../runtime.js');
  const { cassetteRecords } = await import('../recording/import.js');
  // The records are sealed under the store's own secret, as an export of it would be.
  const runtime = await openRuntime(config);
  const records = await (async () => {
    try {
      return cassetteRecords(exchanges, runtime.secrets);
    } finally {
      await runtime.database.close();
    }
  })();
  const dir = mkdtempSync(join(tmpdir(), 'coregate-recording-'));
  const file = join(dir, 'records.ndjson');
  try {
    writeFileSync(file, `${records.lines.join('\n')}\n`, { mode: 0o600 });
    await importCommand([file, ...(flags.has('replace') ? ['--replace'] : [])], config, print);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  for (const [field, count] of Object.entries(records.refused))
    print(`Left out ${count} value${count === 1 ? '' : 's'} of ${field} the catalog's rules refuse`);
  if (records.release)
    print(
      `The recording is of SymXchange ${records.release}: the SOAP face serves it at /SymXchange/${records.release === '3.0' ? '' : `${records.release}/`}<service>`,
    );
}

/** A replay listening: its app, the token its JSON API takes, and the requests it could not match. */
export interface Replay {
  readonly app: FastifyInstance;
  readonly token: string;
  readonly release: string;
  unmatched(): readonly { operation: string; keys: string; count: number }[];
  close(): Promise<void>;
}

/**
 * A replay of the exchanges on an in-memory store of its own (tokens and the audit trail only).
 * @example const replay = await startReplay(await readCassettes(['recordings/']), config); await replay.app.listen({ port: 8627 });
 */
export async function startReplay(
  exchanges: readonly CassetteLine[],
  config: Config,
  options: { latency?: boolean; logger?: boolean } = {},
): Promise<Replay> {
  const [{ openDatabase }, { migrate }, { secretsFromMaster }, { tokens }, { SCOPES }, { buildApp }, operations] =
    await Promise.all([
      import('../database/database.js'),
      import('../database/migrations.js'),
      import('../crypto/secrets.js'),
      import('../store/access.js'),
      import('../contract/scopes.js'),
      import('../http/app.js'),
      import('../operations/index.js'),
    ]);
  const { replayCore } = await import('../core/replay-core.js');
  const database = await openDatabase({});
  await migrate(database.db, database.kind);
  const { token } = await tokens.create(database.db, 'replay', SCOPES);
  const core = replayCore(exchanges, {
    operations: operations.CORE_OPERATIONS,
    schemas: operations.SHARED_SCHEMAS,
    listMaximum: config.listMaximum,
    pageMaximum: config.pageMaximum,
    latency: options.latency,
  });
  const app = await buildApp({
    db: database.db,
    databaseKind: database.kind,
    secrets: secretsFromMaster(randomBytes(32)),
    // The core verifies credentials in gateway mode: the replay takes whatever the recorded client sent.
    config: {
      ...config,
      soapAuth: 'credentials',
      databaseUrl: undefined,
      recording: undefined,
      // Gateway mode's settings, for what the app says of its core: the replay stands where the core was.
      core: 'symxchange',
      symxchange: loadConfig({ COREGATE_CORE: 'symxchange', COREGATE_SYMXCHANGE_URL: REPLAY_CORE_URL }).symxchange,
    },
    core,
    logger: options.logger ?? false,
  });
  return {
    app,
    token,
    release: core.release,
    unmatched: () => core.unmatched(),
    async close() {
      await app.close();
      await database.close();
    },
  };
}

async function replayRecording(argv: string[], config: Config, print: Print): Promise<void> {
  const { flags, values, positionals } = parseCommand(REPLAY, argv);
  if (flags.has('help')) return print(USAGE);
  if (positionals.length === 0) throw new UsageError(`Give the cassettes to replay\n\n${USAGE}`);
  const port = integerOption(values.port, 'port', config.port, REPLAY);
  const exchanges = await readCassettes(positionals);
  const replay = await startReplay(exchanges, config, { latency: !flags.has('no-latency') });
  const address = await replay.app.listen({ port, host: config.host });
  print(`Replaying ${exchanges.length} exchanges of SymXchange ${replay.release} at ${address}`);
  print(`JSON API token: ${replay.token}`);
  await new Promise<void>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
  await replay.close();
  const unmatched = replay.unmatched();
  print(
    unmatched.length === 0
      ? 'Every request matched a recorded exchange'
      : `${unmatched.length} request${unmatched.length === 1 ? '' : 's'} matched no recorded exchange:`,
  );
  for (const { operation, keys, count } of unmatched) print(`  ${operation} ${keys} (${count}×)`);
}
