/**
 * The record reader: catalog records by key, as their plan says (the fields, the filter of each list, the
 * child lists nested to any depth). `recordTree.read` reads one record, its child lists included, in one
 * query; `recordTree.list` reads a list or a page of records under a parent in position order, then the
 * child lists of the whole page in one more query. The database builds the child lists as JSON.
 */
import { CompiledQuery, sql, type RawBuilder } from 'kysely';
import type { FieldDef, RecordDef } from '../catalog/index.js';
import type { Db } from '../database/database.js';
import { quoted, selectList, whereKey, type Row, type WireRecord } from './records.js';

/**
 * What to read of a record type: its fields, the filter of its rows where they are read as a list, and
 * the child lists to nest in each record, each with its own plan.
 * @example const plan: ReadPlan = { record: recordDef('CorpTransfer'), fields: recordDef('CorpTransfer').fields }
 */
export interface ReadPlan {
  readonly record: RecordDef;
  /** The fields returned, under their wire names (protected fields never are). */
  readonly fields: readonly FieldDef[];
  /** Repeating fields whose flag was a list of EntryIds: only those entries are returned. */
  readonly entryFilters?: ReadonlyMap<string, ReadonlySet<number>>;
  /** Condition on this record type's rows where they are read as a list (a compiled search query). */
  readonly filter?: RawBuilder<unknown>;
  readonly children?: readonly { readonly list: string; readonly plan: ReadPlan }[];
}

/**
 * A record's place in its list: its position column's value, or for a record without one (a share, listed
 * under its account) the last column of its primary key (`share_id`).
 */
export type Position = number | string;

/** Which records of a list to read: up to `limit` after the keyset position `after`, skipping `offset`. */
export interface Page {
  readonly limit: number;
  /** Keyset position: only records after it. */
  readonly after?: Position;
  readonly offset?: number;
}

export interface RecordPage {
  readonly records: WireRecord[];
  /** More records follow the page (spec: a list that stops at the maximum sets hasReachedMaximumListSize). */
  readonly more: boolean;
  /** The position of the page's last record: where the next page starts. */
  readonly lastPosition: Position | undefined;
}

/** The column under which list rows carry their position (removed before a record is returned). */
const POSITION = '__position';
/** The table alias of the record read; its child lists are `pc`, theirs `pcc`, and so on. */
const ROOT_ALIAS = 'p';

/** The column that orders a record type's rows under their parent (for the root, its key). */
const positionOf = (record: RecordDef) => record.positionColumn ?? record.primaryKey.at(-1)!;

// Catalog names are written into the SQL text (not bound), so that a plan's text is the same on every call.
const column = (alias: string, name: string) => sql.raw(`${alias}.${quoted(name)}`);
const text = (value: string) => sql.raw(`'${value.replaceAll("'", "''")}'`);

/** The select list of a record at table alias `alias`: its fields under their wire names, then its child lists. */
function recordColumns(plan: ReadPlan, alias: string, listMaximum: number): RawBuilder<unknown>[] {
  const values = selectList(plan.fields, alias);
  return [
    ...(values ? [sql.raw(values)] : []),
    ...(plan.children ?? []).map(
      (child) => sql`${listJson(plan.record, alias, child.plan, listMaximum)} as ${sql.raw(quoted(child.list))}`,
    ),
  ];
}

/**
 * A record as a JSON object under its wire names, its child lists included, from table alias `alias`:
 * `row_to_json` of a row of aliased columns (any number of them, in catalog order).
 */
function recordJson(plan: ReadPlan, alias: string, listMaximum: number): RawBuilder<unknown> {
  const columns = recordColumns(plan, alias, listMaximum);
  return sql`(select row_to_json(r) from (select ${columns.length > 0 ? sql.join(columns) : sql``}) r)`;
}

/**
 * One child list of the parent row at `parentAlias`, in position order, read up to the list maximum plus
 * one (which only sets hasReachedMaximumListSize). A child's key columns are its parent's primary key.
 */
function listJson(parent: RecordDef, parentAlias: string, plan: ReadPlan, listMaximum: number): RawBuilder<unknown> {
  const alias = `${parentAlias}c`;
  const { record } = plan;
  const position = column(alias, positionOf(record));
  const match = record.keyColumns.map(
    (key, i) => sql`${column(alias, key.column)} = ${column(parentAlias, parent.primaryKey[i]!)}`,
  );
  const conditions = [...match, ...(plan.filter ? [sql`(${plan.filter})`] : [])];
  const maximum = sql.raw(String(listMaximum));
  const json = recordJson(plan, alias, listMaximum);
  return sql`(select json_build_object('hasReachedMaximumListSize', count(*) > ${maximum},
      ${text(record.name)}, coalesce(json_agg(x.j order by x.pos) filter (where x.pos_rank <= ${maximum}), '[]'::json))
    from (select ${json} as j, ${position} as pos, row_number() over (order by ${position}) as pos_rank
      from ${sql.table(record.table)} ${sql.raw(alias)} where ${sql.join(conditions, sql` and `)}
      order by ${position} limit ${sql.raw(String(listMaximum + 1))}) x)`;
}

/**
 * The SQL of `recordTree.read`: the record of `key` with the plan's fields and child lists.
 * Spec: lists stop at the maximum and set hasReachedMaximumListSize.
 */
export function readQuery(plan: ReadPlan, key: Row, listMaximum: number): RawBuilder<WireRecord> {
  const columns = recordColumns(plan, ROOT_ALIAS, listMaximum);
  return sql<WireRecord>`select ${columns.length > 0 ? sql.join(columns) : sql``}
    from ${sql.table(plan.record.table)} ${sql.raw(ROOT_ALIAS)} where ${whereKey(key, { alias: ROOT_ALIAS })}`;
}

/**
 * The SQL of one page of `recordTree.list`: the plan's fields and position of the records under
 * `parentKey` that pass the plan's filter, in position order, one more than the page holds (which only
 * tells whether more follow). With `after`, the primary key index seeks straight to the position, so a
 * later page does not read the pages before it.
 */
export function listQuery(plan: ReadPlan, parentKey: Row, page: Page): RawBuilder<WireRecord> {
  const { record } = plan;
  const position = sql.raw(quoted(positionOf(record)));
  const also = [
    ...(page.after === undefined ? [] : [sql`${position} > ${page.after}`]),
    ...(plan.filter ? [sql`(${plan.filter})`] : []),
  ];
  const values = selectList(plan.fields, undefined);
  const selection = sql.raw(`${values ? `${values}, ` : ''}${quoted(positionOf(record))} as ${quoted(POSITION)}`);
  return sql<WireRecord>`select ${selection} from ${sql.table(record.table)}
    where ${whereKey(parentKey, { and: also })}
    order by ${position} limit ${page.limit + 1} offset ${page.offset ?? 0}`;
}

/**
 * The SQL of the child lists of a page: for each record of `plan` under `parentKey` at one of `positions`,
 * its child lists (nested to any depth) as one JSON object.
 */
export function childListsQuery(
  plan: ReadPlan,
  parentKey: Row,
  positions: readonly unknown[],
  listMaximum: number,
): RawBuilder<{ pos: unknown; lists: Record<string, unknown> }> {
  const { record } = plan;
  const position = column(ROOT_ALIAS, positionOf(record));
  const pairs = (plan.children ?? []).map(
    (child) => sql`${text(child.list)}, ${listJson(record, ROOT_ALIAS, child.plan, listMaximum)}`,
  );
  return sql`select ${position} as pos, json_build_object(${sql.join(pairs)}) as lists
    from ${sql.table(record.table)} ${sql.raw(ROOT_ALIAS)}
    where ${whereKey(parentKey, { alias: ROOT_ALIAS, and: [sql`${position} in (${sql.join(positions)})`] })}`;
}

/** Only the entries of a repeating field that its EntryId filter names. */
function applyEntryFilters(record: WireRecord, entryFilters: ReadonlyMap<string, ReadonlySet<number>>): void {
  for (const [name, entryIds] of entryFilters) {
    const entries = record[name];
    if (Array.isArray(entries)) {
      record[name] = entries.filter((entry: { EntryId: number }) => entryIds.has(entry.EntryId));
    }
  }
}

/**
 * A record as returned: without its position, a repeating field never set an empty entry list (its column
 * is null), EntryId filters applied, through every nested list.
 */
function finish(plan: ReadPlan, record: WireRecord): WireRecord {
  delete record[POSITION];
  for (const field of plan.fields) if (field.repeating && record[field.name] === null) record[field.name] = [];
  if (plan.entryFilters) applyEntryFilters(record, plan.entryFilters);
  for (const { list, plan: childPlan } of plan.children ?? []) {
    const entries = (record[list] as Record<string, WireRecord[]> | undefined)?.[childPlan.record.name];
    for (const entry of entries ?? []) finish(childPlan, entry);
  }
  return record;
}

/** Stands for the value of a key column in a compiled read whose key values are bound per call. */
class KeyValue {
  constructor(readonly column: string) {}
}

/** A read's SQL for one plan, key columns and list maximum, with its parameters (key values to bind). */
interface CompiledRead {
  readonly sql: string;
  readonly parameters: readonly unknown[];
}

/**
 * The compiled SQL of `readQuery` per plan, by key columns and list maximum: a plan's text (14 KB for a whole
 * collateral tree) is built once, and each read binds its key's values. Plans that operations keep
 * (read-plan.ts `planMemo`) are the same object on every request of their selection. Both databases compile
 * with PostgreSQL's query compiler, so a text compiled on one serves the other.
 */
const compiledReads = new WeakMap<ReadPlan, Map<string, CompiledRead>>();

function compiledRead(db: Db, plan: ReadPlan, key: Row, listMaximum: number): CompiledQuery<WireRecord> {
  const shape = `${listMaximum}|${Object.keys(key).join('|')}`;
  let byShape = compiledReads.get(plan);
  if (!byShape) compiledReads.set(plan, (byShape = new Map()));
  let read = byShape.get(shape);
  if (!read) {
    const placeholders = Object.fromEntries(Object.keys(key).map((column) => [column, new KeyValue(column)]));
    const { sql: text, parameters } = readQuery(plan, placeholders, listMaximum).compile(db);
    byShape.set(shape, (read = { sql: text, parameters }));
  }
  const parameters = read.parameters.map((value) => (value instanceof KeyValue ? key[value.column] : value));
  return CompiledQuery.raw(read.sql, parameters) as CompiledQuery<WireRecord>;
}

export const recordTree = {
  /**
   * One record by its key, with the plan's fields and child lists (nested to any depth, each stopping at
   * `listMaximum`), in one query; undefined when none matches.
   * @example await recordTree.read(db, { record: corpTransfer, fields }, { global_sequence_date: '2024-01-31', global_sequence: 7 })
   */
  async read(db: Db, plan: ReadPlan, key: Row, listMaximum?: number): Promise<WireRecord | undefined> {
    if (listMaximum === undefined && (plan.children?.length ?? 0) > 0) {
      throw new Error(`reading the child lists of ${plan.record.name} needs the list maximum`);
    }
    const { rows } = await db.executeQuery(compiledRead(db, plan, key, listMaximum ?? 0));
    return rows[0] && finish(plan, rows[0]);
  },

  /** Whether a record has this key. */
  async exists(db: Db, record: RecordDef, key: Row): Promise<boolean> {
    return (await recordTree.read(db, { record, fields: [] }, key)) !== undefined;
  },

  /**
   * A list or page of records under a parent (`parentKey`, which their own child lists share too), in
   * position order, each with the plan's child lists: two queries whatever the page size.
   */
  async list(db: Db, plan: ReadPlan, parentKey: Row, page: Page, listMaximum: number): Promise<RecordPage> {
    const { rows } = await listQuery(plan, parentKey, page).execute(db);
    const records = rows.slice(0, page.limit);
    const lastPosition = records.at(-1)?.[POSITION] as Position | undefined;
    if (records.length > 0 && (plan.children?.length ?? 0) > 0) {
      const positions = records.map((record) => record[POSITION]);
      const { rows: lists } = await childListsQuery(plan, parentKey, positions, listMaximum).execute(db);
      const byPosition = new Map(lists.map((row) => [row.pos, row.lists]));
      for (const record of records) Object.assign(record, byPosition.get(record[POSITION]));
    }
    return { records: records.map((record) => finish(plan, record)), more: rows.length > page.limit, lastPosition };
  },
};
