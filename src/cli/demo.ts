/**
 * First start of the embedded database: seed the deterministic demo dataset, create a demo API token
 * and an administrative password, and write both to `<data dir>/demo-credentials.json` (mode 0600). In
 * gateway mode the records and the passwords are the core's: only the demo API token is created. A store
 * that holds records already (imported before the first start) is left as it is.
 */
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Config } from '../config.js';
import type { Runtime } from '../runtime.js';
import { seedDatabase, DEFAULT_DEMO_ACCOUNTS, DEFAULT_SEED } from '../seed/load.js';
import { seedMemberSecrets } from '../seed/member-secrets.js';
import { createProgress } from '../seed/progress.js';
import { generatePassword, hashPassword } from '../crypto/passwords.js';
import { SCOPES } from '../contract/scopes.js';
import { demoDataset, settings, SETTING, tokens } from '../store/access.js';
import { storeHoldsRecords } from '../store/record-transfer.js';

export interface DemoCredentials {
  readonly apiToken: string;
  /** The store's administrative password; none in gateway mode, where the core verifies credentials. */
  readonly adminPassword?: string;
}

export function demoCredentialsFile(config: Config): string {
  return join(config.dataDir, 'demo-credentials.json');
}

export function readDemoCredentials(config: Config): DemoCredentials | undefined {
  const file = demoCredentialsFile(config);
  if (!existsSync(file)) return undefined;
  return JSON.parse(readFileSync(file, 'utf8')) as DemoCredentials;
}

function writeDemoCredentials(config: Config, credentials: DemoCredentials): void {
  const file = demoCredentialsFile(config);
  writeFileSync(file, `${JSON.stringify(credentials, null, 2)}\n`, { mode: 0o600 });
  chmodSync(file, 0o600);
}

/** Seeds and creates demo credentials unless this database was set up before; returns whether it did. */
export async function bootstrapDemo(runtime: Runtime, config: Config): Promise<boolean> {
  const { db } = runtime.database;
  if (config.core === 'symxchange') {
    // Gateway mode: the records and the passwords are the core's; a token lets the gateway be tried.
    if (readDemoCredentials(config)) return false;
    const { token } = await tokens.create(db, `demo-${Date.now()}`, SCOPES);
    writeDemoCredentials(config, { apiToken: token });
    return true;
  }
  if (await settings.get(db, SETTING.demoSeeded)) return false;
  // Records put there before the first start (coregate import) are kept: the demo goes into an empty store only.
  if (await storeHoldsRecords(db)) return false;
  const progress = createProgress('Seeding demo data', DEFAULT_DEMO_ACCOUNTS);
  await seedDatabase(runtime.database, runtime.secrets, {
    accounts: DEFAULT_DEMO_ACCOUNTS,
    seed: DEFAULT_SEED,
    onProgress: (done) => progress.update(done),
  });
  progress.finish();
  await seedMemberSecrets(db, DEFAULT_DEMO_ACCOUNTS);
  const adminPassword = generatePassword();
  await settings.set(db, SETTING.adminPasswordHash, await hashPassword(adminPassword));
  const { token } = await tokens.create(db, `demo-${Date.now()}`, SCOPES);
  writeDemoCredentials(config, { apiToken: token, adminPassword });
  await demoDataset.set(db, { seed: DEFAULT_SEED, accounts: DEFAULT_DEMO_ACCOUNTS });
  await settings.set(db, SETTING.demoSeeded, new Date().toISOString());
  return true;
}
