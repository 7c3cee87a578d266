/**
 * Back to the seeded demo state: the demo dataset a store was seeded with, generated again and written in
 * place of every record in one transaction (`replaceRecords`), with the demo member secrets. What a
 * replacement keeps (tokens, users, the administrative password, the audit trail) is said there.
 */
import { recordDef } from '../catalog/index.js';
import type { Secrets } from '../crypto/secrets.js';
import type { DemoDataset } from '../store/access.js';
import type { Db } from '../database/database.js';
import { MEMBER_SECRET_RECORD } from '../store/record-file.js';
import { replaceRecords, type RecordCounts } from '../store/record-transfer.js';
import { toRow } from '../store/records.js';
import { SEEDED_RECORD_NAMES, generateAccount } from './generate.js';
import { demoMemberSecretHashes } from './member-secrets.js';

export interface ResetOptions {
  /** Told how many accounts are written so far. */
  readonly onProgress?: (accounts: number) => void;
}

export interface ResetSummary {
  readonly dataset: DemoDataset;
  readonly counts: RecordCounts;
  readonly elapsedMs: number;
}

/** Accounts generated between two yields to the event loop: a server resetting itself keeps answering. */
const ACCOUNTS_PER_TURN = 50;

const SEEDED_RECORDS = SEEDED_RECORD_NAMES.map((name) => ({ name, record: recordDef(name) }));

/**
 * Replaces every record with demo dataset `dataset`, as seeding it would (the same values; protected
 * ones sealed afresh), and records it as the store's demo dataset.
 * @example await resetToDemo(db, secrets, { seed: DEFAULT_SEED, accounts: DEFAULT_DEMO_ACCOUNTS })
 */
export async function resetToDemo(
  db: Db,
  secrets: Secrets,
  dataset: DemoDataset,
  options: ResetOptions = {},
): Promise<ResetSummary> {
  const started = performance.now();
  // Hashed before the transaction: the tables are locked only while rows are written.
  const memberSecrets = await demoMemberSecretHashes(dataset.accounts);
  const counts = await replaceRecords(db, {
    replace: true,
    demoDataset: dataset,
    fill: async (sink) => {
      for (let index = 1; index <= dataset.accounts; index += 1) {
        const { records } = generateAccount(dataset.seed, index);
        for (const { name, record } of SEEDED_RECORDS) {
          for (const { values, keys } of records[name]) await sink.add(record, toRow(record, values, keys, secrets));
        }
        if (index % ACCOUNTS_PER_TURN === 0 || index === dataset.accounts) {
          options.onProgress?.(index);
          await new Promise(setImmediate);
        }
      }
      for (const secret of memberSecrets) {
        await sink.add(MEMBER_SECRET_RECORD, {
          account_number: secret.accountNumber,
          home_banking_password_hash: secret.homeBankingPasswordHash,
          audio_access_code_hash: secret.audioAccessCodeHash,
        });
      }
    },
  });
  return { dataset, counts, elapsedMs: Math.round(performance.now() - started) };
}
