/**
 * The gateway's cost over several bench runs (issue 33, "The gateway's cost, measured"): each number of
 * `gatewayCost` as the median across the results files given, the gateway-to-forwarder ratios as the median of
 * each run's own ratio (both fronts of a run met the same machine), the verdicts against the targets, and the
 * machine's load in each run. Prints Markdown, as docs/performance.md ("The gateway's cost") shows it.
 *
 * Run: node --import tsx bench/gateway-cost.ts bench/results/<run 1>.json bench/results/<run 2>.json …
 */
import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import type { Measurement } from './measure.js';
import {
  auditTrailOff,
  CORE_CPU_PERCENT,
  coreCpuWithin,
  cpuRatioLimit,
  GATEWAY_COST_LIMITS,
  gatewayCost,
  type GatewayCostRow,
} from './report.js';
import { SOAP_TWINS } from './scenarios.js';

interface RunFile {
  readonly file: string;
  readonly settings?: {
    readonly rate?: number;
    readonly duration?: number;
    readonly connections?: number;
    /** The COREGATE_* settings the run passed on (`COREGATE_AUDIT: 'off'`). */
    readonly passedSettings?: Readonly<Record<string, string>>;
  };
  readonly loadAverage?: { readonly atStart: readonly number[]; readonly atEnd: readonly number[] };
  readonly measurements: readonly Measurement[];
}

const median = (values: readonly number[]): number | undefined => {
  if (values.length === 0) return undefined;
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
};

const shown = (value: number | undefined, digits = 0) => (value === undefined ? '–' : value.toFixed(digits));

type Numbers = Exclude<keyof GatewayCostRow, 'operation' | 'target'>;

/** The median of one number of one row across the runs. */
function medianOf(runs: readonly GatewayCostRow[][], operation: string, target: string, key: Numbers) {
  return median(
    runs.flatMap((rows) => {
      const value = rows.find((row) => row.operation === operation && row.target === target)?.[key];
      return value === undefined ? [] : [value];
    }),
  );
}

/** The median across runs of a run's own gateway-to-forwarder quotient or difference. */
function pairedMedian(
  runs: readonly GatewayCostRow[][],
  operation: string,
  pair: (gateway: GatewayCostRow, forwarder: GatewayCostRow) => number | undefined,
) {
  return median(
    runs.flatMap((rows) => {
      const [gateway, forwarder] = (['gateway', 'forwarder'] as const).map((target) =>
        rows.find((row) => row.operation === operation && row.target === target),
      );
      const value = gateway && forwarder ? pair(gateway, forwarder) : undefined;
      return value === undefined ? [] : [value];
    }),
  );
}

const auditOff = (run: RunFile) => auditTrailOff(run.settings?.passedSettings?.COREGATE_AUDIT);

/**
 * The Markdown of the runs' medians: a section per audit setting and pace (as fast as each target answers,
 * or paced), each judged against GATEWAY_COST_LIMITS (the lookup's CPU target is tighter with the audit off).
 */
export function gatewayCostReport(files: readonly RunFile[]): string {
  const groups = new Map<string, RunFile[]>();
  for (const run of files) {
    const key = `${auditOff(run) ? 'off' : 'on'}|${run.settings?.rate ?? ''}`;
    groups.set(key, [...(groups.get(key) ?? []), run]);
  }
  return [...groups.entries()]
    .sort(([a], [b]) => b.localeCompare(a))
    .map(([, runs]) => {
      const rate = runs[0]!.settings?.rate;
      const pace =
        rate === undefined ? 'as fast as each target answers' : `paced at ${rate} requests/s (one connection unpaced)`;
      const heading = `### Audit trail ${auditOff(runs[0]!) ? 'off' : 'on'}, ${pace}`;
      return `${heading}\n\n${paceReport(runs)}`;
    })
    .join('\n\n');
}

/** The medians of runs with the same settings. */
function paceReport(files: readonly RunFile[]): string {
  const rate = files[0]?.settings?.rate;
  const off = files[0] !== undefined && auditOff(files[0]);
  const runs = files.map((run) => gatewayCost(run.measurements));
  const busy = (run: RunFile) =>
    median(
      run.measurements.flatMap((m) =>
        m.ok && m.result.machineBusyCores !== undefined && ['gateway', 'forwarder'].includes(m.target)
          ? [m.result.machineBusyCores]
          : [],
      ),
    );
  const lines = [
    `Medians of ${files.length} run(s).`,
    '',
    '| operation | target | CPU µs/req | core CPU µs/req | gateway DB µs/req | wake-ups/req | core wake-ups/req | req/s | p50 ms | p99 ms | ms/req at 1 conn | added ms at 1 conn |',
    '| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
  ];
  for (const operation of SOAP_TWINS) {
    for (const target of ['gateway', 'forwarder', 'core'] as const) {
      const of = (key: Numbers) => medianOf(runs, operation, target, key);
      if (of('cpuUs') === undefined) continue;
      // A paced run the target could not keep up with measured it saturated.
      const saturated = rate !== undefined && (of('requestsPerSecond') ?? 0) < rate * 0.95 ? ' (saturated)' : '';
      lines.push(
        `| ${operation} | ${target} | ${shown(of('cpuUs'))} | ${shown(of('coreCpuUs'))} | ${shown(of('databaseCpuUs'))} | ` +
          `${shown(of('wakeups'), 1)} | ${shown(of('coreWakeups'), 1)} | ` +
          `${shown(of('requestsPerSecond'))}${saturated} | ${shown(of('p50Ms'))} | ${shown(of('p99Ms'))} | ` +
          `${shown(of('quietMs'), 2)} | ${shown(of('addedMs'), 2)} |`,
      );
    }
  }
  lines.push(
    '',
    '| operation | gateway CPU / forwarder CPU | target | p99 gateway / forwarder | target | core CPU behind gateway / forwarder | target | gateway adds at 1 conn | target |',
  );
  lines.push('| --- | ---: | --- | ---: | --- | ---: | --- | ---: | --- |');
  const met = (pass: boolean) => (pass ? 'met' : 'not met');
  for (const operation of SOAP_TWINS) {
    const ratio = pairedMedian(runs, operation, (g, f) => g.cpuUs / f.cpuUs);
    const p99 = pairedMedian(runs, operation, (g, f) => g.p99Ms / f.p99Ms);
    const core = pairedMedian(runs, operation, (g, f) =>
      g.coreCpuUs === undefined || f.coreCpuUs === undefined ? undefined : g.coreCpuUs / f.coreCpuUs,
    );
    const added = medianOf(runs, operation, 'gateway', 'addedMs');
    if (ratio === undefined) continue;
    const cpuTarget = cpuRatioLimit(operation, off);
    const { p99Ratio, addedLookupMs } = GATEWAY_COST_LIMITS;
    const latencyTarget =
      operation === 'findBySSN' ? `≤ ${addedLookupMs} ms: ${met(added !== undefined && added <= addedLookupMs)}` : '–';
    lines.push(
      `| ${operation} | ${ratio.toFixed(2)}× | ${cpuTarget === undefined ? '–' : `≤ ${cpuTarget}×: ${met(ratio <= cpuTarget)}`} | ` +
        `${shown(p99, 2)}× | ≤ ${p99Ratio}×: ${met(p99 !== undefined && p99 <= p99Ratio)} | ` +
        `${shown(core, 2)}× | within ${CORE_CPU_PERCENT}%: ${met(core !== undefined && coreCpuWithin(core))} | ` +
        `${shown(added, 2)} ms | ${latencyTarget} |`,
    );
  }
  lines.push('', '| run | load average at start (1/5/15 min) | at end | machine busy cores while the fronts ran |');
  lines.push('| --- | --- | --- | ---: |');
  for (const run of files) {
    const load = (values: readonly number[] | undefined) => values?.map((v) => v.toFixed(1)).join(' / ') ?? '–';
    lines.push(
      `| ${basename(run.file)} | ${load(run.loadAverage?.atStart)} | ${load(run.loadAverage?.atEnd)} | ${shown(busy(run), 2)} |`,
    );
  }
  return lines.join('\n');
}

const files = process.argv.slice(2);
if (files.length === 0) {
  console.error('Usage: node --import tsx bench/gateway-cost.ts bench/results/<run>.json …');
  process.exitCode = 2;
} else {
  console.log(
    gatewayCostReport(
      files.map((file) => ({ file, ...(JSON.parse(readFileSync(file, 'utf8')) as Omit<RunFile, 'file'>) })),
    ),
  );
}
