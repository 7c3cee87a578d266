/**
 * Catalog records as table rows: writing them, and the SQL pieces every query of a record table shares
 * (the select list under wire names, the WHERE of a key). Rows are keyed by column; wire records by field
 * name. Protected fields (PAN, SSN, MICR) are turned into their HMAC and ciphertext columns here and
 * nowhere else. Reading records by key is `recordTree` (record-tree.ts).
 */
import { CompiledQuery, sql, type RawBuilder } from 'kysely';
import type { FieldDef, RecordDef } from '../catalog/index.js';
import type { Secrets } from '../crypto/secrets.js';
import type { Db } from '../database/database.js';
import { protectedColumns, protectedText, tableColumns } from '../database/schema.js';

export type WireRecord = Record<string, unknown>;
export type Row = Record<string, unknown>;

/** Bytes in the text form PostgreSQL's bytea input accepts inside JSON (`\x` + hex). */
function byteaText(bytes: Buffer): string {
  return `\\x${bytes.toString('hex')}`;
}

/** Each record's field positions by name. */
const fieldPositions = new WeakMap<RecordDef, ReadonlyMap<string, number>>();

/** The positions of a record's fields named in `values`, in field order, whatever order `values` has. */
function positionsIn(record: RecordDef, values: WireRecord): number[] {
  let positions = fieldPositions.get(record);
  if (!positions) {
    positions = new Map(record.fields.map((field, position) => [field.name, position]));
    fieldPositions.set(record, positions);
  }
  const present: number[] = [];
  for (const name in values) {
    const position = positions.get(name);
    if (position !== undefined && values[name] !== undefined) present.push(position);
  }
  return present.sort((a, b) => a - b);
}

/**
 * A table row from a record's wire values plus its parent key columns. Its columns are in field order, so
 * the statements written from it read the same whatever order the values came in.
 * @example toRow(recordDef('Card'), { CardNumber: '4000…', Status: 0 }, { account_number: '0000000001' }, secrets)
 */
export function toRow(record: RecordDef, values: WireRecord, keys: Row, secrets: Secrets): Row {
  const row: Row = { ...keys };
  for (const position of positionsIn(record, values)) {
    const field = record.fields[position]!;
    const value = values[field.name];
    if (field.protection) {
      const { hmac, cipher } = protectedColumns(field);
      const clear = protectedText(field, value);
      row[hmac] = clear === null ? null : byteaText(secrets.lookupHash(field.protection, clear));
      row[cipher] = clear === null ? null : byteaText(secrets.encrypt(clear));
    } else {
      row[field.column] = value;
    }
  }
  return row;
}

const BATCH_ROWS = 2000;

/** Each record table's column types by column name. */
const columnTypes = new WeakMap<RecordDef, ReadonlyMap<string, string>>();

/**
 * `json_to_record($n::json) as "values"("column" type, …)` (`json_to_recordset` for an array of rows): the
 * named columns of a record table read from one JSON parameter (written as `parameter`, a `$n`), each
 * converted from its JSON text by its column's type, as the table would. Naming only these columns costs
 * PostgreSQL a fraction of `json_populate_record` over a share's two hundred.
 */
export function jsonRowsSql(record: RecordDef, columns: readonly string[], parameter: string, many: boolean): string {
  let types = columnTypes.get(record);
  if (!types) {
    types = new Map(tableColumns(record).map((column) => [column.name, column.sqlType]));
    columnTypes.set(record, types);
  }
  const definitions = columns.map((column) => {
    const type = types.get(column);
    if (!type) throw new Error(`${record.table} has no column ${column}`);
    return `${quoted(column)} ${type}`;
  });
  return `json_to_record${many ? 'set' : ''}(${parameter}::json) as "values"(${definitions.join(', ')})`;
}

/**
 * The text of an INSERT of rows from one JSON parameter (written as `parameter`, a `$n`), so there is no
 * bind-parameter limit and PostgreSQL converts every column from its JSON text (`jsonRowsSql`).
 */
export function insertSql(record: RecordDef, rows: readonly Row[], parameter: string): string {
  const names = [...new Set(rows.flatMap((row) => Object.keys(row)))];
  const columns = names.map(quoted).join(', ');
  return `insert into ${quoted(record.table)} (${columns})
    select ${columns} from ${jsonRowsSql(record, names, parameter, true)}`;
}

/** The INSERT of a batch of rows (`insertSql`), its rows its one parameter. */
export function insertStatement(record: RecordDef, rows: readonly Row[]): CompiledQuery {
  return CompiledQuery.raw(insertSql(record, rows, '$1'), [JSON.stringify(rows)]);
}

/** Bulk insert, in batches of `insertStatement`. */
export async function insertRows(db: Db, record: RecordDef, rows: readonly Row[]): Promise<void> {
  for (let start = 0; start < rows.length; start += BATCH_ROWS) {
    await db.executeQuery(insertStatement(record, rows.slice(start, start + BATCH_ROWS)));
  }
}

/** A quoted identifier, as Kysely's `sql.id` writes it. */
export function quoted(identifier: string): string {
  return `"${identifier.replaceAll('"', '""')}"`;
}

/**
 * `"column" as "WireName", …` of the readable (unprotected) fields, qualified by a table alias if given.
 * Written as text, not as a node per identifier: a record's select list runs to a hundred columns, and
 * compiling a node per identifier on every request cost more than the query itself.
 */
export function selectList(fields: readonly FieldDef[], alias?: string): string {
  const prefix = alias === undefined ? '' : `${alias}.`;
  return fields
    .filter((f) => !f.protection)
    .map((f) => `${prefix}${quoted(f.column)} as ${quoted(f.name)}`)
    .join(', ');
}

/**
 * The WHERE condition of a key: `column = value` for each key column (values bound, names written into the
 * text), qualified by a table alias if given, joined with `and` to any further conditions; `true` when
 * there are none. Every query that finds records by key builds its WHERE here.
 * @example whereKey({ collateral_number: '7000000001', locator: 2 }, { alias: 'p' }) // p."collateral_number" = $1 and p."locator" = $2
 */
export function whereKey(
  key: Row,
  options: { alias?: string; and?: readonly RawBuilder<unknown>[] } = {},
): RawBuilder<unknown> {
  const prefix = options.alias === undefined ? '' : `${options.alias}.`;
  const conditions = [
    ...Object.entries(key).map(([column, value]) => sql`${sql.raw(`${prefix}${quoted(column)}`)} = ${value}`),
    ...(options.and ?? []),
  ];
  return conditions.length > 0 ? sql.join(conditions, sql` and `) : sql`true`;
}
