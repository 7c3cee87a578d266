/**
 * SQL schema derived from the record catalog. The generated DDL is snapshotted in `schema.sql`
 * (`npm run schema:snapshot`) so that every change to the tables is visible in review.
 */
import { MONEY_SCALE, RATE_SCALE, RECORDS, type FieldDef, type RecordDef } from '../catalog/index.js';

/** SQL type of a field's value column. */
export function sqlTypeOf(field: FieldDef): string {
  if (field.repeating) return 'jsonb';
  switch (field.kind) {
    case 'string':
      return `varchar(${field.maxLength ?? 255})`;
    case 'integer':
      return 'integer';
    case 'money':
      return `numeric(15,${MONEY_SCALE})`;
    case 'rate':
      return `numeric(10,${RATE_SCALE})`;
    case 'date':
      return 'date';
  }
}

/** Columns of a protected field: HMAC for equality lookup, AES-256-GCM ciphertext to read it back. */
export function protectedColumns(field: FieldDef): { hmac: string; cipher: string } {
  return { hmac: `${field.column}_hmac`, cipher: `${field.column}_enc` };
}

function columnDefinitions(record: RecordDef): string[] {
  const inKey = new Set(record.primaryKey);
  const lines: string[] = [];
  const seen = new Set<string>();
  const add = (column: string, type: string, notNull: boolean) => {
    if (seen.has(column)) return;
    seen.add(column);
    lines.push(`${column} ${type}${notNull ? ' not null' : ''}`);
  };
  for (const key of record.keyColumns) add(key.column, key.sqlType, !key.nullable);
  for (const field of record.fields) {
    if (field.protection) {
      const { hmac, cipher } = protectedColumns(field);
      add(hmac, 'bytea', false);
      add(cipher, 'bytea', false);
    } else {
      add(field.column, sqlTypeOf(field), inKey.has(field.column));
    }
  }
  return lines;
}

/** CREATE TABLE and CREATE INDEX statements of one record type. */
export function recordTableDdl(record: RecordDef): string[] {
  const body = [...columnDefinitions(record), `primary key (${record.primaryKey.join(', ')})`];
  const statements = [`create table ${record.table} (\n  ${body.join(',\n  ')}\n)`];
  for (const index of record.indexes) {
    const unique = index.unique ? 'unique ' : '';
    statements.push(`create ${unique}index ${index.name}_idx on ${record.table} (${index.on.join(', ')})`);
  }
  return statements;
}

/** Tables of the service itself: credentials and settings. */
export const SYSTEM_DDL: readonly string[] = [
  `create table coregate_setting (
  key varchar(64) primary key,
  value text not null
)`,
  `create table api_token (
  id serial primary key,
  name varchar(64) not null unique,
  token_hash bytea not null unique,
  scopes text[] not null,
  created_at timestamptz not null default now(),
  expires_at timestamptz,
  revoked_at timestamptz,
  last_used_at timestamptz
)`,
  `create table app_user (
  user_number integer primary key check (user_number between 1 and 9999),
  name varchar(64) not null,
  password_hash text not null,
  created_at timestamptz not null default now()
)`,
];

/** The whole schema: the catalog's tables, then the system tables. */
export function schemaDdl(): string[] {
  return [...RECORDS.flatMap(recordTableDdl), ...SYSTEM_DDL];
}

/** Location of the committed DDL snapshot. */
export const SCHEMA_SNAPSHOT_FILE = new URL('./schema.sql', import.meta.url).pathname;

/** The snapshot text: every statement of the schema, generated from the catalog. */
export function renderSchemaSnapshot(): string {
  return `-- Generated from the record catalog by \`npm run schema:snapshot\`; do not edit.\n\n${schemaDdl().join(';\n\n')};\n`;
}
