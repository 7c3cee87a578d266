/**
 * Field selection (spec: "Operations with SelectableFields return the fields whose flag is true, or all
 * fields when the IncludeAll flag is true").
 */
import type { FieldDef, RecordDef } from '../catalog/index.js';
import type { WireRecord } from '../store/records.js';

export interface Selection {
  readonly fields: readonly FieldDef[];
  /** Repeating fields whose flag was a list of EntryIds: only those entries are returned. */
  readonly entryFilters: ReadonlyMap<string, ReadonlySet<number>>;
}

export type SelectorFlags = Readonly<Record<string, boolean | readonly number[] | undefined>>;

/**
 * The fields an operation returns.
 * @param alwaysIncluded key fields returned whatever the flags say (e.g. the CorpTransfer key pair)
 */
export function resolveSelection(
  record: RecordDef,
  includeAll: boolean | undefined,
  flags: SelectorFlags | undefined,
  alwaysIncluded: readonly string[] = [],
): Selection {
  const readable = record.fields.filter((f) => !f.protection);
  if (includeAll) return { fields: readable, entryFilters: new Map() };
  const entryFilters = new Map<string, ReadonlySet<number>>();
  const fields = readable.filter((field) => {
    const flag = flags?.[field.name];
    if (Array.isArray(flag)) {
      entryFilters.set(field.name, new Set(flag));
      return true;
    }
    return flag === true || alwaysIncluded.includes(field.name);
  });
  return { fields, entryFilters };
}

/** Applies EntryId filters to a record read with `selection.fields`. */
export function applyEntryFilters(record: WireRecord, selection: Selection): WireRecord {
  for (const [name, entryIds] of selection.entryFilters) {
    const entries = record[name];
    if (Array.isArray(entries)) {
      record[name] = entries.filter((entry: { EntryId: number }) => entryIds.has(entry.EntryId));
    }
  }
  return record;
}
