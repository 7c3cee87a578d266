/**
 * The FindBy queries, one per lookup path, each served by an index declared in the catalog.
 * Card numbers, SSNs and MICR numbers are matched by their keyed HMAC, never in clear.
 */
import { sql } from 'kysely';
import type { Secrets } from '../crypto/secrets.js';
import type { Db } from '../database/database.js';

/** Card status code of an active card; "active" also requires an expiration date not in the past. */
export const CARD_STATUS_ACTIVE = 0;

export interface ShareMatch {
  readonly accountNumber: string;
  readonly shareId: string | null;
}

async function accountNumbers(query: Promise<{ rows: { account_number: string }[] }>): Promise<string[]> {
  return (await query).rows.map((row) => row.account_number);
}

/**
 * The lookups, each a query of one lookup table. Those that match a protected value take its keyed HMAC
 * (`secrets.lookupHash`).
 */
export const lookups = {
  /** The account of an active, unexpired card with this number's HMAC (the lowest, should several match). */
  async activeCard(db: Db, cardNumberHmac: Buffer): Promise<string | undefined> {
    const [account] = await accountNumbers(
      sql<{ account_number: string }>`select account_number from card
        where card_number_hmac = ${cardNumberHmac}
          and status = ${CARD_STATUS_ACTIVE} and expiration_date >= current_date
        order by account_number limit 1`.execute(db),
    );
    return account;
  },

  /** Distinct accounts with a card of this number's HMAC, active or not, ascending. */
  anyCard(db: Db, cardNumberHmac: Buffer): Promise<string[]> {
    return accountNumbers(
      sql<{ account_number: string }>`select distinct account_number from card
        where card_number_hmac = ${cardNumberHmac}
        order by account_number`.execute(db),
    );
  },

  /** The account of a home-banking user name, case-insensitive. */
  async homeBankingUser(db: Db, userName: string): Promise<string | undefined> {
    const [account] = await accountNumbers(
      sql<{ account_number: string }>`select account_number from home_banking_user
        where lower(user_name) = lower(${userName}) limit 1`.execute(db),
    );
    return account;
  },

  /** The account and share of a MICR number's HMAC and a draft. */
  async micr(db: Db, micrNumberHmac: Buffer, draft: string): Promise<ShareMatch | undefined> {
    const result = await sql<ShareMatch>`select account_number as "accountNumber", share_id as "shareId" from micr
      where micr_number_hmac = ${micrNumberHmac} and draft = ${draft}
      order by account_number limit 1`.execute(db);
    return result.rows[0];
  },

  /** The account of a MICR number (any draft): the MICRCredentials lookup. */
  async micrAccount(db: Db, micrNumberHmac: Buffer): Promise<string | undefined> {
    const [account] = await accountNumbers(
      sql<{ account_number: string }>`select account_number from micr
        where micr_number_hmac = ${micrNumberHmac} order by account_number limit 1`.execute(db),
    );
    return account;
  },

  /** The account (and share, if the lookup names one) of a lookup type and number. */
  async lookup(db: Db, lookupType: number, lookupNumber: string): Promise<ShareMatch | undefined> {
    const result = await sql<ShareMatch>`select account_number as "accountNumber", share_id as "shareId" from lookup
      where lookup_type = ${lookupType} and lookup_number = ${lookupNumber}
      order by account_number, locator limit 1`.execute(db);
    return result.rows[0];
  },

  /** Distinct accounts with a name record (account- or share-level) carrying the SSN of this HMAC, ascending. */
  bySsn(db: Db, ssnHmac: Buffer, limit: number): Promise<string[]> {
    return accountNumbers(
      sql<{ account_number: string }>`select distinct account_number from share_name
        where ssn_hmac = ${ssnHmac} order by account_number limit ${limit}`.execute(db),
    );
  },

  /** The SSNs on an account's name records (account- and share-level), decrypted, for a member's second factor. */
  async accountSsns(db: Db, secrets: Secrets, accountNumber: string): Promise<string[]> {
    const result = await sql<{ ssn_enc: Uint8Array }>`select ssn_enc from share_name
      where account_number = ${accountNumber} and ssn_enc is not null`.execute(db);
    return result.rows.map((row) => secrets.decrypt(row.ssn_enc));
  },

  /** Distinct accounts with a name record of that short name, case-insensitive, ascending. */
  byShortName(db: Db, shortName: string, limit: number): Promise<string[]> {
    return accountNumbers(
      sql<{ account_number: string }>`select distinct account_number from share_name
        where upper(short_name) = upper(${shortName}) order by account_number limit ${limit}`.execute(db),
    );
  },
};
