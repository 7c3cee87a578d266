/**
 * The demo set-up of `coregate serve`. On an empty store: seed the deterministic demo dataset, create a
 * demo API token, an administrative password and a demo user (UserNumberCredentials, for logon), and write
 * them to `<data dir>/demo-credentials.json` (mode 0600). In gateway mode the records and the passwords are
 * the core's: only the demo API token is created. A store that holds records already (imported before the
 * first start) is left as it is.
 *
 * The file is the only place the clear credentials exist, so it is written inside the transaction that
 * stores them (nothing is kept when it cannot be written), and before the seeding, so a data dir that
 * cannot take it stops the start before any record is written. A demo store whose file is gone (deleted,
 * or a new data dir beside a PostgreSQL set up before) gets fresh credentials: the lost demo token is
 * revoked and the admin and demo user passwords replaced, since none can be read back from the database.
 */
import { chmodSync, mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import type { Config } from '../config.js';
import type { Runtime } from '../runtime.js';
import { seedDatabase, DEFAULT_DEMO_ACCOUNTS, DEFAULT_SEED } from '../seed/load.js';
import { seedMemberSecrets } from '../seed/member-secrets.js';
import { createProgress } from '../seed/progress.js';
import { generatePassword, hashPassword } from '../crypto/passwords.js';
import { SCOPES } from '../contract/scopes.js';
import { DEMO_USER } from '../seed/examples.js';
import { demoDataset, settings, SETTING, tokens, users } from '../store/access.js';
import type { Db } from '../database/database.js';
import { storeHoldsRecords } from '../store/record-transfer.js';
import { demoCredentialsFile, readDemoCredentials, type DemoCredentials } from './demo-credentials.js';

export { demoCredentialsFile, readDemoCredentials, type DemoCredentials };

/** What `bootstrapDemo` did. */
export type DemoSetUp =
  /** Seeded the demo dataset into an empty store and wrote its credentials. */
  | 'seeded'
  /** Gateway mode: created a demo API token and wrote it. */
  | 'token'
  /** The credentials file of a store set up before was missing: wrote fresh credentials. */
  | 'reissued';

/** The names the demo set-up gives its tokens (`demo-<ms since 1970>`). */
const DEMO_TOKEN_NAME = /^demo-\d+$/;

/**
 * Creates the data dir, readable by its owner only (it holds the master secret and the demo
 * credentials); one that exists is left as it is.
 */
export function createDataDir(config: Config): void {
  mkdirSync(config.dataDir, { recursive: true, mode: 0o700 });
}

/** Writes the file whole or not at all (a complete file renamed into place), mode 0600. */
function writeDemoCredentials(config: Config, credentials: DemoCredentials): void {
  const file = demoCredentialsFile(config);
  const temporary = `${file}.${process.pid}.tmp`;
  try {
    writeFileSync(temporary, `${JSON.stringify(credentials, null, 2)}\n`, { mode: 0o600 });
    chmodSync(temporary, 0o600);
    renameSync(temporary, file);
  } finally {
    rmSync(temporary, { force: true });
  }
}

/**
 * Keeps the credentials file true when the administrative password changes (`coregate admin-password`): the
 * start banner's curl call and the reference's examples take the password from it. Returns whether there
 * was a file to update.
 */
export function rememberAdminPassword(config: Config, adminPassword: string): boolean {
  const credentials = readDemoCredentials(config);
  if (!credentials || config.core === 'symxchange') return false;
  writeDemoCredentials(config, { ...credentials, adminPassword });
  return true;
}

/**
 * Sets up the demo unless it is in place already (see the module's comment); returns what it did.
 *
 * @example
 * if ((await bootstrapDemo(runtime, config)) === 'seeded') print('Demo data seeded');
 */
export async function bootstrapDemo(runtime: Runtime, config: Config): Promise<DemoSetUp | undefined> {
  createDataDir(config);
  const { db } = runtime.database;
  const gateway = config.core === 'symxchange';
  // Demo tokens whose clear value is in no file: a set-up that failed before, or a file that was deleted.
  const lost = async () =>
    (await tokens.list(db))
      .filter((token) => DEMO_TOKEN_NAME.test(token.name) && token.revokedAt === null)
      .map((token) => token.name);
  if (!gateway && !(await settings.get(db, SETTING.demoSeeded))) {
    // Records put there before the first start (coregate import) are kept: the demo goes into an empty store only.
    if (await storeHoldsRecords(db)) return undefined;
    await issueDemoCredentials(db, config, { adminPassword: true, revoke: await lost() });
    await seedDemoDataset(runtime);
    return 'seeded';
  }
  if (readDemoCredentials(config)) return undefined;
  const revoke = await lost();
  // A store seeded by `coregate seed`, or whose demo token was revoked, has credentials of its own to keep.
  if (!gateway && revoke.length === 0) return undefined;
  await issueDemoCredentials(db, config, { adminPassword: !gateway, revoke });
  return revoke.length > 0 ? 'reissued' : 'token';
}

async function seedDemoDataset(runtime: Runtime): Promise<void> {
  const progress = createProgress('Seeding demo data', DEFAULT_DEMO_ACCOUNTS);
  await seedDatabase(runtime.database, runtime.secrets, {
    accounts: DEFAULT_DEMO_ACCOUNTS,
    seed: DEFAULT_SEED,
    onProgress: (done) => progress.update(done),
  });
  progress.finish();
  const { db } = runtime.database;
  await seedMemberSecrets(db, DEFAULT_DEMO_ACCOUNTS);
  await db.transaction().execute(async (trx) => {
    await demoDataset.set(trx, { seed: DEFAULT_SEED, accounts: DEFAULT_DEMO_ACCOUNTS });
    await settings.set(trx, SETTING.demoSeeded, new Date().toISOString());
  });
}

/**
 * Creates a demo token and, unless in gateway mode, a new admin password, revokes the `revoke`d tokens,
 * and writes the credentials file before the transaction commits: a file that cannot be written rolls
 * everything back, and a commit that fails takes the file away again.
 */
async function issueDemoCredentials(
  db: Db,
  config: Config,
  options: { readonly adminPassword: boolean; readonly revoke: readonly string[] },
): Promise<void> {
  const adminPassword = options.adminPassword ? generatePassword() : undefined;
  // A user of the operator's own under the demo user's number keeps its password.
  const demoUser = options.adminPassword ? await users.entry(db, DEMO_USER.userNumber) : undefined;
  const userPassword =
    options.adminPassword && (!demoUser || demoUser.name === DEMO_USER.name) ? generatePassword() : undefined;
  // Hashed before the transaction opens: scrypt takes a while, and the embedded database has one connection.
  const [adminPasswordHash, userPasswordHash] = await Promise.all(
    [adminPassword, userPassword].map((password) => (password === undefined ? undefined : hashPassword(password))),
  );
  let written = false;
  try {
    await db.transaction().execute(async (trx) => {
      for (const name of options.revoke) await tokens.revoke(trx, name);
      if (adminPasswordHash) await settings.set(trx, SETTING.adminPasswordHash, adminPasswordHash);
      if (userPasswordHash && demoUser) await users.setPassword(trx, DEMO_USER.userNumber, userPasswordHash);
      else if (userPasswordHash) await users.add(trx, DEMO_USER.userNumber, DEMO_USER.name, userPasswordHash);
      const { token } = await tokens.create(trx, `demo-${Date.now()}`, SCOPES);
      writeDemoCredentials(config, {
        apiToken: token,
        ...(adminPassword === undefined ? {} : { adminPassword }),
        ...(userPassword === undefined ? {} : { userNumber: DEMO_USER.userNumber, userPassword }),
      });
      written = true;
    });
  } catch (error) {
    if (written) rmSync(demoCredentialsFile(config), { force: true });
    throw error;
  }
}
