/**
 * What a read operation returns of a record type and its children (a `ReadPlan`, which the record reader
 * executes): the selected fields, the filter of each child list, and the nested child lists. Built from
 * `SelectableFields` and the search filters.
 */
import { sql, type RawBuilder } from 'kysely';
import { Type, type TSchema } from 'typebox';
import { filterBounds, type RecordDef } from '../catalog/index.js';
import { childRecords, schemaIds } from '../catalog/schemas.js';
import { Problem } from '../contract/problems.js';
import { compileBounds, compileQuery, QueryError } from '../query/index.js';
import type { ReadPlan } from '../store/record-tree.js';
import { resolveSelection, type SelectorFlags } from './selection.js';

export type { ReadPlan } from '../store/record-tree.js';

/** A `SelectableFields` object of some record type (spec: "Selection and paging objects"). */
export interface SelectableFields {
  readonly [name: string]: boolean | SelectorFlags | SelectableFields | undefined;
}
/** A filter of a record: a search `Query` and the record's date bounds (`StartPostDate`, …), each optional. */
export type RecordFilter = { readonly Query?: string } & Readonly<Record<string, unknown>>;
/** A `<X>ChildrenFilter` object: `<Child>Filter: {Query, <bounds>, <Child>ChildrenFilter}` per child. */
export type ChildrenFilter = Readonly<Record<string, RecordFilter>>;

/**
 * Compiles a record's filter: its search query AND its date bounds. A syntax or type error in the query
 * is 400 INVALID_QUERY naming the property and the position (DESIGN).
 */
export function compileFilter(
  filter: RecordFilter | undefined,
  record: RecordDef,
  pointer: string,
): RawBuilder<unknown> | undefined {
  if (filter === undefined) return undefined;
  let query: RawBuilder<unknown> | undefined;
  try {
    query = filter.Query === undefined ? undefined : compileQuery(filter.Query, record);
  } catch (error) {
    if (!(error instanceof QueryError)) throw error;
    // The message ends with the 0-based position of the offending token.
    throw new Problem(400, 'INVALID_QUERY', error.message, [{ pointer: `${pointer}/Query`, detail: error.message }]);
  }
  const bounds = compileBounds(
    filterBounds(record).flatMap((bound) =>
      typeof filter[bound.name] === 'string' ? [{ ...bound, date: filter[bound.name] as string }] : [],
    ),
  );
  return query && bounds ? sql`(${query} and ${bounds})` : (query ?? bounds);
}

/** Distinct selections and filters whose plans an operation keeps. */
const PLANS_KEPT = 256;

/**
 * An operation's plans by the request properties that decide them (`SelectableFields` and the filters,
 * given as one JSON key): clients repeat a few selections, so each is resolved and compiled once, and the
 * record reader can keep the SQL it builds for a plan (record-tree.ts). The oldest go past `PLANS_KEPT`.
 * A selection or filter that is refused throws every time: nothing is kept for it.
 * @example const plans = planMemo(); plans(JSON.stringify([body.SelectableFields]), () => readPlan(body))
 */
export function planMemo(): (key: string, build: () => ReadPlan) => ReadPlan {
  const plans = new Map<string, ReadPlan>();
  return (key, build) => {
    let plan = plans.get(key);
    if (plan === undefined) {
      plan = build();
      if (plans.size >= PLANS_KEPT) plans.delete(plans.keys().next().value!);
      plans.set(key, plan);
    }
    return plan;
  };
}

/** Everything: every field and every child list, recursively (operations without SelectableFields). */
export function fullPlan(record: RecordDef): ReadPlan {
  return {
    record,
    ...resolveSelection(record, true, undefined),
    children: childRecords(record).map((child) => ({ list: child.list, plan: fullPlan(child.record) })),
  };
}

/**
 * The plan for a `SelectableFields` object. Absent: everything. `IncludeAll<X>Fields`: every field, and
 * every child list whose own selector is absent. Otherwise the flagged fields, and the child lists whose
 * selector is present. Child lists are filtered by `<Child>Filter.Query` of the children filter.
 */
export function selectedPlan(
  record: RecordDef,
  selectable: SelectableFields | undefined,
  childrenFilter: ChildrenFilter | undefined,
  pointer: { selection: string; filter: string },
  filter?: RawBuilder<unknown>,
): ReadPlan {
  if (selectable === undefined && childrenFilter === undefined) return { ...fullPlan(record), filter };
  const includeAll = selectable === undefined || selectable[`IncludeAll${record.name}Fields`] === true;
  const selection = resolveSelection(record, includeAll, selectable?.[schemaIds.selector(record)] as SelectorFlags);
  const children = childRecords(record).flatMap((child) => {
    const selectorName = schemaIds.selectable(child.record);
    const childSelectable = selectable?.[selectorName] as SelectableFields | undefined;
    if (childSelectable === undefined && !includeAll) return [];
    const filterName = `${child.record.name}Filter`;
    const childFilter = childrenFilter?.[filterName];
    const nestedFilterName = schemaIds.childrenFilter(child.record);
    const plan = selectedPlan(
      child.record,
      childSelectable,
      childFilter?.[nestedFilterName] as ChildrenFilter | undefined,
      {
        selection: `${pointer.selection}/${selectorName}`,
        filter: `${pointer.filter}/${filterName}/${nestedFilterName}`,
      },
      compileFilter(childFilter, child.record, `${pointer.filter}/${filterName}`),
    );
    return [{ list: child.list, plan }];
  });
  return { record, ...selection, filter, children };
}

/**
 * The answer of a read of one record, a list or a page, as the WSDLs shape them: `<Record>`;
 * `<Record>List` with `hasReachedMaximumListSize` and the records; the records repeated and `Token`.
 */
export function readAnswerSchema(record: RecordDef, shape: 'single' | 'list' | 'paged'): TSchema {
  const ref = Type.Ref(schemaIds.record(record));
  const body =
    shape === 'single'
      ? { [record.name]: ref }
      : shape === 'list'
        ? {
            [`${record.name}List`]: Type.Object(
              { hasReachedMaximumListSize: Type.Boolean(), [record.name]: Type.Array(ref) },
              { additionalProperties: false },
            ),
          }
        : { [record.name]: Type.Array(ref), Token: Type.String({ description: 'Empty on the last page' }) };
  return Type.Object(body, { additionalProperties: false });
}
