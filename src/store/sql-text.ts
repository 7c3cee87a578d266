/**
 * Text forms the store's queries share: how a timestamp leaves the database, and how a value is matched
 * literally inside a LIKE pattern.
 */
import { sql, type Expression, type RawBuilder } from 'kysely';

/**
 * A timestamp as ISO 8601 text in UTC with milliseconds (`2026-11-26T10:00:00.000Z`), as JavaScript's
 * `toISOString` writes it: the form every timestamp leaves the store in.
 * @example fixedTables(db).selectFrom('app_user').select((eb) => isoTime(eb.ref('created_at')).as('createdAt'))
 */
export function isoTime<T extends string | null = string>(timestamp: Expression<unknown>): RawBuilder<T> {
  return sql<T>`to_char(${timestamp} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
}

/**
 * Text that a LIKE pattern matches literally: its wildcards and the escape character escaped.
 * @example likeLiteral('user:2_') // 'user:2\\_'
 */
export function likeLiteral(text: string): string {
  return text.replace(/[\\%_]/g, (character) => `\\${character}`);
}
