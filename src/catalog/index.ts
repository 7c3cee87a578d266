/**
 * The record catalog: one definition per record type (records.ts) and what every layer derives from it.
 */
import type { FieldDef } from './fields.js';
import { RECORDS, type RecordDef } from './records.js';

export * from './fields.js';
export * from './fm-history.js';
export * from './field-rules.js';
export * from './wire-rules.js';
export * from './filters.js';
export {
  RECORDS,
  SHARE_RECORD_NAMES,
  SHARE_SUB_RECORD_NAMES,
  type RecordDef,
  type ChildList,
  type KeyColumn,
  type IndexDef,
  type ShareRecordName,
  type ShareSubRecordName,
} from './records.js';

const byName = new Map(RECORDS.map((r) => [r.name, r]));

/**
 * The catalog entry of a record type; throws for a name the catalog does not have (a programming error).
 * @example recordDef('ShareHold').table // 'share_hold'
 */
export function recordDef(name: string): RecordDef {
  const def = byName.get(name);
  if (!def) throw new Error(`record type ${name} is not in the catalog`);
  return def;
}

/** One field of a record by wire name, or undefined. */
export function fieldOf(record: RecordDef, name: string): FieldDef | undefined {
  return record.fields.find((f) => f.name === name);
}

/** The field with a given column, for mapping key columns back to wire names. */
export function fieldByColumn(record: RecordDef, column: string): FieldDef | undefined {
  return record.fields.find((f) => f.column === column);
}
