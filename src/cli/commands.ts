/**
 * The CLI commands. Each opens the runtime it needs, does one thing and closes it.
 */
import { sql } from 'kysely';
import { RECORDS } from '../catalog/index.js';
import type { Config } from '../config.js';
import { openRuntime, type Runtime } from '../runtime.js';
import { defaultEncoderWorkers, seedDatabase, DEFAULT_SEED, PARALLEL_FROM_ACCOUNTS } from '../seed/load.js';
import { seedMemberSecrets } from '../seed/member-secrets.js';
import { createProgress } from '../seed/progress.js';
import { CONTROL_CHARACTER } from '../catalog/index.js';
import {
  AUDIO_ACCESS_CODE_MAX_LENGTH,
  generatePassword,
  hashPassword,
  PASSWORD_MAX_LENGTH,
} from '../crypto/passwords.js';
import { DEFAULT_SCOPES, SCOPES, type Scope } from '../contract/scopes.js';
import { demoDataset, memberSecrets, settings, SETTING, tokens, users } from '../store/access.js';
import { readAudit } from '../store/audit.js';
import { integerOption, parseCommand, UsageError, type CommandSpec } from './args.js';

type Print = (line: string) => void;

/**
 * Commands that change coregate's own records or passwords, which gateway mode does not read: they say so
 * instead of changing a store nobody asks.
 */
export function storeOnly(config: Config, command: string): void {
  if (config.core === 'symxchange') {
    throw new Error(
      `${command} changes coregate's own store, which gateway mode (COREGATE_CORE=symxchange) does not read: the core holds the records and verifies the credentials`,
    );
  }
}

export async function withRuntime<T>(config: Config, run: (runtime: Runtime) => Promise<T>): Promise<T> {
  const runtime = await openRuntime(config);
  try {
    return await run(runtime);
  } finally {
    await runtime.database.close();
  }
}

const MIGRATE: CommandSpec = {
  usage: 'Usage: coregate migrate\n\nApplies pending migrations to the database (DATABASE_URL, or the embedded one).',
  options: {},
};

export async function migrateCommand(argv: string[], config: Config, print: Print): Promise<void> {
  const { flags } = parseCommand(MIGRATE, argv);
  if (flags.has('help')) return print(MIGRATE.usage);
  await withRuntime(config, async ({ applied }) =>
    print(applied.length ? `Applied ${applied.join(', ')}` : 'The database is up to date'),
  );
}

const SEED: CommandSpec = {
  usage: `Usage: coregate seed --accounts N [--seed S] [--reset] [--workers W]

Generates a deterministic demo dataset of N accounts (the same N and S give the same data) and bulk
loads it with COPY. Nothing is visible until the whole dataset is loaded.
  --accounts N   number of accounts (required)
  --seed S       generator seed (default ${DEFAULT_SEED})
  --reset        delete existing records first (credentials and tokens are kept)
  --workers W    encoder threads (default: one per core, from ${PARALLEL_FROM_ACCOUNTS} accounts)`,
  options: {
    accounts: { type: 'string' },
    seed: { type: 'string' },
    reset: { type: 'boolean' },
    workers: { type: 'string' },
  },
};

export async function seedCommand(argv: string[], config: Config, print: Print): Promise<void> {
  const { values, flags } = parseCommand(SEED, argv);
  if (flags.has('help')) return print(SEED.usage);
  if (values.accounts === undefined) throw new UsageError(`--accounts is required\n\n${SEED.usage}`);
  const accounts = integerOption(values.accounts, 'accounts', 0, SEED);
  const seed = integerOption(values.seed, 'seed', DEFAULT_SEED, SEED);
  if (accounts < 1) throw new UsageError(`--accounts must be at least 1\n\n${SEED.usage}`);
  const workers = integerOption(values.workers, 'workers', defaultEncoderWorkers(accounts), SEED);
  storeOnly(config, 'seed');
  await withRuntime(config, async ({ database, secrets }) => {
    const existing = await sql<{ n: number }>`select count(*) as n from account`.execute(database.db);
    if ((existing.rows[0]?.n ?? 0) > 0) {
      if (!flags.has('reset')) throw new UsageError('The database already holds accounts; add --reset to replace them');
      await sql.raw(`truncate ${RECORDS.map((r) => r.table).join(', ')}`).execute(database.db);
    }
    const progress = createProgress('Seeding', accounts);
    const started = Date.now();
    const summary = await seedDatabase(database, secrets, {
      accounts,
      seed,
      workers,
      onProgress: (done: number) => progress.update(done),
    });
    progress.finish();
    await seedMemberSecrets(database.db, accounts);
    const seconds = (Date.now() - started) / 1000;
    print(`Seeded ${accounts} accounts (seed ${seed}) in ${seconds.toFixed(1)} s`);
    for (const [table, rows] of Object.entries(summary.rows)) print(`  ${table.padEnd(30)} ${rows}`);
    await settings.set(database.db, SETTING.demoSeeded, new Date().toISOString());
    await demoDataset.set(database.db, { seed, accounts });
  });
}

const TOKEN: CommandSpec = {
  usage: `Usage: coregate token <create|list|revoke> [options]

  create --name NAME [--scopes a,b] [--expires-days D]   prints the token once
  list                                                    names, scopes and state
  revoke --name NAME

Scopes: ${SCOPES.join(', ')} (default: all but store:reset).`,
  options: { name: { type: 'string' }, scopes: { type: 'string' }, 'expires-days': { type: 'string' } },
};

function parseScopes(raw: string | undefined): Scope[] {
  if (raw === undefined) return [...DEFAULT_SCOPES];
  const scopes = raw.split(',').map((s) => s.trim());
  const unknown = scopes.filter((s) => !(SCOPES as readonly string[]).includes(s));
  if (unknown.length || scopes.length === 0) {
    throw new UsageError(`Unknown scope ${unknown.join(', ')}; scopes are ${SCOPES.join(', ')}`);
  }
  return scopes as Scope[];
}

export async function tokenCommand(argv: string[], config: Config, print: Print): Promise<void> {
  const { values, flags, positionals } = parseCommand(TOKEN, argv);
  const action = positionals[0];
  if (flags.has('help')) return print(TOKEN.usage);
  if (!action) throw new UsageError(`coregate token needs an action: create, list or revoke\n\n${TOKEN.usage}`);
  const name = values.name;
  await withRuntime(config, async ({ database: { db } }) => {
    switch (action) {
      case 'create': {
        if (!name) throw new UsageError(`--name is required\n\n${TOKEN.usage}`);
        const days = integerOption(values['expires-days'], 'expires-days', 0, TOKEN);
        const expires = days > 0 ? new Date(Date.now() + days * 86_400_000) : undefined;
        const existing = (await tokens.list(db)).find((t) => t.name === name);
        if (existing) throw new UsageError(`A token named ${name} exists already`);
        const { token, record } = await tokens.create(db, name, parseScopes(values.scopes), expires);
        print(token);
        print(
          `# ${record.name}: scopes ${record.scopes.join(', ')}${record.expiresAt ? `, expires ${record.expiresAt}` : ''}`,
        );
        return;
      }
      case 'list':
        for (const t of await tokens.list(db)) {
          const state = t.revokedAt ? `revoked ${t.revokedAt}` : t.expiresAt ? `expires ${t.expiresAt}` : 'active';
          print(`${t.name}\t${t.scopes.join(',')}\t${state}`);
        }
        return;
      case 'revoke':
        if (!name) throw new UsageError(`--name is required\n\n${TOKEN.usage}`);
        if (!(await tokens.revoke(db, name))) throw new UsageError(`No live token named ${name}`);
        print(`Revoked ${name}`);
        return;
      default:
        throw new UsageError(`Unknown token action "${action}"\n\n${TOKEN.usage}`);
    }
  });
}

/** A secret given on the command line: 1 to `maxLength` characters, as the core's credentials carry it. */
function secretOption(
  value: string | undefined,
  name: string,
  maxLength: number,
  spec: CommandSpec,
): string | undefined {
  if (value === undefined) return undefined;
  if (value.length < 1 || value.length > maxLength || CONTROL_CHARACTER.test(value)) {
    throw new UsageError(`--${name} must be 1 to ${maxLength} printable characters\n\n${spec.usage}`);
  }
  return value;
}

const USER: CommandSpec = {
  usage: `Usage: coregate user <add|list> [options]

  add --number N --name NAME [--password P]   a core user for UserNumberCredentials (N in 1..9999);
                                              a password is generated and printed when not given
  list`,
  options: { number: { type: 'string' }, name: { type: 'string' }, password: { type: 'string' } },
};

export async function userCommand(argv: string[], config: Config, print: Print): Promise<void> {
  const { values, flags, positionals } = parseCommand(USER, argv);
  const action = positionals[0];
  if (flags.has('help')) return print(USER.usage);
  if (!action) throw new UsageError(`coregate user needs an action: add or list\n\n${USER.usage}`);
  storeOnly(config, 'user');
  await withRuntime(config, async ({ database: { db } }) => {
    if (action === 'list') {
      for (const u of await users.list(db)) print(`${u.userNumber}\t${u.name}`);
      return;
    }
    if (action !== 'add') throw new UsageError(`Unknown user action "${action}"\n\n${USER.usage}`);
    const userNumber = integerOption(values.number, 'number', 0, USER);
    if (userNumber < 1 || userNumber > 9999) throw new UsageError(`--number must be in 1..9999\n\n${USER.usage}`);
    if (!values.name) throw new UsageError(`--name is required\n\n${USER.usage}`);
    if (await users.find(db, userNumber)) throw new UsageError(`User ${userNumber} exists already`);
    const given = secretOption(values.password, 'password', PASSWORD_MAX_LENGTH, USER);
    const password = given ?? generatePassword();
    await users.add(db, userNumber, values.name, await hashPassword(password));
    print(`Added user ${userNumber} (${values.name})`);
    if (!values.password) print(`Password: ${password}`);
  });
}

const ADMIN_PASSWORD: CommandSpec = {
  usage: `Usage: coregate admin-password [--password P]

Sets the AdministrativeCredentials password (1 to 20 characters, stored as a scrypt hash); prints a generated
one when not given.
COREGATE_ADMIN_PASSWORD_HASH, when set, takes precedence over the stored hash.`,
  options: { password: { type: 'string' } },
};

export async function adminPasswordCommand(argv: string[], config: Config, print: Print): Promise<void> {
  const { values, flags } = parseCommand(ADMIN_PASSWORD, argv);
  if (flags.has('help')) return print(ADMIN_PASSWORD.usage);
  const password = secretOption(values.password, 'password', PASSWORD_MAX_LENGTH, ADMIN_PASSWORD) ?? generatePassword();
  storeOnly(config, 'admin-password');
  await withRuntime(config, async ({ database: { db } }) => {
    await settings.set(db, SETTING.adminPasswordHash, await hashPassword(password));
  });
  print(values.password ? 'Administrative password set' : `Administrative password: ${password}`);
}

const MEMBER: CommandSpec = {
  usage: `Usage: coregate member set-secret --account N [--home-banking-password P] [--audio-access-code C]

Sets a member's home banking password and/or audio access code (stored as scrypt hashes), which
AccountNumber, HomeBanking and Lookup credentials verify against.`,
  options: {
    account: { type: 'string' },
    'home-banking-password': { type: 'string' },
    'audio-access-code': { type: 'string' },
  },
};

export async function memberCommand(argv: string[], config: Config, print: Print): Promise<void> {
  const { values, flags, positionals } = parseCommand(MEMBER, argv);
  if (flags.has('help')) return print(MEMBER.usage);
  if (positionals[0] === undefined)
    throw new UsageError(`coregate member needs an action: set-secret\n\n${MEMBER.usage}`);
  if (positionals[0] !== 'set-secret') {
    throw new UsageError(`Unknown member action "${positionals[0]}"\n\n${MEMBER.usage}`);
  }
  const account = values.account;
  if (!account || !/^[0-9]{10}$/.test(account)) throw new UsageError(`--account must be 10 digits\n\n${MEMBER.usage}`);
  const password = secretOption(values['home-banking-password'], 'home-banking-password', PASSWORD_MAX_LENGTH, MEMBER);
  const audio = secretOption(values['audio-access-code'], 'audio-access-code', AUDIO_ACCESS_CODE_MAX_LENGTH, MEMBER);
  if (!password && !audio)
    throw new UsageError(`Give --home-banking-password or --audio-access-code\n\n${MEMBER.usage}`);
  storeOnly(config, 'member');
  await withRuntime(config, async ({ database: { db } }) => {
    await memberSecrets.set(db, account, {
      homeBankingPasswordHash: password ? await hashPassword(password) : null,
      audioAccessCodeHash: audio ? await hashPassword(audio) : null,
    });
  });
  print(`Member secrets of ${account} set`);
}

const AUDIT: CommandSpec = {
  usage: `Usage: coregate audit --since WHEN [--account N] [--limit L]

Prints the audit trail: who called which operation on which account or collateral, and the outcome.
  --since WHEN   an ISO date or time (2026-11-21, 2026-11-21T10:00Z) or a duration back from now (15m, 2h, 7d)
  --account N    only calls that touched this account
  --limit L      at most L events (default 1000)`,
  options: { since: { type: 'string' }, account: { type: 'string' }, limit: { type: 'string' } },
};

/** `15m`, `2h`, `7d` back from now, or an ISO date/time. */
export function parseSince(value: string, now = new Date()): Date | undefined {
  const duration = /^(\d+)([smhd])$/.exec(value);
  if (duration) {
    const seconds = { s: 1, m: 60, h: 3600, d: 86_400 }[duration[2] as 's' | 'm' | 'h' | 'd'];
    return new Date(now.getTime() - Number(duration[1]) * seconds * 1000);
  }
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? undefined : date;
}

export async function auditCommand(argv: string[], config: Config, print: Print): Promise<void> {
  const { values, flags } = parseCommand(AUDIT, argv);
  if (flags.has('help')) return print(AUDIT.usage);
  const since = values.since ? parseSince(values.since) : undefined;
  if (!since) throw new UsageError(`--since must be an ISO date or a duration such as 2h\n\n${AUDIT.usage}`);
  const limit = integerOption(values.limit, 'limit', 1000, AUDIT);
  await withRuntime(config, async ({ database: { db } }) => {
    const rows = await readAudit(db, since, { accountNumber: values.account, limit });
    print(
      ['at', 'status', 'code', 'operation', 'token', 'user', 'member', 'accounts', 'collateral', 'request'].join('\t'),
    );
    for (const row of rows) {
      print(
        [
          row.at,
          row.status,
          row.code,
          row.operation,
          row.tokenName,
          row.userNumber,
          row.memberAccount,
          row.accountNumbers,
          row.collateralNumber,
          row.requestId,
        ]
          .map((v) => (v === null || v === undefined ? '-' : String(v)))
          .join('\t'),
      );
    }
  });
}
