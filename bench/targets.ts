/**
 * The servers a scenario is measured against, each with what it is sent and how its answers are
 * judged: coregate on PostgreSQL and on PGlite, Prism mocking coregate's own OpenAPI document, and the
 * bare Fastify ceiling answering bodies of the size coregate answers.
 */
import { randomBytes } from 'node:crypto';
import { rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import pg from 'pg';
import type { TargetId } from './options.js';
import type { Credentials, Dataset } from './datasets.js';
import { parseAnswer, post, type Answer, type Headers, type Watch } from './load.js';
import {
  WALK_OPERATION,
  WALK_PATH,
  buildOperations,
  cyclingOperation,
  keyedUpdate,
  nextPageBody,
  valueAt,
  type Operation,
  type PreparedRequest,
  type WalkStart,
} from './scenarios.js';
import {
  BENCH_DIR,
  benchServer,
  COREGATE,
  freePort,
  sampleContextSwitches,
  sampleCpu,
  sampleCpuOf,
  startServer,
  type Server,
} from './servers.js';

export interface Target {
  readonly id: TargetId;
  readonly label: string;
  readonly server: Server;
  readonly headers: Headers;
  /** The requests this target is sent, by operation name. */
  readonly operations: ReadonlyMap<string, Operation>;
  /** Where an operation's requests go on this target, or why they cannot be sent. */
  path(operation: Operation): string | { readonly unavailable: string };
  /** What is wrong with an answer, or undefined when it is right. */
  judge(
    operation: Operation,
    request: PreparedRequest,
    answer: Answer,
  ): string | undefined | Promise<string | undefined>;
  /** Other processes its runs measure too (the core behind a gateway). */
  readonly watches?: readonly Watch[];
}

/** A target's label in tables and results. */
const TARGET_LABELS: Readonly<Record<TargetId, string>> = {
  pg: 'coregate/PostgreSQL',
  pglite: 'coregate/PGlite',
  prism: 'Prism mock',
  ceiling: 'Fastify ceiling',
  core: 'SymXchange core',
  gateway: 'coregate gateway',
  forwarder: 'hand-written forwarder',
  'handwritten-pg': 'hand-written/PostgreSQL',
  'handwritten-pglite': 'hand-written/PGlite',
};

const jsonHeaders = (token: string): Headers => ({
  'content-type': 'application/json',
  authorization: `Bearer ${token}`,
});

/** Starts `coregate serve` on a dataset; `workers` above 1 adds --workers; `nodeFlags` go before the others. */
export async function startCoregate(
  name: string,
  dataset: Dataset,
  workers: number,
  nodeFlags: readonly string[] = [],
  entry?: string,
): Promise<Server> {
  const args = [
    ...nodeFlags,
    ...(entry ? [...COREGATE.args.slice(0, -1), entry] : COREGATE.args),
    'serve',
    '--no-demo',
    ...(workers > 1 ? ['--workers', String(workers)] : []),
  ];
  const port = await freePort();
  // The banner comes once every worker listens.
  const readyLine = /coregate is serving/;
  return startServer({ name, command: COREGATE.command, args, env: dataset.env, port, readyPath: '/ready', readyLine });
}

const MAX_PAGES_PER_LIST = 100;

/**
 * Follows each list page by page with the paging tokens the server hands out, and returns every page
 * request in walk order; throws on an answer other than 200.
 */
async function walkPages(server: Server, headers: Headers, starts: readonly WalkStart[]): Promise<PreparedRequest[]> {
  const isRight = (answer: unknown) => {
    const records = valueAt(answer, 'CollateralFmHistory');
    return Array.isArray(records) && records.length > 0;
  };
  const pages: PreparedRequest[] = [];
  for (const start of starts) {
    let body = start.body;
    for (let page = 1; page <= MAX_PAGES_PER_LIST; page += 1) {
      const answer = await post(server.url, WALK_PATH, headers, body);
      if (answer.status !== 200) {
        throw new Error(`HTTP ${answer.status} on page ${page} of ${start.collateralNumber}: ${answer.text}`);
      }
      pages.push({ body, isRight });
      const token = valueAt(parseAnswer(answer), 'Token');
      if (typeof token !== 'string' || token === '') break;
      body = nextPageBody(start.body, token);
    }
  }
  return pages;
}

/** The paged-list walk as an operation: its page requests in order, or why there are none. */
async function walkOperation(server: Server, headers: Headers, starts: readonly WalkStart[]): Promise<Operation> {
  try {
    return cyclingOperation(WALK_OPERATION, WALK_PATH, 'CollateralFmHistory', await walkPages(server, headers, starts));
  } catch (error) {
    return {
      ...cyclingOperation(WALK_OPERATION, WALK_PATH, 'CollateralFmHistory', []),
      unavailable: (error as Error).message,
    };
  }
}

/** Why coregate's answer is wrong: not a 200, not JSON (or SOAP), or not the record the request asks for. */
function judgeCoregate(operation: Operation, request: PreparedRequest, answer: Answer): string | undefined {
  if (answer.status !== 200) return `HTTP ${answer.status}`;
  const parsed = operation.parse ? operation.parse(answer.text) : parseAnswer(answer);
  return request.isRight(parsed) ? undefined : 'the answer does not match the request';
}

/** A coregate target with its request pools (built from the generator, the walk from the server). */
export async function coregateTarget(
  id: 'pg' | 'pglite',
  server: Server,
  dataset: Dataset,
  credentials: Credentials,
): Promise<Target> {
  const headers = jsonHeaders(credentials.token);
  const { operations, walkStarts } = buildOperations(dataset.seed, dataset.accounts, credentials.adminPassword);
  operations.set(WALK_OPERATION, await walkOperation(server, headers, walkStarts));
  return {
    id,
    label: TARGET_LABELS[id],
    server,
    headers,
    operations,
    path: (operation) => operation.path,
    judge: judgeCoregate,
  };
}

/** Starts Prism on coregate's OpenAPI document, fetched from a running coregate. */
export async function startPrism(coregateServer: Server): Promise<Server> {
  const response = await fetch(`${coregateServer.url}/openapi.json`);
  if (!response.ok) throw new Error(`GET /openapi.json answered ${response.status}`);
  const document = join(tmpdir(), `coregate-bench-openapi-${process.pid}.json`);
  writeFileSync(document, await response.text());
  const port = await freePort();
  const args = ['mock', document, '-p', String(port), '-h', '127.0.0.1', '--errors', 'false', '-v', 'warn'];
  const command = join(BENCH_DIR, '..', 'node_modules', '.bin', 'prism');
  try {
    return await startServer({
      name: 'Prism',
      command,
      args,
      env: process.env,
      port,
      readyPath: '/',
      anyAnswerIsReady: true,
    });
  } finally {
    // Prism has read the document once it answers.
    rmSync(document, { force: true });
  }
}

/** Prism gets coregate's requests; its answers are schema examples, so only their shape is judged. */
export function prismTarget(server: Server, borrowed: Target): Target {
  return {
    id: 'prism',
    label: TARGET_LABELS.prism,
    server,
    headers: borrowed.headers,
    operations: borrowed.operations,
    path: (operation) => operation.path,
    judge(operation, _request, answer) {
      if (answer.status !== 200) return `HTTP ${answer.status}`;
      return valueAt(parseAnswer(answer), operation.answerKey) === undefined
        ? `no ${operation.answerKey} in the answer`
        : undefined;
    },
  };
}

/** Starts the ceiling server (compiled) with `workers` processes. */
export async function startCeiling(workers: number): Promise<Server> {
  return startServer({
    name: 'ceiling',
    ...benchServer('ceiling', ['--workers', String(workers)]),
    env: process.env,
    port: await freePort(),
    readyPath: '/ready',
  });
}

/**
 * The ceiling gets coregate's requests on `/ceiling/<bytes>`, `bytes` being the size of coregate's
 * typical answer to the operation (`answerSizes`, filled as coregate is measured).
 */
export function ceilingTarget(server: Server, borrowed: Target, answerSizes: ReadonlyMap<string, number>): Target {
  return {
    id: 'ceiling',
    label: TARGET_LABELS.ceiling,
    server,
    headers: borrowed.headers,
    operations: borrowed.operations,
    path(operation) {
      const bytes = answerSizes.get(operation.name);
      return bytes === undefined
        ? { unavailable: `no coregate answer size of ${operation.name}` }
        : `/ceiling/${bytes}`;
    },
    judge(operation, _request, answer) {
      if (answer.status !== 200) return `HTTP ${answer.status}`;
      const expected = answerSizes.get(operation.name);
      return answer.bytes === expected ? undefined : `${answer.bytes} bytes instead of ${expected}`;
    },
  };
}

/** The core's operations: one set for the core, the gateway and the forwarder, so the updates go on writing. */
export interface CoreTarget extends Target {
  readonly id: 'core';
}

/**
 * The SymXchange core of the gateway and the forwarder: coregate serving the PostgreSQL dataset's SymXchange
 * face as a core does (body credentials alone, `COREGATE_SOAP_AUTH=credentials`). It is sent the SOAP twins'
 * envelopes: what the gateway and the forwarder call, measured alone.
 */
export async function coreTarget(dataset: Dataset, credentials: Credentials, workers: number): Promise<CoreTarget> {
  const core = await startCoregate(
    'SymXchange core',
    { ...dataset, env: { ...dataset.env, COREGATE_SOAP_AUTH: 'credentials' } },
    workers,
  );
  const { operations } = buildOperations(dataset.seed, dataset.accounts, credentials.adminPassword);
  return {
    id: 'core',
    label: TARGET_LABELS.core,
    server: core,
    headers: {},
    operations,
    path: (operation) => operation.path,
    judge: judgeCoregate,
  };
}

/** The core's JSON operations as a front of it is sent them: the share update with an Idempotency-Key. */
function frontOperations(core: CoreTarget): Map<string, Operation> {
  const operations = new Map(core.operations);
  const update = 'updateShareByID/persistent';
  operations.set(update, keyedUpdate(core.operations.get(update)!));
  return operations;
}

/** Names of the counts a front's runs take of other processes (`watchedPerRequest`). */
export const WATCHED = {
  coreCpuMs: 'core CPU ms',
  coreContextSwitches: 'core context switches',
  databaseCpuMs: 'gateway database CPU ms',
} as const;

/** The CPU and the context switches of the core's processes, measured with a front's runs. */
const coreWatches = (core: CoreTarget): Watch[] => [
  { name: WATCHED.coreCpuMs, start: async () => sampleCpu(core.server.pid) },
  { name: WATCHED.coreContextSwitches, start: async () => sampleContextSwitches(core.server.pid) },
];

/**
 * The CPU of the PostgreSQL backends connected to a database when a run starts (its pools are full after the
 * warm-up): what a gateway's tokens, audit trail and idempotency keys cost the database server.
 */
function databaseWatch(databaseUrl: string): Watch {
  return {
    name: WATCHED.databaseCpuMs,
    async start() {
      const client = new pg.Client({ connectionString: databaseUrl });
      await client.connect();
      try {
        const { rows } = await client.query<{ pid: number }>(
          'select pid from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()',
        );
        return sampleCpuOf(rows.map((row) => row.pid));
      } finally {
        await client.end();
      }
    },
  };
}

/** How a front of the core runs: its process count, and where its processes write CPU profiles, if they do. */
export interface FrontOptions {
  readonly workers: number;
  readonly profileDir?: string;
  /** The gateway of another build (its `dist/coregate.js`), to weigh two builds against each other. */
  readonly entry?: string;
  /** Told apart in the output from another gateway of the same run. */
  readonly label?: string;
}

/** The Node.js flags of a profiled server: every process writes its profile to `directory` as it exits. */
const profileFlags = (directory: string | undefined) =>
  directory ? ['--cpu-prof', `--cpu-prof-dir=${directory}`] : [];

/**
 * coregate in gateway mode in front of the core, on a database of its own (its tokens, audit trail and
 * idempotency keys), with authentication, validation, audit and idempotency as they are by default. It is
 * sent the JSON requests of the SOAP twins' operations (the update with an Idempotency-Key); its runs also
 * measure the core's CPU and its database's.
 */
export async function gatewayTarget(
  core: CoreTarget,
  dataset: Dataset,
  gateway: { readonly env: NodeJS.ProcessEnv; readonly token: (coreUrl: string) => Promise<string> },
  { workers, profileDir, entry, label }: FrontOptions,
): Promise<Target> {
  const env = { ...gateway.env, COREGATE_CORE: 'symxchange', COREGATE_SYMXCHANGE_URL: core.server.url };
  const token = await gateway.token(core.server.url);
  const name = label ?? 'coregate gateway';
  const server = await startCoregate(name, { ...dataset, env }, workers, profileFlags(profileDir), entry);
  const databaseUrl = gateway.env.DATABASE_URL;
  return {
    id: 'gateway',
    label: label ?? TARGET_LABELS.gateway,
    server,
    headers: jsonHeaders(token),
    operations: frontOperations(core),
    path: (operation) => operation.path,
    judge: judgeCoregate,
    watches: [...coreWatches(core), ...(databaseUrl ? [databaseWatch(databaseUrl)] : [])],
  };
}

/**
 * The hand-written forwarder (bench/forwarder.ts, compiled) in front of the same core, with the gateway's
 * process count and a token of its own. It is sent the gateway's requests and judged as coregate is, and its
 * answers must equal the gateway's (`sameAs`); its runs also measure the core's CPU.
 */
export async function forwarderTarget(
  core: CoreTarget,
  { workers, profileDir }: FrontOptions,
  sameAs?: Target,
): Promise<Target> {
  const token = randomBytes(24).toString('base64url');
  const { command, args } = benchServer('forwarder', ['--workers', String(workers)]);
  const server = await startServer({
    name: TARGET_LABELS.forwarder,
    command,
    args: [...profileFlags(profileDir), ...args],
    env: { ...process.env, FORWARDER_CORE_URL: core.server.url, FORWARDER_TOKEN: token },
    port: await freePort(),
    readyPath: '/ready',
  });
  return {
    id: 'forwarder',
    label: TARGET_LABELS.forwarder,
    server,
    headers: jsonHeaders(token),
    operations: frontOperations(core),
    path: (operation) => operation.path,
    judge: sameAs ? answersAs(sameAs) : judgeCoregate,
    watches: coreWatches(core),
  };
}

/**
 * A judge that also asks `other` the same request (with `other`'s token and this request's headers, an
 * update's Idempotency-Key too) and wants the same JSON back, property for property: a forwarder answering
 * what the gateway answers. An update sent again sets the value it has just set, and answers as the first.
 */
function answersAs(other: Target) {
  return async (operation: Operation, request: PreparedRequest, answer: Answer) => {
    const wrong = judgeCoregate(operation, request, answer);
    if (wrong) return wrong;
    const headers = { ...other.headers, ...operation.headers, ...request.headers };
    const expected = await post(other.server.url, operation.path, headers, request.body);
    if (expected.status !== 200) return `${other.label} answered HTTP ${expected.status} to the same request`;
    return isDeepStrictEqual(parseAnswer(answer), parseAnswer(expected))
      ? undefined
      : `the answer differs from ${other.label}'s: ${expected.text.slice(0, 400)}`;
  };
}

/**
 * The hand-written anchor on a database (bench/handwritten.ts, compiled): on PostgreSQL with coregate's
 * process count, on this run's copy of the dataset; on PGlite one process, on a copy of its own (PGlite is
 * one process's). It is sent coregate's requests and judged as coregate is.
 */
export async function handwrittenTarget(dataset: Dataset, workers: number): Promise<Target> {
  const id = dataset.kind === 'postgres' ? 'handwritten-pg' : 'handwritten-pglite';
  const env = dataset.kind === 'postgres' ? dataset.env : await dataset.copy('handwritten');
  const server = await startServer({
    name: TARGET_LABELS[id],
    ...benchServer('handwritten', dataset.kind === 'postgres' ? ['--workers', String(workers)] : []),
    env,
    port: await freePort(),
    readyPath: '/ready',
  });
  const { operations } = buildOperations(dataset.seed, dataset.accounts, dataset.credentials.adminPassword);
  return {
    id,
    label: TARGET_LABELS[id],
    server,
    headers: { 'content-type': 'application/json' },
    operations,
    path: (operation) => operation.path,
    judge: judgeCoregate,
  };
}
