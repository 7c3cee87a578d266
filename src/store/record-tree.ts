/**
 * Queries over parent/child records (Collateral → documents → tracking, …): one record by key, a page or
 * list of children in position order, and the child lists of many parents at once, nested to any depth,
 * built as JSON by the database. Every row also carries its position under `__position`, which the
 * caller strips.
 */
import { sql, type RawBuilder } from 'kysely';
import type { FieldDef, RecordDef } from '../catalog/index.js';
import type { Db } from './database.js';
import { quoted, selectList, wireSelection, type Row, type WireRecord } from './records.js';

export const POSITION = '__position';

function conditions(key: Row, extra: RawBuilder<unknown>[] = []): RawBuilder<unknown> {
  const parts = [...Object.entries(key).map(([column, value]) => sql`${sql.ref(column)} = ${value}`), ...extra];
  return parts.length > 0 ? sql.join(parts, sql` and `) : sql`true`;
}

/** The column that orders a record type's rows under their parent (for the root, its key). */
const positionOf = (record: RecordDef) => record.positionColumn ?? record.primaryKey.at(-1)!;

function selection(record: RecordDef, fields: readonly FieldDef[]): RawBuilder<unknown> {
  const position = sql`${sql.ref(positionOf(record))} as ${sql.id(POSITION)}`;
  return fields.length > 0 ? sql`${wireSelection(fields)}, ${position}` : position;
}

export interface ChildrenQuery {
  readonly record: RecordDef;
  /** Equality conditions on key columns: the parent's key. */
  readonly parentKey: Row;
  readonly fields: readonly FieldDef[];
  readonly filter?: RawBuilder<unknown>;
  /** Keyset position: only records after it. */
  readonly after?: number;
  readonly limit: number;
  readonly offset?: number;
}

/** The SQL of `recordTree.children`, exposed so its plan can be examined. */
export function childrenQuery(query: ChildrenQuery): RawBuilder<WireRecord> {
  const { record } = query;
  const position = sql.ref(record.positionColumn!);
  const extra = [
    ...(query.after === undefined ? [] : [sql`${position} > ${query.after}`]),
    ...(query.filter ? [sql`(${query.filter})`] : []),
  ];
  return sql<WireRecord>`select ${selection(record, query.fields)} from ${sql.table(record.table)}
    where ${conditions(query.parentKey, extra)}
    order by ${position} limit ${query.limit} offset ${query.offset ?? 0}`;
}

/** A child list to read under each parent: its records' fields, filter and own child lists. */
export interface ChildListPlan {
  readonly list: string;
  readonly record: RecordDef;
  readonly fields: readonly FieldDef[];
  readonly filter?: RawBuilder<unknown>;
  readonly children: readonly ChildListPlan[];
}

// Catalog names are written into the SQL text (not bound), so that a plan's text is the same on every call.
const column = (alias: string, name: string) => sql.raw(`${alias}.${quoted(name)}`);
const text = (value: string) => sql.raw(`'${value.replaceAll("'", "''")}'`);

/**
 * A record as a JSON object under its wire names, its child lists included, from table alias `alias`:
 * `row_to_json` of a row of aliased columns (any number of them, in catalog order).
 */
function recordJson(
  record: RecordDef,
  alias: string,
  fields: readonly FieldDef[],
  lists: readonly ChildListPlan[],
  listMaximum: number,
): RawBuilder<unknown> {
  const values = selectList(fields, alias);
  const columns = [
    ...(values ? [sql.raw(values)] : []),
    ...lists.map((list) => sql`${listJson(record, alias, list, listMaximum)} as ${sql.raw(quoted(list.list))}`),
  ];
  return sql`(select row_to_json(r) from (select ${columns.length > 0 ? sql.join(columns) : sql``}) r)`;
}

/** `{ <list>: { hasReachedMaximumListSize, <Child>: [...] }, … }` of the parent row at `alias`. */
function listsJson(parent: RecordDef, alias: string, lists: readonly ChildListPlan[], listMaximum: number): RawBuilder<unknown> {
  const pairs = lists.map((list) => sql`${text(list.list)}, ${listJson(parent, alias, list, listMaximum)}`);
  return sql`json_build_object(${sql.join(pairs)})`;
}

/**
 * One child list of the parent row at `parentAlias`, in position order, read up to the list maximum plus
 * one (which only sets hasReachedMaximumListSize). A child's key columns are its parent's primary key.
 */
function listJson(parent: RecordDef, parentAlias: string, list: ChildListPlan, listMaximum: number): RawBuilder<unknown> {
  const alias = `${parentAlias}c`;
  const { record } = list;
  const position = column(alias, positionOf(record));
  const match = record.keyColumns.map(
    (key, i) => sql`${column(alias, key.column)} = ${column(parentAlias, parent.primaryKey[i]!)}`,
  );
  const conditions = [...match, ...(list.filter ? [sql`(${list.filter})`] : [])];
  const maximum = sql.raw(String(listMaximum));
  const json = recordJson(record, alias, list.fields, list.children, listMaximum);
  return sql`(select json_build_object('hasReachedMaximumListSize', count(*) > ${maximum},
      ${text(record.name)}, coalesce(json_agg(x.j order by x.pos) filter (where x.pos_rank <= ${maximum}), '[]'::json))
    from (select ${json} as j, ${position} as pos, row_number() over (order by ${position}) as pos_rank
      from ${sql.table(record.table)} ${sql.raw(alias)} where ${sql.join(conditions, sql` and `)}
      order by ${position} limit ${sql.raw(String(listMaximum + 1))}) x)`;
}

export const recordTree = {
  /**
   * The child lists of several parents (rows of `parent` under `commonKey`, at the given positions) in one
   * query: the database builds each parent's lists, nested to any depth, as one JSON object.
   */
  async childLists(
    db: Db,
    parent: RecordDef,
    commonKey: Row,
    positions: readonly unknown[],
    lists: readonly ChildListPlan[],
    listMaximum: number,
  ): Promise<Map<unknown, Record<string, unknown>>> {
    if (positions.length === 0 || lists.length === 0) return new Map();
    const alias = 'p';
    const position = column(alias, positionOf(parent));
    const conditions = [
      ...Object.entries(commonKey).map(([name, value]) => sql`${column(alias, name)} = ${value}`),
      sql`${position} in (${sql.join(positions)})`,
    ];
    const result = await sql<{ pos: unknown; lists: Record<string, unknown> }>`select ${position} as pos,
        ${listsJson(parent, alias, lists, listMaximum)} as lists
      from ${sql.table(parent.table)} ${sql.raw(alias)} where ${sql.join(conditions, sql` and `)}`.execute(db);
    return new Map(result.rows.map((row) => [row.pos, row.lists]));
  },

  /** One record by its full key, or undefined. */
  async one(db: Db, record: RecordDef, key: Row, fields: readonly FieldDef[]): Promise<WireRecord | undefined> {
    const result = await sql<WireRecord>`select ${selection(record, fields)} from ${sql.table(record.table)}
      where ${conditions(key)}`.execute(db);
    return result.rows[0];
  },

  async exists(db: Db, record: RecordDef, key: Row): Promise<boolean> {
    const result = await sql`select 1 from ${sql.table(record.table)} where ${conditions(key)} limit 1`.execute(db);
    return result.rows.length > 0;
  },

  /**
   * Children of one parent in position order. With `after`, the primary key index seeks straight to the
   * position, so a later page does not read the pages before it.
   */
  children(db: Db, query: ChildrenQuery): Promise<WireRecord[]> {
    return childrenQuery(query).execute(db).then((result) => result.rows);
  },
};
