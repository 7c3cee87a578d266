/**
 * Field selection (spec: "Operations with SelectableFields return the fields whose flag is true, or all
 * fields when the IncludeAll flag is true").
 */
import type { RecordDef } from '../catalog/index.js';
import type { ReadPlan } from '../store/record-tree.js';

/**
 * The fields part of a `ReadPlan`: the fields returned, and the entries of repeating fields whose flag was
 * a list of EntryIds. The record reader returns those fields and applies those filters.
 */
export type Selection = Required<Pick<ReadPlan, 'fields' | 'entryFilters'>>;

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
