/**
 * One measurement: a scenario on a target. The target must first answer a few requests of every
 * operation in the scenario correctly; a scenario that fails this check is reported as failed with
 * the answer, never as numbers of error responses.
 */
import { measure, post, type LoadResult } from './load.js';
import type { TargetId } from './options.js';
import { schedule, type Operation, type Scenario } from './scenarios.js';
import type { Target } from './targets.js';

/** Requests per operation checked before a measurement. */
const CHECKED_REQUESTS = 10;
/** Characters of a wrong answer shown. */
const SHOWN_ANSWER = 400;

export interface MeasurementSettings {
  readonly seconds: number;
  readonly connections: number;
  /** Requests per second in all, for runs at `connections` (a scenario at its own connections is not paced). */
  readonly rate?: number;
}

interface MeasurementBase {
  readonly scenario: string;
  readonly target: TargetId;
  readonly label: string;
}

export type Measurement =
  | (MeasurementBase & {
      readonly ok: true;
      readonly result: LoadResult;
      /** Median body size of the checked answers, per operation. */
      readonly answerBytes: Readonly<Record<string, number>>;
    })
  | (MeasurementBase & { readonly ok: false; readonly reason: string });

interface Route {
  readonly operation: Operation;
  readonly path: string;
}

/** Where each operation of the scenario goes on the target, or why it cannot be measured. */
function routes(target: Target, scenario: Scenario): Map<string, Route> | string {
  const found = new Map<string, Route>();
  for (const { operation: name } of scenario.parts) {
    const operation = target.operations.get(name);
    if (!operation) return `no requests for ${name}`;
    if (operation.unavailable) return `${name}: ${operation.unavailable}`;
    const path = target.path(operation);
    if (typeof path !== 'string') return path.unavailable;
    found.set(name, { operation, path });
  }
  return found;
}

/** A request body as shown in a failure, its credentials left out (JSON, or a SOAP envelope). */
function shown(body: string): string {
  if (body.startsWith('<'))
    return body.replace(/<Credentials>.*<\/Credentials>/s, '<Credentials>(left out)</Credentials>');
  return JSON.stringify({ ...(JSON.parse(body) as object), Credentials: '(left out)' });
}

/** The middle value (the upper of the two middle ones), 0 of none. */
export const median = (values: readonly number[]) =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0;

/** Sends a few requests of every operation; returns the median answer sizes, or what went wrong. */
async function check(target: Target, routed: ReadonlyMap<string, Route>): Promise<Record<string, number> | string> {
  const sizes: Record<string, number> = {};
  for (const [name, { operation, path }] of routed) {
    const bytes: number[] = [];
    for (let n = 0; n < CHECKED_REQUESTS; n += 1) {
      const request = operation.next();
      const headers = { ...target.headers, ...operation.headers, ...request.headers };
      // Each on a new connection, so that every worker of a cluster has answered before the warm-up.
      const answer = await post(target.server.url, path, headers, request.body, { fresh: true }).catch(
        (error: Error) => `${error.message} (${String(error.cause ?? 'no cause')})`,
      );
      if (typeof answer === 'string') {
        return `${name}: no answer: ${answer}\n  last output of ${target.server.name}:\n${target.server.tail()}`;
      }
      const wrong = await target.judge(operation, request, answer);
      if (wrong) {
        return `${name}: ${wrong}\n  request: ${shown(request.body)}\n  answer:  ${answer.text.slice(0, SHOWN_ANSWER)}`;
      }
      bytes.push(answer.bytes);
    }
    sizes[name] = median(bytes);
  }
  return sizes;
}

/** Checks the target's answers to the scenario, then warms it up and measures it. */
export async function measureScenario(
  target: Target,
  scenario: Scenario,
  settings: MeasurementSettings,
): Promise<Measurement> {
  const base = { scenario: scenario.name, target: target.id, label: target.label };
  const routed = routes(target, scenario);
  if (typeof routed === 'string') return { ...base, ok: false, reason: routed };
  const answerBytes = await check(target, routed);
  if (typeof answerBytes === 'string') return { ...base, ok: false, reason: answerBytes };
  // An operation with headers of its own sends them over the target's on every request; a request with
  // headers of its own, over both.
  const order = schedule(scenario).map((name) => {
    const route = routed.get(name)!;
    const headers = route.operation.headers ? { ...target.headers, ...route.operation.headers } : undefined;
    return { ...route, headers };
  });
  let position = 0;
  const result = await measure({
    url: target.server.url,
    headers: target.headers,
    connections: scenario.connections ?? settings.connections,
    seconds: settings.seconds,
    ...(settings.rate !== undefined && scenario.connections === undefined ? { rate: settings.rate } : {}),
    pid: target.server.pid,
    ...(target.watches ? { watches: target.watches } : {}),
    next: () => {
      const { operation, path, headers } = order[position++ % order.length]!;
      const request = operation.next();
      const sent = request.headers ? { ...(headers ?? target.headers), ...request.headers } : headers;
      return { path, body: request.body, ...(sent ? { headers: sent } : {}) };
    },
  });
  return { ...base, ok: true, result, answerBytes };
}

/**
 * Two halves of one measurement, taken apart, as one: their requests, errors and CPU together, their
 * rates and the machine's busy cores averaged, the higher p50, p99, RSS and load. A failed half is the
 * measurement.
 */
export function combined(first: Measurement, second: Measurement): Measurement {
  if (!first.ok) return first;
  if (!second.ok) return second;
  const [a, b] = [first.result, second.result];
  const requests = a.requests + b.requests;
  const weighted = (x: number, y: number) => (requests > 0 ? (x * a.requests + y * b.requests) / requests : 0);
  return {
    ...first,
    result: {
      requestsPerSecond: (a.requestsPerSecond + b.requestsPerSecond) / 2,
      p50Ms: Math.max(a.p50Ms, b.p50Ms),
      p99Ms: Math.max(a.p99Ms, b.p99Ms),
      requests,
      non2xx: a.non2xx + b.non2xx,
      timeouts: a.timeouts + b.timeouts,
      socketErrors: a.socketErrors + b.socketErrors,
      bytesPerResponse: Math.round(weighted(a.bytesPerResponse, b.bytesPerResponse)),
      maxRssBytes: Math.max(a.maxRssBytes, b.maxRssBytes),
      cpuMsPerRequest: Math.round(weighted(a.cpuMsPerRequest, b.cpuMsPerRequest) * 1000) / 1000,
      ...(a.machineBusyCores !== undefined && b.machineBusyCores !== undefined
        ? { machineBusyCores: (a.machineBusyCores + b.machineBusyCores) / 2 }
        : {}),
      ...(a.loadAverage !== undefined && b.loadAverage !== undefined
        ? { loadAverage: Math.max(a.loadAverage, b.loadAverage) }
        : {}),
      windowsUs: [...(a.windowsUs ?? []), ...(b.windowsUs ?? [])],
      ...(a.contextSwitchesPerRequest !== undefined && b.contextSwitchesPerRequest !== undefined
        ? {
            contextSwitchesPerRequest:
              Math.round(weighted(a.contextSwitchesPerRequest, b.contextSwitchesPerRequest) * 1000) / 1000,
          }
        : {}),
      ...(a.watchedPerRequest && b.watchedPerRequest
        ? {
            watchedPerRequest: Object.fromEntries(
              Object.entries(a.watchedPerRequest).map(([name, count]) => [
                name,
                Math.round(weighted(count, b.watchedPerRequest?.[name] ?? 0) * 1000) / 1000,
              ]),
            ),
          }
        : {}),
    },
  };
}
