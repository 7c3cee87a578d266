/**
 * Member-level secrets of the demo dataset: the first few accounts get a home banking password and an
 * audio access code, so AccountNumber, HomeBanking and Lookup credentials can be tried. Only a few,
 * because each is an scrypt hash; real secrets are set with `coregate member`.
 */
import { hashPassword } from '../crypto/passwords.js';
import { memberSecrets } from '../store/access.js';
import type { Db } from '../database/database.js';
import { accountNumberOf } from './numbering.js';

export const DEMO_MEMBER_ACCOUNTS = 5;

/** The demo secrets of an account: predictable on purpose, as the demo data is public. */
export function demoMemberSecret(accountNumber: string): { homeBankingPassword: string; audioAccessCode: string } {
  return { homeBankingPassword: `demo-${accountNumber}`, audioAccessCode: accountNumber.slice(-4) };
}

/** A member's secrets as stored: scrypt hashes. */
export interface HashedMemberSecret {
  readonly accountNumber: string;
  readonly homeBankingPasswordHash: string;
  readonly audioAccessCodeHash: string;
}

/** The demo secrets of a dataset of `accounts`, hashed (at once: scrypt runs on the thread pool). */
export async function demoMemberSecretHashes(accounts: number): Promise<HashedMemberSecret[]> {
  const count = Math.min(accounts, DEMO_MEMBER_ACCOUNTS);
  return Promise.all(
    Array.from({ length: count }, async (_, position) => {
      const accountNumber = accountNumberOf(position + 1);
      const secret = demoMemberSecret(accountNumber);
      const [homeBankingPasswordHash, audioAccessCodeHash] = await Promise.all([
        hashPassword(secret.homeBankingPassword),
        hashPassword(secret.audioAccessCode),
      ]);
      return { accountNumber, homeBankingPasswordHash, audioAccessCodeHash };
    }),
  );
}

export async function seedMemberSecrets(db: Db, accounts: number): Promise<void> {
  for (const { accountNumber, ...hashes } of await demoMemberSecretHashes(accounts)) {
    await memberSecrets.set(db, accountNumber, hashes);
  }
}
