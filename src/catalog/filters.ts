/**
 * What a record's search filters take besides `Query`: the date bounds the core's filter types declare
 * (CollateralFmHistoryFilter and CollateralFmHistorySearchFilter hold StartPostDate and EndPostDate), as
 * `Start<Field>` and `End<Field>` of one of the record's date fields. A gateway must not refuse them.
 */
import type { FieldDef } from './fields.js';
import type { RecordDef } from './records.js';
import { elementsOf, isComplexType, recordType } from './symxchange/index.js';

export interface FilterBound {
  /** The filter's property: `StartPostDate`. */
  readonly name: string;
  /** The date field it bounds: PostDate. */
  readonly field: FieldDef;
  /** `start`: on or after; `end`: on or before. */
  readonly bound: 'start' | 'end';
}

const BOUND = /^(Start|End)(\w+)$/;

/**
 * The date bounds of a record's filters, from its filter types in the SymXchange facts.
 * @example filterBounds(recordDef('CollateralFmHistory')).map((b) => b.name) // ['StartPostDate', 'EndPostDate']
 */
export function filterBounds(record: RecordDef): readonly FilterBound[] {
  const type = recordType(record.name);
  if (!type) return [];
  const names = new Set<string>();
  for (const filter of [`${type}Filter`, `${type}SearchFilter`]) {
    if (!isComplexType(filter)) continue;
    for (const element of elementsOf(filter)) if (element.type === 'xsd:date') names.add(element.name);
  }
  return [...names].flatMap((name) => {
    const [, bound = '', fieldName] = BOUND.exec(name) ?? [];
    const field = record.fields.find((f) => f.name === fieldName && f.kind === 'date');
    return field ? [{ name, field, bound: bound === 'Start' ? ('start' as const) : ('end' as const) }] : [];
  });
}
