/**
 * Bulk loading in PostgreSQL's COPY text format: records are encoded straight from their wire values to
 * COPY lines (protected fields hashed and encrypted on the way, as `toRow` does), and whole tables'
 * worth of lines are streamed with `COPY … FROM STDIN`, which skips per-statement parsing and planning.
 */
import type { FieldDef, RecordDef } from '../catalog/index.js';
import type { Secrets } from '../crypto/secrets.js';
import type { Row, WireRecord } from './records.js';
import { protectedText, tableColumns, type TableColumn } from '../database/schema.js';

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

/** One record to write: its wire values and its parent keys. */
export interface CopyRecord {
  readonly values: WireRecord;
  readonly keys: Row;
}

/** A batch of records as COPY text: the columns it fills, in COPY order, and one line per record. */
export interface CopyText {
  readonly columns: readonly string[];
  readonly text: string;
  readonly rows: number;
}

/** How one record type is written with COPY: its table and a batch encoder. */
export interface CopyPlan {
  readonly table: string;
  /**
   * Encodes records as COPY text lines over only the columns some record of the batch fills (parent keys
   * always): records are sparse, and a column left out of COPY's column list takes its default, which
   * for a record's columns is NULL, as an unfilled one would be. Neither side spends time on runs of NULL
   * markers.
   */
  encode(records: readonly CopyRecord[], secrets: Secrets): CopyText;
}

/** @example copyPlan(recordDef('Card')).encode([{ values: { Locator: 1, CardNumber: '4312…' }, keys: { account_number: '0000000001' } }], secrets) */
export function copyPlan(record: RecordDef): CopyPlan {
  const columns = tableColumns(record).filter((column) => !column.identity);
  const { fields, keys } = slotsOf(columns);
  /** The columns a value of each field fills: its own, or its HMAC and ciphertext. */
  const filled = new Map(
    [...fields].map(([name, slot]) => [
      name,
      [slot.value, slot.hmac, slot.cipher].filter((position) => position !== undefined),
    ]),
  );
  return {
    table: record.table,
    encode(records, secrets) {
      // First pass: which columns the batch fills, numbered in table order.
      const used = new Set<number>(keys.map(([, position]) => position));
      for (const { values } of records) {
        for (const name in values) {
          if (values[name] === undefined) continue;
          for (const position of filled.get(name) ?? []) used.add(position);
        }
      }
      const positions = [...used].sort((a, b) => a - b);
      const place = new Int32Array(columns.length).fill(-1);
      positions.forEach((position, index) => (place[position] = index));
      const at = (position: number | undefined) => (position === undefined ? -1 : (place[position] ?? -1));
      const empty: readonly string[] = positions.map(() => COPY_NULL);
      // Second pass: one line per record, parent keys first, then the record's own fields, which win
      // where both name a column (as in `toRow`).
      const lines: string[] = [];
      for (const { values, keys: keyValues } of records) {
        const out = empty.slice();
        for (const [name, position] of keys) out[at(position)] = valueText(keyValues[name]);
        for (const name in values) {
          const slot = fields.get(name);
          const value = values[name];
          if (!slot || value === undefined) continue;
          if (slot.value !== undefined) out[at(slot.value)] = valueText(value);
          if (!slot.field.protection) continue;
          const clear = protectedText(slot.field, value);
          if (clear === null) continue; // the HMAC and ciphertext columns stay NULL
          if (slot.hmac !== undefined) out[at(slot.hmac)] = copyBytes(secrets.lookupHash(slot.field.protection, clear));
          if (slot.cipher !== undefined) out[at(slot.cipher)] = copyBytes(secrets.encrypt(clear));
        }
        lines.push(out.join('\t'));
      }
      return {
        columns: positions.map((position) => columns[position]?.name ?? ''),
        text: lines.length > 0 ? `${lines.join('\n')}\n` : '',
        rows: lines.length,
      };
    },
  };
}
