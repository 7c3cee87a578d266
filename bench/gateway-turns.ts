/**
 * This build's gateway against another build's and against the hand-written forwarder, one process each in
 * front of one core process on the PostgreSQL dataset, measured in turns: each round measures every front
 * once, in an order that moves by one each round, so each meets the same drift and the same core. What
 * `bench/gateway-cost.ts` judges over the whole bench, this weighs one change by: build the change here, the
 * code before it in another checkout (`npm run build` there), and name that checkout.
 *
 *   node --import tsx bench/gateway-turns.ts --baseline <checkout> [--rounds 5] [--seconds 6] [--connections 64]
 *     [--scenario findBySSN] [--rate 2000] [--accounts 20000]
 *
 * With `--together`, every front is measured at the same time, each sent `--rate` requests a second by its own
 * load: all meet the same moment of the machine, which weighs two builds more closely than turns do (the
 * core's CPU is then that of all fronts' requests, not one's). With `--rate`, every front is sent that many requests a second (below what each can answer, the machine is
 * not saturated and a front's CPU per request is less moved by what else runs). Prints each front's CPU per request (the process's user and system time), the core's CPU per request behind
 * it, and the p99, as medians of the rounds, with each gateway's CPU against the forwarder's of the same round.
 */
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { summarizeProfiles, writeWindows, type ProfileSummary } from './cpu-profile.js';
import { measureScenario } from './measure.js';
import { scenarioNamed, withOneProcessEach } from './one-process-each.js';
import { WATCHED, type Target } from './targets.js';

const { values } = parseArgs({
  options: {
    baseline: { type: 'string' },
    rounds: { type: 'string', default: '5' },
    seconds: { type: 'string', default: '6' },
    connections: { type: 'string', default: '64' },
    scenario: { type: 'string', default: 'findBySSN' },
    rate: { type: 'string' },
    together: { type: 'boolean', default: false },
    profile: { type: 'string' },
    accounts: { type: 'string', default: '20000' },
    'database-url': { type: 'string', default: 'postgres://postgres@127.0.0.1:5432/test' },
  },
});

/** One front's figures in one round. */
interface Turn {
  readonly cpuUs: number;
  readonly coreCpuUs: number;
  readonly p99Ms: number;
  readonly perSecond: number;
  readonly requests: number;
}

const median = (numbers: readonly number[]) => {
  const sorted = [...numbers].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
};

/** The monotonic clock in µs, as V8's CPU profiles take it. */
const monotonicUs = () => Number(process.hrtime.bigint() / 1000n);

async function turn(
  front: Target,
  scenarioName: string,
  seconds: number,
  connections: number,
  windows?: [number, number][],
): Promise<Turn> {
  const rate = values.rate === undefined ? {} : { rate: Number(values.rate) };
  // With profiles, each measured part's span of the clock: the summary keeps to the samples within them.
  const windowWatch = {
    name: 'profiled window',
    async start() {
      const from = monotonicUs();
      return { stop: () => (windows!.push([from, monotonicUs()]), 0) };
    },
  };
  const watched = windows ? { ...front, watches: [...(front.watches ?? []), windowWatch] } : front;
  const measurement = await measureScenario(watched, scenarioNamed(scenarioName), { seconds, connections, ...rate });
  if (!measurement.ok) throw new Error(`${front.label}: ${measurement.reason}`);
  const { result } = measurement;
  return {
    cpuUs: result.cpuMsPerRequest * 1000,
    coreCpuUs: (result.watchedPerRequest?.[WATCHED.coreCpuMs] ?? Number.NaN) * 1000,
    p99Ms: result.p99Ms,
    perSecond: result.requestsPerSecond,
    requests: result.requests,
  };
}

async function main(): Promise<void> {
  const rounds = Number(values.rounds);
  const seconds = Number(values.seconds);
  const connections = Number(values.connections);
  const baselineEntry = values.baseline ? join(resolve(values.baseline), 'dist', 'coregate.js') : undefined;
  if (baselineEntry && !existsSync(baselineEntry))
    throw new Error(`${baselineEntry} does not exist: run npm run build in ${values.baseline}`);
  const options = {
    databaseUrl: values['database-url']!,
    accounts: Number(values.accounts),
    ...(baselineEntry ? { baselineEntry } : {}),
    ...(values.profile ? { profileDir: resolve(values.profile) } : {}),
  };
  /** Per profiled front (its profile directory's name): the measured spans, and the requests in them. */
  const profiled = new Map<string, { windows: [number, number][]; requests: number }>();
  await withOneProcessEach(options, async ({ gateway, forwarder, baseline }) => {
    const fronts = [gateway, ...(baseline ? [baseline] : []), forwarder];
    const profileName = (front: Target) => (front === baseline ? 'baseline' : front.id);
    // Each front once before the rounds: the JIT's warm-up and the core's behind it.
    for (const front of fronts) await turn(front, values.scenario!, Math.min(3, seconds), connections);
    const turns = new Map<Target, Turn[]>(fronts.map((front) => [front, []]));
    for (let round = 0; round < rounds; round++) {
      const order = fronts.map((_, i) => fronts[(i + round) % fronts.length]!);
      const measure = async (front: Target) => {
        if (!values.profile) return turn(front, values.scenario!, seconds, connections);
        const seen = profiled.get(profileName(front)) ?? { windows: [], requests: 0 };
        profiled.set(profileName(front), seen);
        const measured = await turn(front, values.scenario!, seconds, connections, seen.windows);
        seen.requests += measured.requests;
        return measured;
      };
      const measured = values.together
        ? await Promise.all(order.map(measure))
        : await order.reduce<Promise<Turn[]>>(
            async (done, front) => [...(await done), await measure(front)],
            Promise.resolve([]),
          );
      order.forEach((front, i) => {
        const { cpuUs, coreCpuUs, p99Ms, perSecond } = measured[i]!;
        turns.get(front)!.push(measured[i]!);
        console.log(
          `round ${round + 1}, ${front.label}: ${cpuUs.toFixed(0)} µs a request, core ${coreCpuUs.toFixed(0)} µs, p99 ${p99Ms} ms, ${perSecond.toFixed(0)}/s`,
        );
      });
    }
    const forwarderTurns = turns.get(forwarder)!;
    console.log(`\n${values.scenario} at ${connections} connections, one process each, medians of ${rounds} rounds:\n`);
    console.log(
      '| front | CPU µs a request | against the forwarder (each round) | core CPU µs a request | p99 ms | req/s |',
    );
    console.log('| --- | ---: | --- | ---: | ---: | ---: |');
    for (const front of fronts) {
      const own = turns.get(front)!;
      const ratios = own.map((t, i) => t.cpuUs / forwarderTurns[i]!.cpuUs);
      const against =
        front === forwarder
          ? '–'
          : `${median(ratios).toFixed(2)}× (${ratios.map((ratio) => ratio.toFixed(2)).join(', ')})`;
      console.log(
        `| ${front.label} | ${median(own.map((t) => t.cpuUs)).toFixed(0)} | ${against} | ${median(own.map((t) => t.coreCpuUs)).toFixed(0)} | ${median(own.map((t) => t.p99Ms))} | ${median(own.map((t) => t.perSecond)).toFixed(0)} |`,
      );
    }
  });
  if (values.profile) console.log(`\n${profileTable(resolve(values.profile), profiled)}`);
}

/**
 * The main threads' busy time a request, each front's, by module: the self time of each module's own functions,
 * and the time charged to the innermost repository module on the stack with what it called (cpu-profile.ts).
 */
function profileTable(directory: string, profiled: Map<string, { windows: [number, number][]; requests: number }>) {
  const names = [...profiled.keys()];
  const summaries = names.map((name) => {
    const { windows, requests } = profiled.get(name)!;
    // Noted beside the profiles, for bench/cpu-profile.ts to summarize them again.
    writeWindows(join(directory, name), { [values.scenario!]: windows });
    return { summary: summarizeProfiles(join(directory, name), windows), requests };
  });
  const view = (title: string, of: (summary: ProfileSummary) => ProfileSummary['modules']) => {
    const perRequest = summaries.map(({ summary, requests }) => {
      const front = new Map<string, number>();
      // The baseline's sources are another checkout's: named as this one's, to sit on the same rows.
      for (const { name, us } of of(summary)) {
        const module = name.replace(/^(\.\.\/)+.*?\/(src|bench)\//, '$2/');
        front.set(module, (front.get(module) ?? 0) + us / requests);
      }
      return front;
    });
    const modules = [...new Set(perRequest.flatMap((front) => [...front.keys()]))]
      .map((module) => ({ module, most: Math.max(...perRequest.map((front) => front.get(module) ?? 0)) }))
      .filter(({ most }) => most >= 0.5)
      .sort((a, b) => b.most - a.most);
    return [
      `${title} (µs a request, ≥ 0.5 µs in a front):`,
      '',
      `| module | ${names.join(' | ')} |`,
      `| --- | ${names.map(() => '---:').join(' | ')} |`,
      `| **all** | ${summaries.map(({ summary, requests }) => `**${(summary.busyUs / requests).toFixed(1)}**`).join(' | ')} |`,
      ...modules.map(
        ({ module }) => `| ${module} | ${perRequest.map((front) => (front.get(module) ?? 0).toFixed(1)).join(' | ')} |`,
      ),
    ].join('\n');
  };
  return [
    view('Main-thread self time by module', (summary) => summary.modules),
    view(
      'Main-thread time charged to the innermost repository module, with what it called',
      (summary) => summary.responsibleModules,
    ),
  ].join('\n\n');
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) await main();
