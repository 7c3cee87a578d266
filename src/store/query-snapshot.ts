/**
 * The snapshots of the hot queries, one per store module (`src/generated/sql/<module>.sql`, written by
 * `npm run queries:snapshot`, checked by a test): the SQL the store sends for them, captured by running the
 * store's own code on a database that records each compiled query instead of running it. A change to one
 * of them then shows in review, like a table change shows in `schema.sql`.
 */
import {
  Kysely,
  PostgresAdapter,
  PostgresIntrospector,
  PostgresQueryCompiler,
  type CompiledQuery,
  type DatabaseConnection,
  type Driver,
  type QueryResult,
} from 'kysely';
import type { Db } from '../database/database.js';
import type { Row } from './records.js';

/** A query to snapshot: what runs it, and the rows each of its statements gets back, in order (none by default). */
export interface HotQuery {
  /** The block's `-- name`: the operation or store function it comes from. */
  readonly name: string;
  /** The store module whose query it is (`lookups` for store/lookups.ts): its snapshot is `<module>.sql`. */
  readonly module: string;
  readonly run: (db: Db) => Promise<unknown>;
  readonly answers?: readonly (readonly Row[])[];
}

/** A connection that records each query and answers it with the next of the given row sets. */
class CapturingConnection implements DatabaseConnection {
  readonly queries: CompiledQuery[] = [];

  constructor(private readonly answers: readonly (readonly Row[])[]) {}

  async executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    const rows = (this.answers[this.queries.length] ?? []).map((row) => ({ ...row }));
    this.queries.push(query);
    return { rows: rows as R[], numAffectedRows: BigInt(rows.length) };
  }

  // eslint-disable-next-line require-yield
  async *streamQuery<R>(): AsyncIterableIterator<QueryResult<R>> {
    throw new Error('a captured query is never streamed');
  }
}

class CapturingDriver implements Driver {
  constructor(readonly connection: CapturingConnection) {}
  async init(): Promise<void> {}
  async acquireConnection(): Promise<DatabaseConnection> {
    return this.connection;
  }
  async beginTransaction(): Promise<void> {}
  async commitTransaction(): Promise<void> {}
  async rollbackTransaction(): Promise<void> {}
  async releaseConnection(): Promise<void> {}
  async destroy(): Promise<void> {}
}

/**
 * A database that runs nothing: it records the SQL of each statement sent through it (transaction
 * control aside) and answers it with the next of `answers` (no rows once they run out).
 * @example const { db, statements } = capturingDatabase(); await tokens.list(db); statements() // ['select "id", … order by "id"']
 */
export function capturingDatabase(answers: readonly (readonly Row[])[] = []): {
  db: Db;
  statements: () => string[];
  /** Each statement with its parameters, to run elsewhere (an `EXPLAIN` of it on a real database). */
  queries: () => readonly CompiledQuery[];
} {
  const connection = new CapturingConnection(answers);
  const db = new Kysely<unknown>({
    dialect: {
      createAdapter: () => new PostgresAdapter(),
      createDriver: () => new CapturingDriver(connection),
      createQueryCompiler: () => new PostgresQueryCompiler(),
      createIntrospector: (kysely) => new PostgresIntrospector(kysely),
    },
  });
  return { db, statements: () => connection.queries.map((query) => query.sql), queries: () => connection.queries };
}

/** The SQL of each statement `hot` sends, in order. */
export async function capture(hot: HotQuery): Promise<string[]> {
  const { db, statements } = capturingDatabase(hot.answers);
  await hot.run(db);
  return statements();
}

/** The folder of the committed snapshots, beside `schema.sql`. */
export const QUERY_SNAPSHOT_DIR = new URL('../generated/sql/', import.meta.url).pathname;

/** A module's snapshot file. */
export const querySnapshotFile = (module: string): string => `${QUERY_SNAPSHOT_DIR}${module}.sql`;

/** Keywords that start a clause of a statement: each starts a line. */
const CLAUSES = new Set([
  'select',
  'from',
  'where',
  'order',
  'group',
  'limit',
  'offset',
  'returning',
  'values',
  'set',
  'on',
  'insert',
  'update',
  'delete',
  'with',
  'for',
]);
/** Clauses whose items are listed one a line. */
const LISTS = new Set(['select', 'returning', 'set']);
const STATEMENTS = new Set(['select', 'insert', 'update', 'delete', 'with']);

/**
 * A statement laid out for review, whatever the indentation of the code that built it: each clause of a
 * statement on a line of its own, each item of a select list (or SET, RETURNING) on its own line, nested
 * statements indented by their depth. Only spaces and line breaks change; the snapshot is not run.
 */
export function layOut(statement: string): string {
  const tokens = statement.match(/'(?:[^']|'')*'|"(?:[^"]|"")*"|\s+|[(),]|[^\s(),'"]+/g) ?? [];
  let out = '';
  let depth = 0;
  // Per parenthesis depth: whether a statement is open there, and whether its current clause is a list.
  const statementAt: boolean[] = [false];
  const listAt: boolean[] = [false];
  let previous = '';
  const newLine = (indent = depth) => (out = `${out.trimEnd()}\n${'  '.repeat(indent)}`);
  for (const token of tokens) {
    if (/^\s+$/.test(token)) {
      if (!/[\s(]$/.test(out) && out !== '') out += ' ';
      continue;
    }
    if (token === '(') {
      out += '(';
      depth += 1;
      statementAt[depth] = false;
      listAt[depth] = false;
      continue;
    }
    if (token === ')') {
      depth -= 1;
      out = `${out.trimEnd()})`;
      continue;
    }
    if (token === ',') {
      out = `${out.trimEnd()},`;
      if (listAt[depth]) newLine(depth + 1);
      continue;
    }
    const word = token.toLowerCase();
    // `for update`, `do update` and `delete from` are one clause each.
    const clause = CLAUSES.has(word) && !['for', 'do', 'delete'].includes(previous);
    if (STATEMENTS.has(word) && !statementAt[depth]) {
      statementAt[depth] = true;
    } else if (clause && statementAt[depth]) {
      newLine();
    }
    if (clause && statementAt[depth]) listAt[depth] = LISTS.has(word);
    out += token;
    previous = word;
  }
  return out.trim();
}

/**
 * The snapshot texts by store module: each hot query's statements in order, one block each under a
 * `-- name` comment, in the file of the module whose query it is.
 */
export async function renderQuerySnapshots(hotQueries: readonly HotQuery[]): Promise<Map<string, string>> {
  const blocks = new Map<string, string[]>();
  for (const hot of hotQueries) {
    const statements = await capture(hot);
    if (statements.length === 0) throw new Error(`${hot.name} sent no query`);
    const module = blocks.get(hot.module) ?? [];
    blocks.set(hot.module, module);
    statements.forEach((statement, i) => {
      const name = statements.length === 1 ? hot.name : `${hot.name} (${i + 1} of ${statements.length})`;
      module.push(`-- ${name}\n${layOut(statement)};\n`);
    });
  }
  return new Map(
    [...blocks].map(([module, texts]) => [
      module,
      [
        '-- Generated by `npm run queries:snapshot` (scripts/queries-snapshot.ts) from the code that builds these',
        `-- queries; do not edit. The hot queries served by src/store/${module}.ts, as the store sends them:`,
        '-- $1, $2, … are bound parameters.',
        '',
        texts.join('\n'),
      ].join('\n'),
    ]),
  );
}
