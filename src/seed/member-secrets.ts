/**
 * Member-level secrets of the demo dataset: the first few accounts get a home banking password and an
 * audio access code, so AccountNumber, HomeBanking and Lookup credentials can be tried. Only a few,
 * because each is an scrypt hash; real secrets are set with `coregate member`.
 */
import { hashPassword } from '../crypto/passwords.js';
import { memberSecrets } from '../store/access.js';
import type { Db } from '../store/database.js';
import { accountNumberOf } from './numbering.js';

export const DEMO_MEMBER_ACCOUNTS = 5;

/** The demo secrets of an account: predictable on purpose, as the demo data is public. */
export function demoMemberSecret(accountNumber: string): { homeBankingPassword: string; audioAccessCode: string } {
  return { homeBankingPassword: `demo-${accountNumber}`, audioAccessCode: accountNumber.slice(-4) };
}

export async function seedMemberSecrets(db: Db, accounts: number): Promise<void> {
  for (let index = 1; index <= Math.min(accounts, DEMO_MEMBER_ACCOUNTS); index += 1) {
    const accountNumber = accountNumberOf(index);
    const secret = demoMemberSecret(accountNumber);
    await memberSecrets.set(db, accountNumber, {
      homeBankingPasswordHash: await hashPassword(secret.homeBankingPassword),
      audioAccessCodeHash: await hashPassword(secret.audioAccessCode),
    });
  }
}
