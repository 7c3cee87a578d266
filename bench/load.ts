/**
 * Load generation: one-off requests for checks, and autocannon runs (warm-up, then a measurement with
 * the server's memory sampled) that return a typed result.
 */
import { request as httpRequest } from 'node:http';
import autocannon from 'autocannon';
import { sampleCpu, sampleRss } from './servers.js';

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
  /** The server process whose memory (with its children's) is sampled during the run. */
  readonly pid: number;
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
}

function fire(spec: LoadSpec, seconds: number): Promise<autocannon.Result> {
  return autocannon({
    url: spec.url,
    connections: spec.connections,
    duration: seconds,
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
  const rss = sampleRss(spec.pid);
  const cpu = sampleCpu(spec.pid);
  const result = await fire(spec, spec.seconds);
  const cpuMs = cpu.stop();
  const maxRssBytes = rss.stop();
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
    cpuMsPerRequest: result.requests.total > 0 ? Math.round((cpuMs / result.requests.total) * 1000) / 1000 : 0,
  };
}
