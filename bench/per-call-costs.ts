/**
 * What each per-call cost the gateway's lookup and keyed update were rid of (issue 40) costs, before and after,
 * in one process: the two ways are timed in alternating rounds, so both meet the same load on a shared
 * machine, and the median round of each is printed (CPU µs per call, from `process.cpuUsage`). A
 * complement to `bench/gateway-cost.ts`, whose whole-request figures move by more than any one of these.
 *
 * Run: node --import tsx bench/per-call-costs.ts [postgres://postgres@127.0.0.1:5432/<database>]
 */
import { Counter, Histogram, Registry } from 'prom-client';
import { CompiledQuery } from 'kysely';
import { DEADLINES } from '../src/core/deadlines.js';
import { openDatabase, runStatement } from '../src/database/database.js';
import { ServiceMetrics } from '../src/http/metrics.js';
import { hashToken } from '../src/store/access.js';
import type { FastifyReply, FastifyRequest } from 'fastify';

const ROUNDS = 15;

/** CPU µs per call of `run(calls)`, the median of ROUNDS rounds, the two ways alternating. */
function compare(label: string, calls: number, before: (n: number) => void, after: (n: number) => void) {
  const rounds: [number[], number[]] = [[], []];
  for (let round = 0; round < ROUNDS; round += 1)
    [before, after].forEach((way, i) => {
      const start = process.cpuUsage();
      way(calls);
      const used = process.cpuUsage(start);
      rounds[i]!.push((used.user + used.system) / calls);
    });
  const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
  console.log(`| ${label} | ${median(rounds[0]).toFixed(2)} | ${median(rounds[1]).toFixed(2)} |`);
}

async function compareAsync(
  label: string,
  calls: number,
  before: () => Promise<unknown>,
  after: () => Promise<unknown>,
) {
  const rounds: [number[], number[]] = [[], []];
  for (let round = 0; round < ROUNDS; round += 1)
    for (const [i, way] of [before, after].entries()) {
      const start = process.cpuUsage();
      for (let n = 0; n < calls; n += 1) await way();
      const used = process.cpuUsage(start);
      rounds[i]!.push((used.user + used.system) / calls);
    }
  const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
  console.log(`| ${label} | ${median(rounds[0]).toFixed(2)} | ${median(rounds[1]).toFixed(2)} |`);
}

async function main(): Promise<void> {
  console.log('| per call | before µs CPU | after µs CPU |');
  console.log('| --- | ---: | ---: |');

  // A keyed update's statement: through Kysely's executor, against straight on a pooled connection.
  const url = process.argv[2];
  if (url) {
    const database = await openDatabase({ url, poolSize: 4 });
    const { db } = database;
    const statement = CompiledQuery.raw('select $1::text as stamp, now()::text as at', ['x']);
    await db.executeQuery(statement);
    await compareAsync(
      'one statement, one round trip (PostgreSQL)',
      300,
      () => db.executeQuery(statement),
      () => runStatement(db, statement),
    );
    await database.close();
  }

  // The core call's deadline: a signal and its listener per call, against the wheel.
  compare(
    'deadline of a core call',
    20_000,
    (n) => {
      for (let i = 0; i < n; i += 1) {
        const signal = AbortSignal.timeout(15_000);
        const onAbort = () => undefined;
        signal.addEventListener('abort', onAbort, { once: true });
        signal.removeEventListener('abort', onAbort);
      }
    },
    (n) => {
      for (let i = 0; i < n; i += 1) {
        const deadline = DEADLINES.start(15_000);
        deadline.onExpire(() => undefined);
        deadline.onExpire(undefined);
        deadline.release();
      }
    },
  );

  // The bearer token's identity: hashed, then looked up; against looked up by the token.
  const token = 'cg_' + 'x'.repeat(40);
  const byHash = new Map([[hashToken(token).toString('base64'), { tokenName: 'bench' }]]);
  const byToken = new Map([[token, { tokenName: 'bench' }]]);
  compare(
    "bearer token's identity (cached)",
    50_000,
    (n) => {
      for (let i = 0; i < n; i += 1) byHash.get(hashToken(token).toString('base64'));
    },
    (n) => {
      for (let i = 0; i < n; i += 1) byToken.get(token);
    },
  );

  // A request's metrics: a key string and prom-client's children (which hash their labels per call), against
  // the series added to in place.
  const registry = new Registry();
  const requests = new Counter({
    name: 'r',
    help: 'r',
    labelNames: ['edge', 'operation', 'family', 'status', 'code'],
    registers: [registry],
  });
  const durations = new Histogram({
    name: 'd',
    help: 'd',
    labelNames: ['edge', 'operation', 'family', 'status'],
    registers: [registry],
  });
  const children = new Map<string, { count: { inc(): void }; duration: { observe(v: number): void } }>();
  const operation = { name: 'findBySSN', family: 'P1', service: 'findby' };
  const request = {
    url: '/gw/627/persistent/findby/findBySSN',
    operation,
    routeOptions: {},
  } as unknown as FastifyRequest;
  const reply = { statusCode: 200, elapsedTime: 1.5 } as unknown as FastifyReply;
  const metrics = new ServiceMetrics({ db: {} as never });
  compare(
    "a request's metrics",
    50_000,
    (n) => {
      for (let i = 0; i < n; i += 1) {
        const edge = request.url.startsWith('/SymXchange/') ? 'soap' : 'json';
        const status = String(reply.statusCode);
        const key = `${edge}\0${operation.name}\0${operation.family}\0${status}\0`;
        let series = children.get(key);
        if (!series) {
          series = {
            count: requests.labels({ edge, operation: operation.name, family: operation.family, status, code: '' }),
            duration: durations.labels({ edge, operation: operation.name, family: operation.family, status }),
          };
          children.set(key, series);
        }
        series.count.inc();
        series.duration.observe(reply.elapsedTime / 1000);
      }
    },
    (n) => {
      for (let i = 0; i < n; i += 1) metrics.requestEnded(request, reply);
    },
  );
}

void main();
