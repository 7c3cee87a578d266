/**
 * The benchmark's datasets: a PostgreSQL database per size (`coregate_bench_<accounts>`) and a PGlite
 * directory, each seeded through the coregate CLI, with its own data directory under bench/.data for
 * the master secret and a marker that says what was seeded, so `--reuse` can skip seeding.
 */
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { BENCH_DIR, COREGATE, runCommand } from './servers.js';

const DATA_DIR = join(BENCH_DIR, '.data');
const MARKER = 'bench-dataset.json';

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
  /** The database name or the data directory. */
  readonly name: string;
  readonly accounts: number;
  readonly seed: number;
  /** Environment of every coregate process on this dataset. */
  readonly env: NodeJS.ProcessEnv;
  readonly seeding: Seeding;
  /** Seeded by an earlier run and reused. */
  readonly reused: boolean;
}

export interface Credentials {
  readonly token: string;
  readonly adminPassword: string;
}

/** The environment without any setting of the caller's own coregate, so only the bench's apply. */
function cleanEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (!name.startsWith('COREGATE_') && !['DATABASE_URL', 'REDIS_URL', 'PORT', 'HOST', 'LOG_LEVEL'].includes(name)) {
      env[name] = value;
    }
  }
  return env;
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
 * The PostgreSQL dataset of `accounts` accounts in database coregate_bench_<accounts>: reused when
 * asked and its marker and account count agree, otherwise dropped, recreated and seeded.
 */
export async function preparePostgres(
  adminUrl: string,
  accounts: number,
  seedValue: number,
  reuse: boolean,
): Promise<Dataset> {
  const name = `coregate_bench_${accounts}`;
  const dataDir = join(DATA_DIR, `postgres-${accounts}`);
  const url = databaseUrl(adminUrl, name);
  const env = coregateEnv(dataDir, url);
  const base = { kind: 'postgres', name, accounts, seed: seedValue, env } as const;
  const marker = readMarker(dataDir);
  if (reuse && matches(marker, accounts, seedValue) && (await databaseExists(adminUrl, name))) {
    if ((await accountCount(url)) === accounts) return { ...base, seeding: marker, reused: true };
  }
  console.log(`Seeding PostgreSQL database ${name} with ${accounts} accounts`);
  mkdirSync(dataDir, { recursive: true });
  await recreateDatabase(adminUrl, name);
  const seeding = await seed(dataDir, env, accounts, seedValue);
  // Write the freshly loaded pages out now: a checkpoint falling due during a measurement would stall it.
  await withClient(adminUrl, (client) => client.query('checkpoint'));
  return { ...base, seeding, reused: false };
}

/** The PGlite dataset of min(accounts, 100000) accounts under bench/.data/pglite-<accounts>. */
export async function preparePglite(requested: number, seedValue: number, reuse: boolean): Promise<Dataset> {
  const accounts = Math.min(requested, PGLITE_MAX_ACCOUNTS);
  const dataDir = join(DATA_DIR, `pglite-${accounts}`);
  const env = coregateEnv(dataDir);
  const base = { kind: 'pglite', name: dataDir, accounts, seed: seedValue, env } as const;
  const marker = readMarker(dataDir);
  if (reuse && matches(marker, accounts, seedValue)) return { ...base, seeding: marker, reused: true };
  console.log(`Seeding PGlite in ${dataDir} with ${accounts} accounts`);
  rmSync(dataDir, { recursive: true, force: true });
  mkdirSync(dataDir, { recursive: true });
  return { ...base, seeding: await seed(dataDir, env, accounts, seedValue), reused: false };
}

/**
 * A fresh API token with every scope (the CLI's default) and a newly generated administrative
 * password. Must run while no server holds a PGlite dataset open.
 */
export async function createCredentials(dataset: Dataset): Promise<Credentials> {
  const created = await coregate(['token', 'create', '--name', `bench-${Date.now()}`], dataset.env);
  const token = created.stdout.split('\n')[0]?.trim() ?? '';
  const password = await coregate(['admin-password'], dataset.env);
  const adminPassword = /Administrative password: (\S+)/.exec(password.stdout)?.[1];
  if (!token || !adminPassword) {
    throw new Error(`Could not read the credentials from the CLI:\n${created.stdout}${password.stdout}`);
  }
  return { token, adminPassword };
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
