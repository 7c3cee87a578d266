/**
 * The benchmark's datasets: a PostgreSQL database per size (`coregate_bench_<accounts>`) and a PGlite
 * directory, each seeded through the coregate CLI with its API token and administrative password, with
 * its own data directory under bench/.data for the master secret, the credentials and a marker that says
 * what was seeded, so `--reuse` can skip seeding. A run never touches a seeded dataset: it measures a
 * copy made for it (`CREATE DATABASE … TEMPLATE`, or a copy of the PGlite directory), dropped when it ends,
 * so the updates, audit events and paging of one run leave nothing for the next.
 */
import { chmodSync, cpSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { BENCH_DIR, COREGATE, runCommand } from './servers.js';

const DATA_DIR = join(BENCH_DIR, '.data');
/** Where the copies a run measures live. */
const RUN_DIR = join(DATA_DIR, 'run');
const MARKER = 'bench-dataset.json';
const CREDENTIALS = 'bench-credentials.json';

/** The most accounts seeded into PGlite, whatever --accounts says. */
export const PGLITE_MAX_ACCOUNTS = 100_000;

/** Rate limits high enough never to answer 429 under load. */
const UNLIMITED = '100000000';

export interface Seeding {
  readonly accounts: number;
  readonly seed: number;
  /** Seeding time as the CLI reports it. */
  readonly seconds: number;
  /** The whole CLI run: process start, migrations, seeding and member secrets. */
  readonly wallSeconds: number;
  readonly accountsPerSecond: number;
  readonly seededAt: string;
}

export interface Dataset {
  readonly kind: 'postgres' | 'pglite';
  /** The seeded database's name or data directory (the run measures a copy). */
  readonly name: string;
  readonly accounts: number;
  readonly seed: number;
  /** Environment of every coregate process on this run's copy of the dataset. */
  readonly env: NodeJS.ProcessEnv;
  readonly seeding: Seeding;
  /** Seeded by an earlier run and reused. */
  readonly reused: boolean;
  /** The token and administrative password made when it was seeded. */
  readonly credentials: Credentials;
  /** Another copy of the seeded dataset, for a server that must not share this run's copy (PGlite is one process's). */
  copy(label: string): Promise<NodeJS.ProcessEnv>;
}

export interface Credentials {
  readonly token: string;
  readonly adminPassword: string;
}

/**
 * Settings of coregate that are the bench's to choose, never taken from its environment: where the data is,
 * the secret and password the datasets were seeded with, and what answers (a store or a core).
 */
const BENCH_SETTINGS =
  /^(COREGATE_DATA_DIR|COREGATE_SECRET|COREGATE_ADMIN_PASSWORD_HASH|COREGATE_CORE|COREGATE_SYMXCHANGE_.*|COREGATE_SOAP_AUTH)$/;

/**
 * The environment of the bench's processes: the bench's own, with its `COREGATE_*` settings passed
 * through (e.g. `COREGATE_DB_POOL=20 npm run bench`) except the ones the bench chooses itself, and no
 * database, Redis, port or log level of the caller's.
 */
function cleanEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (BENCH_SETTINGS.test(name) || ['DATABASE_URL', 'REDIS_URL', 'PORT', 'HOST', 'LOG_LEVEL'].includes(name))
      continue;
    env[name] = value;
  }
  return env;
}

/** The `COREGATE_*` settings passed through from the bench's environment, for the results. */
export function passedSettings(): Record<string, string> {
  return Object.fromEntries(
    Object.entries(cleanEnv()).filter((entry): entry is [string, string] => entry[0].startsWith('COREGATE_')),
  );
}

function coregateEnv(dataDir: string, databaseUrl?: string): NodeJS.ProcessEnv {
  return {
    ...cleanEnv(),
    COREGATE_DATA_DIR: dataDir,
    ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
    COREGATE_RATE_LIMIT: UNLIMITED,
    COREGATE_FINDBY_RATE_LIMIT: UNLIMITED,
    LOG_LEVEL: 'warn',
  };
}

/** Runs `coregate <args>` from the repository. */
function coregate(args: readonly string[], env: NodeJS.ProcessEnv, echo = false) {
  return runCommand(COREGATE.command, [...COREGATE.args, ...args], env, { echo });
}

function readMarker(dataDir: string): Seeding | undefined {
  const file = join(dataDir, MARKER);
  return existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as Seeding) : undefined;
}

/** Seeds through the CLI (its progress bar on the terminal) and writes the marker. */
async function seed(dataDir: string, env: NodeJS.ProcessEnv, accounts: number, seedValue: number): Promise<Seeding> {
  rmSync(join(dataDir, MARKER), { force: true });
  const started = performance.now();
  const { stdout } = await coregate(
    ['seed', '--accounts', String(accounts), '--seed', String(seedValue), '--reset'],
    env,
    true,
  );
  const wallSeconds = (performance.now() - started) / 1000;
  const reported = /Seeded \d+ accounts .* in ([\d.]+) s/.exec(stdout)?.[1];
  const seconds = reported ? Number(reported) : wallSeconds;
  const seeding: Seeding = {
    accounts,
    seed: seedValue,
    seconds,
    wallSeconds: Math.round(wallSeconds * 10) / 10,
    accountsPerSecond: Math.round(accounts / seconds),
    seededAt: new Date().toISOString(),
  };
  writeFileSync(join(dataDir, MARKER), `${JSON.stringify(seeding, null, 2)}\n`);
  return seeding;
}

const matches = (marker: Seeding | undefined, accounts: number, seedValue: number): marker is Seeding =>
  marker?.accounts === accounts && marker.seed === seedValue;

function databaseUrl(adminUrl: string, database: string): string {
  const url = new URL(adminUrl);
  url.pathname = `/${database}`;
  return url.toString();
}

async function withClient<T>(url: string, run: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await run(client);
  } finally {
    await client.end();
  }
}

async function databaseExists(adminUrl: string, database: string): Promise<boolean> {
  return withClient(adminUrl, async (client) => {
    const { rowCount } = await client.query('select 1 from pg_database where datname = $1', [database]);
    return (rowCount ?? 0) > 0;
  });
}

async function accountCount(url: string): Promise<number> {
  return withClient(url, async (client) => {
    const { rows } = await client.query<{ n: string }>('select count(*) as n from account');
    return Number(rows[0]?.n ?? 0);
  });
}

async function recreateDatabase(adminUrl: string, database: string): Promise<void> {
  await withClient(adminUrl, async (client) => {
    await client.query(`drop database if exists "${database}" with (force)`);
    await client.query(`create database "${database}"`);
  });
}

/** The PostgreSQL server's version, from the admin connection. */
export function postgresVersion(adminUrl: string): Promise<string> {
  return withClient(adminUrl, async (client) => {
    const { rows } = await client.query<{ server_version: string }>('show server_version');
    return rows[0]?.server_version ?? 'unknown';
  });
}

/**
 * The credentials of a seeded dataset, made once (a token with every scope and an administrative password)
 * and kept in its data directory (mode 0600), so runs create none.
 */
async function datasetCredentials(dataDir: string, env: NodeJS.ProcessEnv): Promise<Credentials> {
  const file = join(dataDir, CREDENTIALS);
  if (existsSync(file)) return JSON.parse(readFileSync(file, 'utf8')) as Credentials;
  const created = await coregate(['token', 'create', '--name', 'bench'], env);
  const token = created.stdout.split('\n')[0]?.trim() ?? '';
  const password = await coregate(['admin-password'], env);
  const adminPassword = /Administrative password: (\S+)/.exec(password.stdout)?.[1];
  if (!token || !adminPassword) {
    throw new Error(`Could not read the credentials from the CLI:\n${created.stdout}${password.stdout}`);
  }
  const credentials: Credentials = { token, adminPassword };
  writeFileSync(file, `${JSON.stringify(credentials, null, 2)}\n`, { mode: 0o600 });
  chmodSync(file, 0o600);
  return credentials;
}

/** Copies of this run, removed when it ends (`dropRunCopies`). */
const runCopies: { readonly adminUrl?: string; readonly database?: string; readonly dir?: string }[] = [];

/** A copy of a seeded PostgreSQL database for this run (a file copy: no seeding, no replay). */
async function copyDatabase(adminUrl: string, seeded: string, copy: string): Promise<void> {
  await withClient(adminUrl, async (client) => {
    await client.query(`drop database if exists "${copy}" with (force)`);
    await client.query(`create database "${copy}" template "${seeded}"`);
  });
  runCopies.push({ adminUrl, database: copy });
}

/** A copy of a seeded PGlite data directory for this run. */
function copyDirectory(seeded: string, copy: string): void {
  rmSync(copy, { recursive: true, force: true });
  cpSync(seeded, copy, { recursive: true });
  runCopies.push({ dir: copy });
}

/** Removes this run's copies of the datasets (the seeded ones stay as they were seeded). */
export async function dropRunCopies(): Promise<void> {
  for (const copy of runCopies.splice(0)) {
    if (copy.dir) rmSync(copy.dir, { recursive: true, force: true });
    if (copy.adminUrl && copy.database) {
      const { adminUrl, database } = copy;
      await withClient(adminUrl, (client) => client.query(`drop database if exists "${database}" with (force)`)).catch(
        () => undefined,
      );
    }
  }
}

/**
 * The PostgreSQL dataset of `accounts` accounts in database coregate_bench_<accounts>: reused when
 * asked and its marker and account count agree, otherwise dropped, recreated and seeded. The run measures
 * a copy, coregate_bench_<accounts>_run.
 */
export async function preparePostgres(
  adminUrl: string,
  accounts: number,
  seedValue: number,
  reuse: boolean,
): Promise<Dataset> {
  const name = `coregate_bench_${accounts}`;
  const dataDir = join(DATA_DIR, `postgres-${accounts}`);
  const seededEnv = coregateEnv(dataDir, databaseUrl(adminUrl, name));
  const runEnv = (copy: string) => coregateEnv(dataDir, databaseUrl(adminUrl, copy));
  const marker = readMarker(dataDir);
  let seeding: Seeding;
  let reused = false;
  if (
    reuse &&
    matches(marker, accounts, seedValue) &&
    (await databaseExists(adminUrl, name)) &&
    (await accountCount(databaseUrl(adminUrl, name))) === accounts
  ) {
    seeding = marker;
    reused = true;
  } else {
    console.log(`Seeding PostgreSQL database ${name} with ${accounts} accounts`);
    rmSync(dataDir, { recursive: true, force: true });
    mkdirSync(dataDir, { recursive: true });
    await recreateDatabase(adminUrl, name);
    seeding = await seed(dataDir, seededEnv, accounts, seedValue);
  }
  const credentials = await datasetCredentials(dataDir, seededEnv);
  // Write the seeded pages out now: a checkpoint falling due during a measurement would stall it.
  await withClient(adminUrl, (client) => client.query('checkpoint'));
  const copy = async (label: string) => {
    const database = `${name}_${label}`;
    await copyDatabase(adminUrl, name, database);
    return runEnv(database);
  };
  const env = await copy('run');
  return { kind: 'postgres', name, accounts, seed: seedValue, env, seeding, reused, credentials, copy };
}

/**
 * The PGlite dataset of min(accounts, 100000) accounts under bench/.data/pglite-<accounts>; the run
 * measures a copy under bench/.data/run/.
 */
export async function preparePglite(requested: number, seedValue: number, reuse: boolean): Promise<Dataset> {
  const accounts = Math.min(requested, PGLITE_MAX_ACCOUNTS);
  const dataDir = join(DATA_DIR, `pglite-${accounts}`);
  const seededEnv = coregateEnv(dataDir);
  const marker = readMarker(dataDir);
  let seeding: Seeding;
  let reused = false;
  if (reuse && matches(marker, accounts, seedValue)) {
    seeding = marker;
    reused = true;
  } else {
    console.log(`Seeding PGlite in ${dataDir} with ${accounts} accounts`);
    rmSync(dataDir, { recursive: true, force: true });
    mkdirSync(dataDir, { recursive: true });
    seeding = await seed(dataDir, seededEnv, accounts, seedValue);
  }
  const credentials = await datasetCredentials(dataDir, seededEnv);
  const copy = async (label: string) => {
    const dir = join(RUN_DIR, `pglite-${accounts}-${label}`);
    copyDirectory(dataDir, dir);
    return coregateEnv(dir);
  };
  const env = await copy('run');
  return { kind: 'pglite', name: dataDir, accounts, seed: seedValue, env, seeding, reused, credentials, copy };
}

/**
 * The gateway's own database (`coregate_bench_gateway`, recreated on every run: it holds only tokens, the
 * audit trail and idempotency keys) and a function creating its API token once the core's URL is known.
 */
export async function prepareGateway(adminUrl: string): Promise<{
  readonly env: NodeJS.ProcessEnv;
  readonly token: (coreUrl: string) => Promise<string>;
}> {
  const name = 'coregate_bench_gateway';
  const dataDir = join(DATA_DIR, 'gateway');
  mkdirSync(dataDir, { recursive: true });
  await recreateDatabase(adminUrl, name);
  const env = coregateEnv(dataDir, databaseUrl(adminUrl, name));
  return {
    env,
    async token(coreUrl) {
      const gatewayEnv = { ...env, COREGATE_CORE: 'symxchange', COREGATE_SYMXCHANGE_URL: coreUrl };
      const created = await coregate(['token', 'create', '--name', `bench-${Date.now()}`], gatewayEnv);
      const token = created.stdout.split('\n')[0]?.trim();
      if (!token) throw new Error(`Could not read the gateway's token from the CLI:\n${created.stdout}`);
      return token;
    },
  };
}
