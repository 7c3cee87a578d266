/**
 * Load generation: one-off requests for checks, and autocannon runs (warm-up, then a measurement with
 * the server's memory sampled) that return a typed result.
 */
import { readFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { cpus, loadavg } from 'node:os';
import autocannon from 'autocannon';
import { sampleContextSwitches, sampleCpu, sampleRss } from './servers.js';

export type Headers = Readonly<Record<string, string>>;

/** An HTTP answer as received. */
export interface Answer {
  readonly status: number;
  readonly text: string;
  readonly bytes: number;
}

/**
 * One POST. With `fresh`, on a connection of its own, closed after the answer: a clustered server hands
 * each new connection to its next worker, so fresh requests reach every worker (a kept-alive connection
 * stays with one).
 */
export async function post(
  url: string,
  path: string,
  headers: Headers,
  body: string,
  options: { fresh?: boolean } = {},
): Promise<Answer> {
  if (options.fresh) return postFresh(new URL(path, url), headers, body);
  const response = await fetch(`${url}${path}`, { method: 'POST', headers, body, signal: AbortSignal.timeout(30_000) });
  const buffer = Buffer.from(await response.arrayBuffer());
  return { status: response.status, text: buffer.toString('utf8'), bytes: buffer.length };
}

function postFresh(url: URL, headers: Headers, body: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const request = httpRequest(
      url,
      { method: 'POST', headers: { ...headers, connection: 'close' }, agent: false, timeout: 30_000 },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () => {
          const buffer = Buffer.concat(chunks);
          resolve({ status: response.statusCode ?? 0, text: buffer.toString('utf8'), bytes: buffer.length });
        });
        response.on('error', reject);
      },
    );
    request.on('timeout', () => request.destroy(new Error('no answer within 30 s')));
    request.on('error', reject);
    request.end(body);
  });
}

/** The parsed JSON of an answer, or undefined when it is not JSON. */
export function parseAnswer(answer: Answer): unknown {
  try {
    return JSON.parse(answer.text) as unknown;
  } catch {
    return undefined;
  }
}

/** The next request of a run: where it goes, its body, and headers replacing the run's when given. */
export type NextRequest = () => { readonly path: string; readonly body: string; readonly headers?: Headers };

export interface LoadSpec {
  readonly url: string;
  readonly headers: Headers;
  readonly next: NextRequest;
  readonly connections: number;
  readonly seconds: number;
  /** Requests per second over all connections, when paced; otherwise as fast as the server answers. */
  readonly rate?: number;
  /** The server process whose memory (with its children's) is sampled during the run. */
  readonly pid: number;
  /** Other processes measured over the same window (the core behind a gateway). */
  readonly watches?: readonly Watch[];
}

/**
 * A count of processes other than the server's that a run also measures, by name: the CPU ms of the core a
 * gateway calls or of the PostgreSQL backends of its database, the core's context switches. `start` finds
 * them and begins counting; `stop` returns the count.
 */
export interface Watch {
  readonly name: string;
  start(): Promise<{ stop(): number }>;
}

export interface LoadResult {
  /** Mean of the per-second request counts. */
  readonly requestsPerSecond: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly requests: number;
  readonly non2xx: number;
  readonly timeouts: number;
  /** Connection errors other than timeouts. */
  readonly socketErrors: number;
  /** Mean bytes received per response, headers included. */
  readonly bytesPerResponse: number;
  /** Largest resident set of the server's process tree seen during the run, sampled every 500 ms. */
  readonly maxRssBytes: number;
  /** CPU time (user and system) the server's process tree spent per request during the run. */
  readonly cpuMsPerRequest: number;
  /** Context switches of the server's main threads per request: its event loops' sleeps and wake-ups. */
  readonly contextSwitchesPerRequest?: number;
  /** The count of each of the spec's `watches` per request, by name. */
  readonly watchedPerRequest?: Readonly<Record<string, number>>;
  /** Cores the whole machine kept busy during the run (every process's, the other users' too). */
  readonly machineBusyCores?: number;
  /** The machine's one-minute load average when the run ended. */
  readonly loadAverage?: number;
  /** When the measured part ran, in µs of the monotonic clock (V8's CPU profiles use it too). */
  readonly windowsUs?: readonly (readonly [number, number])[];
}

/** Now, in µs of the monotonic clock. */
const monotonicUs = () => Number(process.hrtime.bigint() / 1000n);

/** The machine's busy and total CPU time so far, in clock ticks (/proc/stat's first line). */
function machineTicks(): { busy: number; total: number } {
  try {
    const [, ...fields] = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!.trim().split(/\s+/);
    const ticks = fields.map(Number);
    const total = ticks.reduce((sum, value) => sum + value, 0);
    // idle and iowait
    return { busy: total - (ticks[3] ?? 0) - (ticks[4] ?? 0), total };
  } catch {
    return { busy: 0, total: 0 };
  }
}

function fire(spec: LoadSpec, seconds: number): Promise<autocannon.Result> {
  return autocannon({
    url: spec.url,
    connections: spec.connections,
    duration: seconds,
    ...(spec.rate === undefined ? {} : { overallRate: spec.rate }),
    method: 'POST',
    headers: { ...spec.headers },
    requests: [
      {
        setupRequest: (request) => {
          const { headers, ...next } = spec.next();
          return { ...request, ...next, ...(headers ? { headers: { ...headers } } : {}) };
        },
      },
    ],
  });
}

/** Warm-up seconds before a measurement of `seconds`: 1 for short runs, else 2. */
export const warmUpSeconds = (seconds: number) => (seconds <= 2 ? 1 : 2);

/** Warms the server up, then measures it under load for `spec.seconds`. */
export async function measure(spec: LoadSpec): Promise<LoadResult> {
  await fire(spec, warmUpSeconds(spec.seconds));
  const watches = spec.watches ?? [];
  const watched = await Promise.all(watches.map((watch) => watch.start()));
  const rss = sampleRss(spec.pid);
  const cpu = sampleCpu(spec.pid);
  const switches = sampleContextSwitches(spec.pid);
  const machineBefore = machineTicks();
  const startedUs = monotonicUs();
  const result = await fire(spec, spec.seconds);
  const window = [startedUs, monotonicUs()] as const;
  const cpuMs = cpu.stop();
  const switched = switches.stop();
  const machineAfter = machineTicks();
  const machineTotal = machineAfter.total - machineBefore.total;
  const watchedMs = watched.map((sample) => sample.stop());
  const maxRssBytes = rss.stop();
  const perRequest = (ms: number) =>
    result.requests.total > 0 ? Math.round((ms / result.requests.total) * 1000) / 1000 : 0;
  return {
    requestsPerSecond: result.requests.average,
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    requests: result.requests.total,
    non2xx: result.non2xx,
    timeouts: result.timeouts,
    socketErrors: result.errors - result.timeouts,
    bytesPerResponse: result.requests.total > 0 ? Math.round(result.throughput.total / result.requests.total) : 0,
    maxRssBytes,
    cpuMsPerRequest: perRequest(cpuMs),
    contextSwitchesPerRequest: perRequest(switched),
    ...(watches.length > 0
      ? {
          watchedPerRequest: Object.fromEntries(watches.map((watch, i) => [watch.name, perRequest(watchedMs[i]!)])),
        }
      : {}),
    ...(machineTotal > 0
      ? {
          machineBusyCores:
            Math.round(((machineAfter.busy - machineBefore.busy) / machineTotal) * cpus().length * 100) / 100,
        }
      : {}),
    loadAverage: loadavg()[0]!,
    windowsUs: [window],
  };
}
