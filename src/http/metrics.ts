/**
 * The service's metrics in Prometheus's text format (`GET /metrics`, prom-client): calls by operation and
 * status with their latency, refusals by the rate limits, credential lockouts, the database's connections
 * and queries, and in gateway mode each core's latency and circuit; Node's process metrics beside them.
 * Labels name operations, routes, Syms and problem codes, never a raw URL, a token or a value of a request.
 * Each app has a registry of its own (tests build several in one process); the process metrics are
 * collected once per process.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { DEFAULT_SYM, type Config } from '../config.js';
import type { CircuitState, Core } from '../core/index.js';
import type { Authenticator } from '../security/authenticator.js';
import { databaseUsage, type Db } from '../database/database.js';
import { existingAnswerCache } from '../store/answer-cache.js';
import type { Generation } from '../database/schema.js';
import type { ConnectionClosing } from './connections.js';

/** Latency buckets in seconds: a cached lookup takes about a millisecond, a core's timeout 15 s. */
const BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
const CIRCUIT_STATES: readonly CircuitState[] = ['closed', 'half_open', 'open'];

/** The caches of answers kept in memory, by the generation they are checked against (their metrics' name). */
const CACHES: readonly { generation: Generation; what: string; capacity: string }[] = [
  { generation: 'lookup', what: 'FindBy answers', capacity: 'COREGATE_LOOKUP_CACHE_ENTRIES' },
  { generation: 'collateral', what: 'Collateral record answers', capacity: 'COREGATE_COLLATERAL_CACHE_MB of JSON' },
];

/**
 * Which refusal counted: a token's budget of calls, its stricter budget of FindBy lookups, or the streamed
 * exports running at once (COREGATE_EXPORT_CONCURRENCY).
 */
export type RateLimit = 'token' | 'findby' | 'export';

let processRegistry: Registry | undefined;

/** Node's own metrics (CPU, memory, event loop lag, GC, handles), one collector per process. */
function processMetrics(): Registry {
  if (!processRegistry) {
    processRegistry = new Registry();
    collectDefaultMetrics({ register: processRegistry });
  }
  return processRegistry;
}

interface CallSeries {
  readonly count: Tally;
  readonly duration: Tally;
}

/** One label set's numbers, added to in place: no label object hashed, nothing allocated per call. */
interface Tally {
  add(seconds: number): void;
}

/** A series' entry as prom-client keeps it (15.x): a counter's value, or a histogram's buckets, sum and count. */
interface CounterEntry {
  value: number;
}
interface HistogramEntry {
  bucketValues: Record<number, number>;
  sum: number;
  count: number;
}

/**
 * The entry prom-client keeps for `labels` in `metric`, created at zero, to add to in place. A child of
 * `labels()` hashes its label object and allocates on every call; this is what it ends up changing. When the
 * entry is not where prom-client 15 keeps it, the child's own method is used instead.
 */
function tallyOf(metric: Counter<string>, labels: Record<string, string>): Tally;
function tallyOf(metric: Histogram<string>, labels: Record<string, string>, buckets: readonly number[]): Tally;
function tallyOf(
  metric: Counter<string> | Histogram<string>,
  labels: Record<string, string>,
  buckets?: readonly number[],
): Tally {
  if (metric instanceof Counter) metric.inc(labels, 0);
  else metric.zero(labels);
  const entries = Object.values((metric as unknown as { hashMap?: object }).hashMap ?? {}) as {
    labels?: object;
  }[];
  const entry = entries.find((candidate) => candidate.labels === labels);
  if (buckets === undefined) {
    const counter = entry as CounterEntry | undefined;
    if (counter && typeof counter.value === 'number') return { add: () => void (counter.value += 1) };
    const child = (metric as Counter<string>).labels(labels);
    return { add: () => child.inc() };
  }
  const histogram = entry as HistogramEntry | undefined;
  if (histogram && typeof histogram.sum === 'number' && typeof histogram.bucketValues === 'object')
    return {
      add(seconds) {
        histogram.sum += seconds;
        histogram.count += 1;
        for (const bound of buckets)
          if (seconds <= bound) {
            histogram.bucketValues[bound]! += 1;
            return;
          }
      },
    };
  const child = (metric as Histogram<string>).labels(labels);
  return { add: (seconds) => child.observe(seconds) };
}

/**
 * The metrics of one app, fed by its hooks and parts.
 * @example
 * const metrics = new ServiceMetrics({ db });
 * metrics.watchCore(core);
 * metrics.rateLimited('findby');
 * await metrics.text(); // '# HELP coregate_http_requests_total …'
 */
export class ServiceMetrics {
  readonly registry = new Registry();
  private readonly requests: Counter<'edge' | 'operation' | 'family' | 'status' | 'code'>;
  private readonly durations: Histogram<'edge' | 'operation' | 'family' | 'status'>;
  private readonly rateLimitRefusals: Counter<'limit'>;
  private readonly connectionRefusals: Counter;
  private readonly connectionEvictions: Counter;
  private readonly lockoutEvents: { locked: Counter<'credential'>; refused: Counter<'credential'> };
  private coreCalls: Histogram<'sym' | 'outcome'> | undefined;
  /**
   * The series of each label set met so far, by edge, operation (or route), status and problem code: found
   * with no string built per call.
   */
  private readonly series = new Map<string, Map<unknown, Map<number, Map<string, CallSeries>>>>();
  /** The core's latency series by Sym and outcome. */
  private readonly coreSeries = new Map<number, Map<string, Tally>>();

  constructor(sources: { readonly db: Db }) {
    const registers = [this.registry];
    this.requests = new Counter({
      name: 'coregate_http_requests_total',
      help: 'Requests answered, by edge (json, soap, ops), operation (the route for anything else), version family, status and problem code',
      labelNames: ['edge', 'operation', 'family', 'status', 'code'],
      registers,
    });
    this.durations = new Histogram({
      name: 'coregate_http_request_duration_seconds',
      help: 'Time from a request to its answer, by edge, operation (or route), version family and status',
      labelNames: ['edge', 'operation', 'family', 'status'],
      buckets: BUCKETS,
      registers,
    });
    this.rateLimitRefusals = new Counter({
      name: 'coregate_rate_limit_refusals_total',
      help: "Calls refused 429 by a rate limit: a token's budget of calls (token) or of FindBy lookups (findby), or the exports running at once (export)",
      labelNames: ['limit'],
      registers,
    });
    this.connectionRefusals = new Counter({
      name: 'coregate_connection_refusals_total',
      help: 'Connections closed as they arrived because their client address already held its share (COREGATE_MAX_CONNECTIONS_PER_ADDRESS), or the most at COREGATE_MAX_CONNECTIONS',
      registers,
    });
    this.connectionEvictions = new Counter({
      name: 'coregate_connection_evictions_total',
      help: "Connections closed at COREGATE_MAX_CONNECTIONS to make room for another address's: idle or unfinished ones of the address holding the most",
      registers,
    });
    this.lockoutEvents = {
      locked: new Counter({
        name: 'coregate_lockouts_total',
        help: 'Credentials locked after repeated wrong passwords, by kind (admin, user, account, homebanking, lookup)',
        labelNames: ['credential'],
        registers,
      }),
      refused: new Counter({
        name: 'coregate_lockout_refusals_total',
        help: 'Attempts refused because their credential is locked, by kind',
        labelNames: ['credential'],
        registers,
      }),
    };
    for (const { generation, what, capacity } of CACHES) {
      const cache = () => existingAnswerCache(sources.db, generation);
      new Counter({
        name: `coregate_${generation}_cache_answers_total`,
        help: `${what} served from memory (hit) and read from the database (miss)`,
        labelNames: ['result'],
        registers,
        collect() {
          const counts = cache()?.counts;
          if (!counts) return;
          this.reset();
          this.inc({ result: 'hit' }, counts.hits);
          this.inc({ result: 'miss' }, counts.misses);
        },
      });
      new Counter({
        name: `coregate_${generation}_generation_reads_total`,
        help: `Reads of the ${generation} generation, each shared by the reads waiting for it`,
        registers,
        collect() {
          const counts = cache()?.counts;
          if (!counts) return;
          this.reset();
          this.inc(counts.generationReads);
        },
      });
      new Gauge({
        name: `coregate_${generation}_cache_entries`,
        help: `${what} kept in memory (at most ${capacity})`,
        registers,
        collect() {
          this.set(cache()?.size ?? 0);
        },
      });
    }
    const usage = () => databaseUsage(sources.db);
    new Gauge({
      name: 'coregate_db_pool_connections',
      help: 'Database connections checked out (busy) and idle',
      labelNames: ['state'],
      registers,
      collect() {
        const now = usage();
        if (!now) return;
        this.set({ state: 'busy' }, now.busy);
        this.set({ state: 'idle' }, now.idle);
      },
    });
    const usageGauges = [
      [
        'coregate_db_pool_max_connections',
        'The most database connections the pool opens (COREGATE_DB_POOL; 1 for the embedded database)',
        'max',
      ],
      ['coregate_db_pool_waiting', 'Calls waiting for a database connection', 'waiting'],
      ['coregate_db_queries_in_flight', 'Database queries sent and not yet answered', 'queriesInFlight'],
    ] as const;
    for (const [name, help, figure] of usageGauges) {
      new Gauge({
        name,
        help,
        registers,
        collect() {
          const now = usage();
          if (now) this.set(now[figure]);
        },
      });
    }
  }

  /** Gateway mode: each core's latency (observed per call) and circuit state (read at each scrape). */
  watchCore(core: Core): void {
    if (core.kind !== 'symxchange') return;
    const registers = [this.registry];
    this.coreCalls = new Histogram({
      name: 'coregate_core_call_duration_seconds',
      help: "Time a core took to answer an operation (all of its SOAP calls), by Sym and outcome (ok or the call's problem code)",
      labelNames: ['sym', 'outcome'],
      buckets: BUCKETS,
      registers,
    });
    new Gauge({
      name: 'coregate_core_circuit_state',
      help: "Each core's circuit breaker: 1 for the state it is in (closed, half_open, open), 0 for the others",
      labelNames: ['sym', 'state'],
      registers,
      collect() {
        for (const [sym, current] of core.circuits())
          for (const state of CIRCUIT_STATES) this.set({ sym: String(sym), state }, state === current ? 1 : 0);
      },
    });
    const recording = core.recording;
    if (recording)
      new Counter({
        name: 'coregate_recording_exchanges_total',
        help: 'Exchanges with the core written to the recording, and dropped (its queue full, or a file unwritable)',
        labelNames: ['result'],
        registers,
        collect() {
          const { written, dropped } = recording();
          this.reset();
          this.inc({ result: 'written' }, written);
          this.inc({ result: 'dropped' }, dropped);
        },
      });
  }

  /** Counts a request that was answered (or, sandbox `drop`, closed) with `status`. */
  requestEnded(request: FastifyRequest, reply: FastifyReply): void {
    const operation = request.operation;
    const edge = request.url.startsWith('/SymXchange/') ? 'soap' : operation ? 'json' : 'ops';
    const route = operation ?? request.routeOptions.url ?? 'unmatched';
    const status = reply.statusCode;
    const code = request.problemCode ?? '';
    let byRoute = this.series.get(edge);
    if (!byRoute) this.series.set(edge, (byRoute = new Map()));
    let byStatus = byRoute.get(route);
    if (!byStatus) byRoute.set(route, (byStatus = new Map()));
    let byCode = byStatus.get(status);
    if (!byCode) byStatus.set(status, (byCode = new Map()));
    let series = byCode.get(code);
    if (!series) {
      const name = operation?.name ?? (route as string);
      const family = operation?.family ?? '';
      const labels = { edge, operation: name, family, status: String(status) };
      series = {
        count: tallyOf(this.requests, { ...labels, code }),
        duration: tallyOf(this.durations, labels, BUCKETS),
      };
      byCode.set(code, series);
    }
    series.count.add(1);
    series.duration.add(reply.elapsedTime / 1000);
    const atCore = request.coreOutcome;
    if (atCore && this.coreCalls) {
      const sym = request.sym ?? DEFAULT_SYM;
      let bySym = this.coreSeries.get(sym);
      if (!bySym) this.coreSeries.set(sym, (bySym = new Map()));
      let tally = bySym.get(atCore.outcome);
      if (!tally) {
        tally = tallyOf(this.coreCalls, { sym: String(sym), outcome: atCore.outcome }, BUCKETS);
        bySym.set(atCore.outcome, tally);
      }
      tally.add(atCore.latencyMs / 1000);
    }
  }

  rateLimited(limit: RateLimit): void {
    this.rateLimitRefusals.inc({ limit });
  }

  /** A connection closed as it arrived (`refused`), or at the cap to make room for another address's (`evicted`). */
  connectionClosed(reason: ConnectionClosing): void {
    (reason === 'refused' ? this.connectionRefusals : this.connectionEvictions).inc();
  }

  lockout(credential: string, event: 'locked' | 'refused'): void {
    this.lockoutEvents[event].inc({ credential });
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  /** Everything in the text format: this app's metrics and the process's. */
  text(): Promise<string> {
    return Registry.merge([processMetrics(), this.registry]).metrics();
  }
}

export interface MetricsRouteOptions {
  readonly metrics: ServiceMetrics;
  readonly config: Pick<Config, 'metrics'>;
  readonly authenticator: Authenticator;
}

/**
 * `GET /metrics`: open like `/health` by default (it names no member, token or value), behind a live API
 * token with `COREGATE_METRICS=token`, absent with `off` (docs/decisions.md, "Observability").
 */
export function registerMetricsRoute(app: FastifyInstance, options: MetricsRouteOptions): void {
  const { metrics, config, authenticator } = options;
  if (config.metrics === 'off') return;
  app.get('/metrics', { schema: { hide: true } }, async (request, reply) => {
    if (config.metrics === 'token') await authenticator.authenticateBearer(request.headers.authorization);
    return reply.type(metrics.contentType).send(await metrics.text());
  });
}
