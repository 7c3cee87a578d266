/**
 * Bulk loading in PostgreSQL's COPY text format: records are encoded straight from their wire values to
 * COPY lines (protected fields hashed and encrypted on the way, as `toRow` does), and whole tables'
 * worth of lines are streamed with `COPY … FROM STDIN`, which skips per-statement parsing and planning.
 */
import type { FieldDef, RecordDef } from '../catalog/index.js';
import type { Secrets } from '../security/secrets.js';
import type { Row, WireRecord } from './records.js';
import { tableColumns, type TableColumn } from './schema.js';

/** The NULL marker of the COPY text format. */
const COPY_NULL = '\\N';

/** Characters that must be escaped inside a COPY text field. */
const COPY_SPECIAL = /[\\\t\n\r]/;
const COPY_ESCAPES: Readonly<Record<string, string>> = { '\\': '\\\\', '\t': '\\t', '\n': '\\n', '\r': '\\r' };

/** One value as a COPY text field. */
function copyText(text: string): string {
  return COPY_SPECIAL.test(text) ? text.replace(/[\\\t\n\r]/g, (c) => COPY_ESCAPES[c] ?? c) : text;
}

/** bytea in COPY text: the `\x` hex form, its backslash escaped. */
function copyBytes(bytes: Buffer): string {
  return `\\\\x${bytes.toString('hex')}`;
}

/** Where a field's value goes in a line: its column, or for a protected field its HMAC and ciphertext columns. */
interface FieldSlot {
  readonly field: FieldDef;
  readonly value?: number;
  readonly hmac?: number;
  readonly cipher?: number;
}

/** One value as COPY text, or the NULL marker. */
function valueText(value: unknown): string {
  if (value === null || value === undefined) return COPY_NULL;
  if (typeof value === 'number') return String(value);
  return copyText(typeof value === 'object' ? JSON.stringify(value) : String(value));
}

/** The slots of a table's fields by field name, and the positions of its parent key columns. */
function slotsOf(columns: readonly TableColumn[]): { fields: Map<string, FieldSlot>; keys: [string, number][] } {
  const fields = new Map<string, FieldSlot>();
  const keys: [string, number][] = [];
  columns.forEach((column, position) => {
    for (const source of column.sources) {
      if (source.from === 'key') {
        keys.push([column.name, position]);
        continue;
      }
      const slot = fields.get(source.field.name) ?? { field: source.field };
      fields.set(source.field.name, { ...slot, [source.from]: position });
    }
  });
  return { fields, keys };
}

/** How one record type is written with COPY: its table, its column list and a line encoder. */
export interface CopyPlan {
  readonly table: string;
  /** Columns in COPY order; identity columns are left to the database. */
  readonly columns: readonly string[];
  /** One COPY text line (with its newline) from a record's wire values and parent keys. */
  line(values: WireRecord, keys: Row, secrets: Secrets): string;
}

/** @example copyPlan(recordDef('Card')).line({ Locator: 1, CardNumber: '4312…' }, { account_number: '0000000001' }, secrets) */
export function copyPlan(record: RecordDef): CopyPlan {
  const columns = tableColumns(record).filter((column) => !column.identity);
  const { fields, keys } = slotsOf(columns);
  const empty: readonly string[] = columns.map(() => COPY_NULL);
  return {
    table: record.table,
    columns: columns.map((column) => column.name),
    // Rows are sparse, so the line starts all NULL and only the values present are encoded: parent keys
    // first, then the record's own fields, which win where both name a column (as in `toRow`).
    line(values, keyValues, secrets) {
      const out = empty.slice();
      for (const [name, position] of keys) out[position] = valueText(keyValues[name]);
      for (const name in values) {
        const slot = fields.get(name);
        const value = values[name];
        if (!slot || value === undefined) continue;
        if (slot.value !== undefined) out[slot.value] = valueText(value);
        if (slot.hmac !== undefined && slot.field.protection && value !== null) {
          out[slot.hmac] = copyBytes(secrets.lookupHash(slot.field.protection, String(value)));
        }
        if (slot.cipher !== undefined && value !== null) out[slot.cipher] = copyBytes(secrets.encrypt(String(value)));
        if (value === null) for (const position of [slot.hmac, slot.cipher]) if (position !== undefined) out[position] = COPY_NULL;
      }
      return `${out.join('\t')}\n`;
    },
  };
}
