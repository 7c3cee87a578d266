/**
 * Queries over parent/child records (Collateral → documents → tracking, …): one record by key, a page or
 * list of children in position order, and the children of many parents at once. Every row also carries
 * its position under `__position` (and its parent's under `__parent`), which the caller strips.
 */
import { sql, type RawBuilder } from 'kysely';
import type { FieldDef, RecordDef } from '../catalog/index.js';
import type { Db } from './database.js';
import { wireSelection, type Row, type WireRecord } from './records.js';

export const POSITION = '__position';
export const PARENT = '__parent';

function conditions(key: Row, extra: RawBuilder<unknown>[] = []): RawBuilder<unknown> {
  const parts = [...Object.entries(key).map(([column, value]) => sql`${sql.ref(column)} = ${value}`), ...extra];
  return parts.length > 0 ? sql.join(parts, sql` and `) : sql`true`;
}

function selection(record: RecordDef, fields: readonly FieldDef[]): RawBuilder<unknown> {
  const position = sql`${sql.ref(record.positionColumn ?? record.primaryKey.at(-1)!)} as ${sql.id(POSITION)}`;
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

export const recordTree = {
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

  /**
   * The first `perParent` children of each of several parents (e.g. the tracking records of a page of
   * documents) in one query; rows carry their parent's position under `__parent`.
   */
  async childrenOfMany(
    db: Db,
    record: RecordDef,
    commonKey: Row,
    parentColumn: string,
    parents: readonly number[],
    fields: readonly FieldDef[],
    filter: RawBuilder<unknown> | undefined,
    perParent: number,
  ): Promise<WireRecord[]> {
    if (parents.length === 0) return [];
    const position = sql.ref(record.positionColumn!);
    const extra = [
      sql`${sql.ref(parentColumn)} in (${sql.join(parents)})`,
      ...(filter ? [sql`(${filter})`] : []),
    ];
    const result = await sql<WireRecord>`select * from (
        select ${selection(record, fields)}, ${sql.ref(parentColumn)} as ${sql.id(PARENT)},
          row_number() over (partition by ${sql.ref(parentColumn)} order by ${position}) as __rank
        from ${sql.table(record.table)} where ${conditions(commonKey, extra)}
      ) ranked where __rank <= ${perParent} order by ${sql.id(PARENT)}, __rank`.execute(db);
    return result.rows;
  },
};
