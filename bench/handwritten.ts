/**
 * The hand-written anchor: the service a competent engineer writes by hand for findBySSN and
 * getCollateralSelectFields with Fastify and the database driver, and nothing else: no tokens, no body
 * credentials, no rate limits, no audit trail, no request schema. findBySSN HMACs the SSN with the dataset's
 * key and runs one indexed select; getCollateralSelectFields reads the collateral and each of its record
 * types with one flat, indexed query each (in parallel on PostgreSQL) and builds the tree in JavaScript. It
 * answers the same JSON as coregate (the column lists come from coregate's catalog, so the answers compare),
 * on coregate's paths, so that the same requests and checks apply.
 *
 * The bench compiles it (servers.ts, `buildServers`) and runs, from node_modules/.cache/coregate-bench/:
 *   PORT=9000 COREGATE_DATA_DIR=<dir> DATABASE_URL=postgres://… node handwritten.js [--workers W]
 *   PORT=9000 COREGATE_DATA_DIR=<dir> node handwritten.js (PGlite in <dir>/pglite; one process)
 */
import { createHmac, hkdfSync } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import Fastify from 'fastify';
import pg from 'pg';
import { recordDef, type RecordDef } from '../src/catalog/index.js';
import { runClustered } from './cluster-main.js';

type Row = Record<string, unknown>;
type Query = (text: string, values: readonly unknown[]) => Promise<Row[]>;

const LIST_MAXIMUM = 1000;
const DATE = 1082;
const NUMERIC = 1700;
const INT8 = 20;
const PARSERS: Record<number, (value: string) => unknown> = {
  [INT8]: Number,
  [NUMERIC]: Number,
  [DATE]: (value) => value,
};

/** The HMAC of an SSN under the dataset's lookup key (HKDF of its master secret, as coregate keys it). */
function ssnHasher(dataDir: string): (ssn: string) => Buffer {
  const master = Buffer.from(readFileSync(join(dataDir, 'secret.key'), 'utf8').trim(), 'hex');
  const key = Buffer.from(hkdfSync('sha256', master, Buffer.alloc(0), 'coregate:lookup-hmac', 32));
  return (ssn) => createHmac('sha256', key).update(`ssn:${ssn}`).digest();
}

async function connect(dataDir: string): Promise<Query> {
  const url = process.env.DATABASE_URL;
  if (url) {
    const pool = new pg.Pool({
      connectionString: url,
      max: 10,
      types: {
        getTypeParser: ((oid: number, format: 'text') => PARSERS[oid] ?? pg.types.getTypeParser(oid, format)) as never,
      },
    });
    return async (text, values) => (await pool.query({ text, values: [...values] })).rows as Row[];
  }
  const db = await PGlite.create(join(dataDir, 'pglite'), { parsers: PARSERS });
  return async (text, values) => (await db.query<Row>(text, [...values])).rows;
}

/** A record type of the collateral tree and the SELECT of all its rows under one collateral. */
interface TreeLevel {
  readonly record: RecordDef;
  readonly list?: string;
  readonly sql: string;
  /** The columns that name a row's parent (its key columns after the collateral number). */
  readonly parentColumns: readonly string[];
  readonly children: readonly TreeLevel[];
}

const quote = (name: string) => `"${name}"`;

function treeLevel(record: RecordDef, list?: string): TreeLevel {
  const fields = record.fields.filter((field) => !field.protection);
  const parentColumns = record.keyColumns.slice(1).map((key) => key.column);
  const hidden = [...parentColumns, ...(record.positionColumn ? [record.positionColumn] : [])];
  const columns = [
    ...fields.map((field) => `${quote(field.column)} as ${quote(field.name)}`),
    ...hidden.map((column) => `${quote(column)} as ${quote(`_${column}`)}`),
  ];
  const order = [...parentColumns, record.positionColumn ?? record.primaryKey.at(-1)!].map(quote).join(', ');
  return {
    record,
    ...(list ? { list } : {}),
    sql: `select ${columns.join(', ')} from ${quote(record.table)} where collateral_number = $1 order by ${order}`,
    parentColumns,
    children: record.children.map((child) => treeLevel(recordDef(child.record), child.list)),
  };
}

const ROOT = treeLevel(recordDef('Collateral'));
const levels = (level: TreeLevel): TreeLevel[] => [level, ...level.children.flatMap(levels)];
const LEVELS = levels(ROOT);

/** The collateral with every child list, nested, from one flat row list per record type. */
async function collateralTree(query: Query, collateralNumber: string, parallel: boolean): Promise<Row | undefined> {
  const rows = parallel
    ? await Promise.all(LEVELS.map((level) => query(level.sql, [collateralNumber])))
    : await LEVELS.reduce<Promise<Row[][]>>(
        async (done, level) => [...(await done), await query(level.sql, [collateralNumber])],
        Promise.resolve([]),
      );
  const rowsOf = new Map(LEVELS.map((level, i) => [level, rows[i]!]));
  const root = rowsOf.get(ROOT)![0];
  if (!root) return undefined;
  // Each row's child lists, filled from the child rows whose parent columns name it.
  const attach = (level: TreeLevel, parent: Row, parentPath: readonly unknown[]) => {
    for (const child of level.children) {
      const entries = rowsOf
        .get(child)!
        .filter((row) => child.parentColumns.every((column, i) => row[`_${column}`] === parentPath[i]));
      for (const entry of entries) {
        const position = child.record.positionColumn ? entry[`_${child.record.positionColumn}`] : undefined;
        attach(child, entry, [...parentPath, position]);
        for (const column of [...child.parentColumns, child.record.positionColumn])
          if (column) delete entry[`_${column}`];
      }
      parent[child.list!] = {
        hasReachedMaximumListSize: entries.length > LIST_MAXIMUM,
        [child.record.name]: entries.slice(0, LIST_MAXIMUM),
      };
    }
  };
  attach(ROOT, root, []);
  return root;
}

async function serve(port: number): Promise<void> {
  const dataDir = process.env.COREGATE_DATA_DIR ?? '.';
  const hashSsn = ssnHasher(dataDir);
  const query = await connect(dataDir);
  const parallel = process.env.DATABASE_URL !== undefined;
  const app = Fastify({ logger: false });
  app.get('/ready', async () => ({ status: 'ready' }));
  app.post<{ Body: { SSN?: string } }>('/gw/627/persistent/findby/findBySSN', async (request, reply) => {
    const ssn = request.body?.SSN;
    if (typeof ssn !== 'string') return reply.code(400).send({ error: 'SSN is required' });
    const rows = await query(
      'select distinct account_number from share_name where ssn_hmac = $1 order by account_number limit 1000',
      [hashSsn(ssn)],
    );
    return { AccountNumber: rows.map((row) => row.account_number), MessageId: 'findBySSN' };
  });
  app.post<{ Body: { CollateralNumber?: string } }>(
    '/gw/627/2022.01/collateral/getCollateralSelectFields',
    async (request, reply) => {
      const number = request.body?.CollateralNumber;
      if (typeof number !== 'string') return reply.code(400).send({ error: 'CollateralNumber is required' });
      const collateral = await collateralTree(query, number, parallel);
      if (!collateral) return reply.code(404).send({ error: `no collateral ${number}` });
      return { Collateral: collateral };
    },
  );
  await app.listen({ port, host: '127.0.0.1' });
}

runClustered(serve);
