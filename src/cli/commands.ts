/**
 * The CLI commands. Each opens the runtime it needs, does one thing and closes it. The store's modules
 * (the runtime, the operations, Kysely, the catalog) are imported when a command works on the data
 * directory, not when it calls a live server's admin API, so that call starts in a fraction of a second
 * (test/cli-modules.test.ts).
 */
import type * as AdminOperations from '../operations/administration.js';
import { CONTROL_CHARACTER } from '../catalog/field-rules.js';
import type { Config } from '../config.js';
import type { Runtime } from '../runtime.js';
import { defaultEncoderWorkers, DEFAULT_SEED, PARALLEL_FROM_ACCOUNTS } from '../seed/defaults.js';
import {
  AUDIO_ACCESS_CODE_MAX_LENGTH,
  generatePassword,
  hashPassword,
  PASSWORD_MAX_LENGTH,
} from '../crypto/passwords.js';
import { SCOPES, type Scope } from '../contract/scopes.js';
import type {
  AuditEventInfo,
  AuditPage,
  AuditQuery,
  CreatedToken,
  TokenCreateBody,
  TokenInfo,
  TokenList,
  UserInfo,
  UserList,
  UserUnlocked,
  UserWithPassword,
} from '../contract/admin.js';
import { AUDIT_PAGE_MAXIMUM } from '../contract/audit-pages.js';
import { liveServerOf } from '../database/data-dir-lock.js';
import { integerOption, parseCommand, UsageError, type CommandSpec } from './args.js';
import { AdminProblemError, adminCall, liveServer, problemMessage, type AdminServer } from './remote.js';

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
  const { openRuntime } = await import('../runtime.js');
  const runtime = await openRuntime(config);
  try {
    return await run(runtime);
  } finally {
    await runtime.database.close();
  }
}

/** How an administrative command runs: on a live server through its admin API, or on the data directory. */
export interface Administration<T> {
  readonly remote: (server: AdminServer) => Promise<T>;
  /** Given the runtime and the admin operations, both loaded for it. */
  readonly local: (runtime: Runtime, operations: typeof AdminOperations) => Promise<T>;
  /** A problem's own message for this command (a usage hint), instead of its detail. */
  readonly rewrite?: (code: string, message: string) => Error | undefined;
}

/**
 * Runs an administrative command where the data is: when a live coregate holds the data directory (or
 * `COREGATE_URL` is set) through that server's admin API, saying so in one line on stderr, otherwise on the
 * data directory itself; both answer in the same shapes, so the command prints the same either way. A
 * problem, from either, is a usage error (exit 2) when the request was at fault, else a failure.
 */
export async function administer<T>(config: Config, command: string, how: Administration<T>): Promise<T> {
  const server = await liveServer(config);
  try {
    if (!server) return await administerLocally(config, how);
    process.stderr.write(`coregate ${command}: via the admin API of ${server.description}\n`);
    return await how.remote(server);
  } catch (error) {
    if (!(error instanceof AdminProblemError)) throw error;
    const rewritten = how.rewrite?.(error.code, error.message);
    if (rewritten) throw rewritten;
    const usage = [400, 404, 409].includes(error.status) && error.code !== 'INVALID_RECORD_FILE';
    throw usage ? new UsageError(error.message) : new Error(error.message, { cause: error });
  }
}

/** On the data directory: the operations' Problem becomes the AdminProblemError the admin API would answer with. */
async function administerLocally<T>(config: Config, how: Administration<T>): Promise<T> {
  const [operations, { Problem }] = await Promise.all([
    import('../operations/administration.js'),
    import('../contract/problems.js'),
  ]);
  try {
    return await withRuntime(config, (runtime) => how.local(runtime, operations));
  } catch (error) {
    if (error instanceof Problem) throw new AdminProblemError(error.status, error.code, problemMessage(error));
    throw error;
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
  const [
    { sql },
    { RECORDS },
    { seedDatabase },
    { seedMemberSecrets },
    { createProgress },
    { demoDataset, settings, SETTING },
  ] = await Promise.all([
    import('kysely'),
    import('../catalog/index.js'),
    import('../seed/load.js'),
    import('../seed/member-secrets.js'),
    import('../seed/progress.js'),
    import('../store/access.js'),
  ]);
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

Scopes: ${SCOPES.join(', ')} (default: all but store:reset and admin).
While a coregate serves the data directory (or with COREGATE_URL), the command calls its admin API.`,
  options: { name: { type: 'string' }, scopes: { type: 'string' }, 'expires-days': { type: 'string' } },
};

function parseScopes(raw: string | undefined): Scope[] | undefined {
  if (raw === undefined) return undefined;
  const scopes = raw.split(',').map((s) => s.trim());
  const unknown = scopes.filter((s) => !(SCOPES as readonly string[]).includes(s));
  if (unknown.length || scopes.length === 0) {
    throw new UsageError(`Unknown scope ${unknown.join(', ')}; scopes are ${SCOPES.join(', ')}`);
  }
  return scopes as Scope[];
}

/** A token's state as `token list` shows it. */
function tokenState(token: TokenInfo): string {
  if (token.state === 'revoked') return `revoked ${token.revokedAt}`;
  if (token.expiresAt) return `${token.state === 'expired' ? 'expired' : 'expires'} ${token.expiresAt}`;
  return 'active';
}

export async function tokenCommand(argv: string[], config: Config, print: Print): Promise<void> {
  const { values, flags, positionals } = parseCommand(TOKEN, argv);
  const action = positionals[0];
  if (flags.has('help')) return print(TOKEN.usage);
  if (!action) throw new UsageError(`coregate token needs an action: create, list or revoke\n\n${TOKEN.usage}`);
  const name = values.name;
  switch (action) {
    case 'create': {
      if (!name) throw new UsageError(`--name is required\n\n${TOKEN.usage}`);
      const days = integerOption(values['expires-days'], 'expires-days', 0, TOKEN);
      const scopes = parseScopes(values.scopes);
      const input: TokenCreateBody = {
        name,
        ...(scopes ? { scopes } : {}),
        ...(days > 0 ? { expiresInDays: days } : {}),
      };
      const created = await administer<CreatedToken>(config, 'token', {
        remote: (server) => adminCall(server, 'POST', '/admin/tokens', input),
        local: ({ database: { db } }, { adminTokens }) => adminTokens.create(db, input),
      });
      print(created.token);
      print(
        `# ${created.name}: scopes ${created.scopes.join(', ')}${created.expiresAt ? `, expires ${created.expiresAt}` : ''}`,
      );
      return;
    }
    case 'list': {
      const { tokens } = await administer<TokenList>(config, 'token', {
        remote: (server) => adminCall(server, 'GET', '/admin/tokens'),
        local: ({ database: { db } }, { adminTokens }) => adminTokens.list(db),
      });
      for (const t of tokens) print(`${t.name}\t${t.scopes.join(',')}\t${tokenState(t)}`);
      return;
    }
    case 'revoke': {
      if (!name) throw new UsageError(`--name is required\n\n${TOKEN.usage}`);
      await administer<TokenInfo>(config, 'token', {
        remote: (server) => adminCall(server, 'DELETE', `/admin/tokens/${encodeURIComponent(name)}`),
        local: ({ database: { db } }, { adminTokens }) => adminTokens.revoke(db, name),
      });
      print(`Revoked ${name}`);
      return;
    }
    default:
      throw new UsageError(`Unknown token action "${action}"\n\n${TOKEN.usage}`);
  }
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
  usage: `Usage: coregate user <add|list|disable|enable|unlock|password> [options]

  add --number N --name NAME [--password P]   a core user for UserNumberCredentials (N in 1..9999);
                                              a password is generated and printed when not given
  list                                        numbers and names, "disabled" for a disabled user, and its
                                              password lockouts: "locked until TIME" while a caller is
                                              locked out, "N failed passwords" counted towards the next lock
  disable --number N                          its credentials are refused, its logon sessions end
  enable --number N
  unlock --number N                           clears its password lockouts
  password --number N [--password P]          sets its password; a generated one is printed when not given

While a coregate serves the data directory (or with COREGATE_URL), the command calls its admin API.`,
  options: { number: { type: 'string' }, name: { type: 'string' }, password: { type: 'string' } },
};

const USER_ACTIONS = ['add', 'list', 'disable', 'enable', 'unlock', 'password'] as const;

function userNumberOption(value: string | undefined): number {
  if (value === undefined) throw new UsageError(`--number is required\n\n${USER.usage}`);
  const userNumber = integerOption(value, 'number', 0, USER);
  if (userNumber < 1 || userNumber > 9999) throw new UsageError(`--number must be in 1..9999\n\n${USER.usage}`);
  return userNumber;
}

/** A user as `user list` shows it: number, name, and what stands in the way of its password, if anything. */
function userLine(user: UserList['users'][number]): string {
  const columns = [String(user.userNumber), user.name];
  if (user.state === 'disabled') columns.push('disabled');
  if (user.lockedUntil !== null) columns.push(`locked until ${user.lockedUntil}`);
  if (user.failures > 0) columns.push(`${user.failures} failed password${user.failures === 1 ? '' : 's'}`);
  return columns.join('\t');
}

export async function userCommand(argv: string[], config: Config, print: Print): Promise<void> {
  const { values, flags, positionals } = parseCommand(USER, argv);
  const action = positionals[0];
  if (flags.has('help')) return print(USER.usage);
  if (!action) {
    const actions = `${USER_ACTIONS.slice(0, -1).join(', ')} or ${USER_ACTIONS.at(-1)}`;
    throw new UsageError(`coregate user needs an action: ${actions}\n\n${USER.usage}`);
  }
  if (!(USER_ACTIONS as readonly string[]).includes(action)) {
    throw new UsageError(`Unknown user action "${action}"\n\n${USER.usage}`);
  }
  // Checked before anything is opened or called: a bad argument is the same usage error either way.
  const userNumber = action === 'list' ? 0 : userNumberOption(values.number);
  if (action === 'add' && !values.name) throw new UsageError(`--name is required\n\n${USER.usage}`);
  const password = secretOption(values.password, 'password', PASSWORD_MAX_LENGTH, USER);
  storeOnly(config, 'user');
  const users = <T>(
    remote: Administration<T>['remote'],
    local: (db: Runtime['database']['db'], adminUsers: typeof AdminOperations.adminUsers) => Promise<T>,
  ) =>
    administer<T>(config, 'user', { remote, local: ({ database: { db } }, { adminUsers }) => local(db, adminUsers) });
  const path = `/admin/users/${userNumber}`;
  switch (action) {
    case 'list': {
      const list = await users<UserList>(
        (server) => adminCall(server, 'GET', '/admin/users'),
        (db, adminUsers) => adminUsers.list(db, config.lockoutSeconds),
      );
      for (const u of list.users) print(userLine(u));
      return;
    }
    case 'add': {
      const input = { userNumber, name: values.name!, ...(password === undefined ? {} : { password }) };
      const added = await users<UserWithPassword>(
        (server) => adminCall(server, 'POST', '/admin/users', input),
        (db, adminUsers) => adminUsers.add(db, input),
      );
      print(`Added user ${added.userNumber} (${added.name})`);
      if (added.password) print(`Password: ${added.password}`);
      return;
    }
    case 'disable':
    case 'enable': {
      const user = await users<UserInfo>(
        (server) => adminCall(server, 'POST', `${path}/${action}`, {}),
        (db, adminUsers) => adminUsers.setDisabled(db, userNumber, action === 'disable'),
      );
      print(`${action === 'disable' ? 'Disabled' : 'Enabled'} user ${user.userNumber} (${user.name})`);
      return;
    }
    case 'unlock': {
      const user = await users<UserUnlocked>(
        (server) => adminCall(server, 'POST', `${path}/unlock`, {}),
        (db, adminUsers) => adminUsers.unlock(db, userNumber),
      );
      print(
        `Unlocked user ${user.userNumber} (${user.name}): ${user.cleared} lockout${user.cleared === 1 ? '' : 's'} cleared`,
      );
      return;
    }
    case 'password': {
      const body = password === undefined ? {} : { password };
      const user = await users<UserWithPassword>(
        (server) => adminCall(server, 'POST', `${path}/password`, body),
        (db, adminUsers) => adminUsers.setPassword(db, userNumber, password),
      );
      print(
        user.password
          ? `Password of user ${user.userNumber}: ${user.password}`
          : `Password of user ${user.userNumber} set`,
      );
      return;
    }
  }
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
  // Not part of the admin API (docs/decisions.md, "Administering a running coregate"): say so, not just "in use".
  const serving = config.databaseUrl ? undefined : liveServerOf(config.dataDir);
  if (serving) {
    throw new Error(
      `the administrative password is set on the data directory only, and the coregate serving it (process ${serving.holder.pid} at ${serving.url}) holds it: stop the server, then run coregate admin-password`,
    );
  }
  const { settings, SETTING } = await import('../store/access.js');
  await withRuntime(config, async ({ database: { db } }) => {
    await settings.set(db, SETTING.adminPasswordHash, await hashPassword(password));
  });
  // The demo credentials file follows, so the start banner's curl call and /docs's examples use this password.
  (await import('./demo.js')).rememberAdminPassword(config, password);
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
  const { memberSecrets } = await import('../store/access.js');
  await withRuntime(config, async ({ database: { db } }) => {
    await memberSecrets.set(db, account, {
      homeBankingPasswordHash: password ? await hashPassword(password) : null,
      audioAccessCodeHash: audio ? await hashPassword(audio) : null,
    });
  });
  print(`Member secrets of ${account} set`);
}

const AUDIT: CommandSpec = {
  usage: `Usage: coregate audit --since WHEN [--until WHEN] [--operation OP] [--account N] [--status S] [--token NAME] [--limit L] [--oldest]

Prints the audit trail: who called which operation on which account or collateral, and the outcome.
  --since WHEN      an ISO date or time (2026-11-21, 2026-11-21T10:00Z) or a duration back from now (15m, 2h, 7d)
  --until WHEN      only calls before then (the same forms)
  --operation OP    only this operation (findBySSN, admin:token.create), or a prefix ending in * (admin:*)
  --account N       only calls that touched this account
  --status S        only calls answered with this status (403) or class (4xx)
  --token NAME      only calls with this API token
  --limit L         the newest L events, newest first (default 1000)
  --oldest          the oldest L events instead, oldest first

While a coregate serves the data directory (or with COREGATE_URL), the command calls its admin API.`,
  options: {
    since: { type: 'string' },
    until: { type: 'string' },
    operation: { type: 'string' },
    account: { type: 'string' },
    status: { type: 'string' },
    token: { type: 'string' },
    limit: { type: 'string' },
    oldest: { type: 'boolean' },
  },
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

const AUDIT_COLUMNS = [
  'at',
  'status',
  'code',
  'operation',
  'token',
  'user',
  'member',
  'accounts',
  'collateral',
  'request',
  'target',
];

/** One event as a line of `coregate audit`: tab-separated, `-` for nothing. */
function auditLine(event: AuditEventInfo): string {
  return [
    event.at,
    event.status,
    event.code,
    event.operation,
    event.tokenName,
    event.userNumber,
    event.memberAccount,
    event.accountNumbers.length > 0 ? event.accountNumbers.join(',') : null,
    event.collateralNumber,
    event.requestId,
    event.target,
  ]
    .map((v) => (v === null || v === undefined ? '-' : String(v)))
    .join('\t');
}

export async function auditCommand(argv: string[], config: Config, print: Print): Promise<void> {
  const { values, flags } = parseCommand(AUDIT, argv);
  if (flags.has('help')) return print(AUDIT.usage);
  const since = values.since ? parseSince(values.since) : undefined;
  if (!since) throw new UsageError(`--since must be an ISO date or a duration such as 2h\n\n${AUDIT.usage}`);
  const until = values.until === undefined ? undefined : parseSince(values.until);
  if (values.until !== undefined && !until) {
    throw new UsageError(`--until must be an ISO date or a duration such as 2h\n\n${AUDIT.usage}`);
  }
  const limit = integerOption(values.limit, 'limit', 1000, AUDIT);
  const query: AuditQuery = Object.fromEntries(
    Object.entries({
      from: since.toISOString(),
      to: until?.toISOString(),
      operation: values.operation,
      account: values.account,
      status: values.status,
      token: values.token,
      order: flags.has('oldest') ? 'oldest' : 'newest',
    }).filter(([, value]) => value !== undefined),
  );
  let headed = false;
  const head = () => {
    if (!headed) print(AUDIT_COLUMNS.join('\t'));
    headed = true;
  };
  /** Pages of at most `limit` events in all, printed as they come: memory holds one page. */
  const printPages = async (page: (query: AuditQuery) => Promise<AuditPage>) => {
    let cursor: string | undefined;
    for (let left = limit; left > 0;) {
      const { events, nextCursor } = await page({
        ...query,
        limit: String(Math.min(left, AUDIT_PAGE_MAXIMUM)),
        ...(cursor ? { cursor } : {}),
      });
      head();
      for (const event of events) print(auditLine(event));
      left -= events.length;
      if (nextCursor === null) break;
      cursor = nextCursor;
    }
  };
  await administer<void>(config, 'audit', {
    remote: (server) => printPages((page) => adminCall(server, 'GET', `/admin/audit?${new URLSearchParams(page)}`)),
    local: ({ database: { db } }, { adminAudit }) => printPages((page) => adminAudit.page(db, page)),
  });
  head();
}
