/**
 * The benchmark's output: a table of every measurement with its ratios to the ceiling and to Prism,
 * the scale checks with PASS/FAIL, and the JSON file of everything under bench/results.
 */
import { cpus, platform, release, totalmem } from 'node:os';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadConfig } from '../src/config.js';
import type { Measurement } from './measure.js';
import type { ScaleCheck } from './scale.js';
import { SCALE_LIMIT } from './scale.js';
import { SOAP_PREFIX, SOAP_TWINS, unloaded } from './scenarios.js';
import { BENCH_DIR } from './servers.js';
import { WATCHED } from './targets.js';

const MB = 1024 * 1024;

export interface MachineFacts {
  readonly cpus: number;
  readonly cpuModel: string;
  readonly totalMemoryMB: number;
  readonly platform: string;
  readonly node: string;
  readonly postgres: string;
}

/** Facts about this machine, with the PostgreSQL server's version. */
export function machineFacts(postgres: string): MachineFacts {
  return {
    cpus: cpus().length,
    cpuModel: cpus()[0]?.model ?? 'unknown',
    totalMemoryMB: Math.round(totalmem() / MB),
    platform: `${platform()} ${release()}`,
    node: process.version,
    postgres,
  };
}

/** The ratio of a coregate measurement's req/s to another target's in the same scenario. */
function ratio(measurements: readonly Measurement[], row: Measurement, other: Measurement['target']): string {
  if (!row.ok || (row.target !== 'pg' && row.target !== 'pglite')) return '';
  const reference = measurements.find((m) => m.scenario === row.scenario && m.target === other);
  if (!reference?.ok || reference.result.requestsPerSecond === 0) return '';
  return `${(row.result.requestsPerSecond / reference.result.requestsPerSecond).toFixed(2)}×`;
}

/** A SOAP scenario's req/s against its JSON twin's on the same target (`soap:findBySSN` vs `findBySSN`). */
function soapRatio(measurements: readonly Measurement[], row: Measurement): string {
  if (!row.ok || !row.scenario.startsWith(SOAP_PREFIX)) return '';
  const twin = measurements.find(
    (m) => m.scenario === row.scenario.slice(SOAP_PREFIX.length) && m.target === row.target,
  );
  if (!twin?.ok || twin.result.requestsPerSecond === 0) return '';
  return `${(row.result.requestsPerSecond / twin.result.requestsPerSecond).toFixed(2)}×`;
}

const HEADER = [
  'scenario',
  'target',
  'req/s',
  'p50 ms',
  'p99 ms',
  'errors n/t/s',
  'RSS MB',
  'CPU ms/req',
  'B/resp',
  '/ceiling',
  '/Prism',
  '/hand-written',
  'SOAP/JSON',
];
/** Columns aligned left; the others are numbers, aligned right. */
const LEFT = new Set([0, 1]);

function cells(measurements: readonly Measurement[], m: Measurement): string[] {
  if (!m.ok) return [m.scenario, m.label, `FAILED: ${m.reason.split('\n')[0] ?? ''}`];
  const { result } = m;
  return [
    m.scenario,
    m.label,
    result.requestsPerSecond.toFixed(0),
    result.p50Ms.toFixed(1),
    result.p99Ms.toFixed(1),
    `${result.non2xx}/${result.timeouts}/${result.socketErrors}`,
    (result.maxRssBytes / MB).toFixed(0),
    result.cpuMsPerRequest.toFixed(2),
    String(result.bytesPerResponse),
    ratio(measurements, m, 'ceiling'),
    ratio(measurements, m, 'prism'),
    ratio(measurements, m, m.target === 'pg' ? 'handwritten-pg' : 'handwritten-pglite'),
    soapRatio(measurements, m),
  ];
}

/** A plain-text table; a failed row's message runs across the number columns. */
function table(rows: readonly string[][]): string {
  const full = rows.filter((row) => row.length === HEADER.length);
  const widths = HEADER.map((_, column) => Math.max(...[HEADER, ...full].map((row) => (row[column] ?? '').length)));
  const line = (row: readonly string[]) =>
    row
      .map((cell, column) => (LEFT.has(column) ? cell.padEnd(widths[column] ?? 0) : cell.padStart(widths[column] ?? 0)))
      .join('  ');
  const failed = (row: readonly string[]) => `${line(row.slice(0, 2))}  ${row[2] ?? ''}`;
  return [HEADER, ...rows].map((row) => (row.length === HEADER.length ? line(row) : failed(row)).trimEnd()).join('\n');
}

/** The results table: errors are non-2xx / timeouts / socket errors; ratios compare req/s. */
export function resultsTable(measurements: readonly Measurement[]): string {
  return table(measurements.map((m) => cells(measurements, m)));
}

/** The scale checks, one line each, with PASS/FAIL against the limit. */
export function scaleCheckLines(checks: readonly ScaleCheck[]): string {
  return checks
    .map((check) => {
      const p99s = [check.subject, check.baseline].map((m) => (m.ok ? `${m.result.p99Ms.toFixed(1)} ms` : 'failed'));
      const ratioText = check.ratio === undefined ? 'n/a' : check.ratio.toFixed(2);
      const verdictLine = `${check.pass ? 'PASS' : 'FAIL'}  ${check.name}: ${check.description} = ${p99s[0]} / ${p99s[1]} = ${ratioText} (limit ${SCALE_LIMIT})`;
      const details = [
        ...[check.baseline, check.subject].flatMap((m) => (m.ok ? [] : `${m.scenario}: ${m.reason}`.split('\n'))),
        ...(check.note ? [`note: ${check.note}`] : []),
      ];
      return [verdictLine, ...details.map((line) => `      ${line}`)].join('\n');
    })
    .join('\n');
}

/** The gateway's targets: req/s against the core's own, p50 added, no socket errors. */
export const GATEWAY_LIMITS = { ratio: 0.8, addedP50Ms: 1 } as const;

/**
 * What the gateway adds, per SOAP twin: its req/s against its core's own (the core measured alone on the
 * envelopes the gateway sends), its p50 minus the core's, its socket errors and its own CPU per request,
 * each with PASS/FAIL against the targets. Empty when the gateway was not measured.
 */
export function gatewayLines(measurements: readonly Measurement[]): string {
  const lines = SOAP_TWINS.flatMap((name) => {
    const gateway = measurements.find((m) => m.scenario === name && m.target === 'gateway');
    const core = measurements.find((m) => m.scenario === `${SOAP_PREFIX}${name}` && m.target === 'core');
    if (!gateway) return [];
    if (!gateway?.ok || !core?.ok)
      return [
        `FAIL  gateway ${name}: ${[gateway, core].find((m) => m && !m.ok) ? 'a measurement failed' : 'not measured'}`,
      ];
    const g = gateway.result;
    const c = core.result;
    const quiet = [gateway, core].map((m) =>
      measurements.find((other) => other.scenario === unloaded(m.scenario) && other.target === m.target),
    );
    // One connection, one request at a time: each takes 1/(req/s), which autocannon's whole-millisecond
    // latencies cannot show.
    const [quietGateway, quietCore] = quiet.map((m) =>
      m?.ok && m.result.requestsPerSecond > 0 ? 1000 / m.result.requestsPerSecond : undefined,
    );
    const ratio = c.requestsPerSecond > 0 ? g.requestsPerSecond / c.requestsPerSecond : 0;
    const added = g.p50Ms - c.p50Ms;
    const verdict = (pass: boolean) => (pass ? 'PASS' : 'FAIL');
    return [
      `${verdict(ratio >= GATEWAY_LIMITS.ratio)}  gateway ${name}: ${g.requestsPerSecond.toFixed(0)} req/s = ${ratio.toFixed(2)}× its core's ${c.requestsPerSecond.toFixed(0)} (limit ${GATEWAY_LIMITS.ratio}×)`,
      `${verdict(added <= GATEWAY_LIMITS.addedP50Ms)}  gateway ${name}: p50 ${g.p50Ms.toFixed(1)} ms - core's ${c.p50Ms.toFixed(1)} ms = ${added.toFixed(1)} ms added (limit ${GATEWAY_LIMITS.addedP50Ms} ms)`,
      ...(quietGateway === undefined || quietCore === undefined
        ? []
        : [
            `      gateway ${name} at 1 connection: ${quietGateway.toFixed(2)} ms a request - core's ${quietCore.toFixed(2)} ms = ${(quietGateway - quietCore).toFixed(2)} ms added`,
          ]),
      `${verdict(g.socketErrors === 0)}  gateway ${name}: ${g.socketErrors} socket errors, ${g.non2xx} non-2xx; gateway CPU ${g.cpuMsPerRequest.toFixed(2)} ms/request, core CPU ${c.cpuMsPerRequest.toFixed(2)} ms/request`,
    ];
  });
  return lines.join('\n');
}

/**
 * The targets for the gateway's cost against the hand-written forwarder (issue 40): CPU per request by
 * operation (the lookup's tighter with the audit trail off; the keyed update pays two durable commits for
 * exactly-once), what the lookup adds at one connection, the p99 at the run's connections, and the core's CPU
 * per request behind the gateway against behind the forwarder.
 */
export const GATEWAY_COST_LIMITS = {
  cpuRatio: { findBySSN: 1.3, 'updateShareByID/persistent': 2.5, getCollateralSelectFields: 1.0 } as Readonly<
    Record<string, number>
  >,
  cpuRatioAuditOff: { findBySSN: 1.15 } as Readonly<Record<string, number>>,
  addedLookupMs: 0.3,
  p99Ratio: 1.5,
  coreCpuRatio: 1.1,
} as const;

/** Whether `COREGATE_AUDIT` (as the bench passes it to coregate) turns the audit trail off, read as coregate reads it. */
export function auditTrailOff(value: string | undefined): boolean {
  return !loadConfig({ COREGATE_AUDIT: value }).auditEnabled;
}

/** Whether the core's CPU behind the gateway, over behind the forwarder, is within GATEWAY_COST_LIMITS's bound either way. */
export function coreCpuWithin(ratio: number): boolean {
  return ratio <= GATEWAY_COST_LIMITS.coreCpuRatio && ratio >= 1 / GATEWAY_COST_LIMITS.coreCpuRatio;
}

/** The core CPU bound as a percentage, for the reports. */
export const CORE_CPU_PERCENT = Math.round((GATEWAY_COST_LIMITS.coreCpuRatio - 1) * 100);

/** The CPU ratio target of `operation`, with the audit trail on or off (off: the lookup's own, else as on). */
export function cpuRatioLimit(operation: string, auditOff: boolean): number | undefined {
  return (
    (auditOff ? GATEWAY_COST_LIMITS.cpuRatioAuditOff[operation] : undefined) ?? GATEWAY_COST_LIMITS.cpuRatio[operation]
  );
}

/** The lookup whose added latency has a target. */
const LOOKUP = 'findBySSN';

/** What one front (or the core alone) costs an operation in one run; CPU in µs per request. */
export interface GatewayCostRow {
  readonly operation: string;
  readonly target: 'gateway' | 'forwarder' | 'core';
  /** The target's own processes, all of them. */
  readonly cpuUs: number;
  /** The core's, during the front's run (the core alone: its own). */
  readonly coreCpuUs?: number;
  /** The PostgreSQL backends of the gateway's own database, during its run. */
  readonly databaseCpuUs?: number;
  /** Context switches of the target's main threads per request (its event loops' wake-ups). */
  readonly wakeups?: number;
  /** The core's, during the front's run (the core alone: its own). */
  readonly coreWakeups?: number;
  readonly requestsPerSecond: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  /** Time of one request at one connection: 1 / req/s, which autocannon's whole milliseconds cannot show. */
  readonly quietMs?: number;
  /** That minus the core's own at one connection, for the same SOAP request. */
  readonly addedMs?: number;
}

const microseconds = (ms: number | undefined) => (ms === undefined ? undefined : Math.round(ms * 1000));

/**
 * The gateway's, the forwarder's and the core's cost per SOAP twin operation in one run: CPU per request of
 * each at the run's connections (with the core's CPU behind each front), and what each front adds to the
 * core's time at one connection. Empty when neither front was measured.
 */
export function gatewayCost(measurements: readonly Measurement[]): GatewayCostRow[] {
  const found = (scenario: string, target: string) => {
    const m = measurements.find((other) => other.scenario === scenario && other.target === target);
    return m?.ok ? m.result : undefined;
  };
  const quietMs = (scenario: string, target: string) => {
    const rate = found(unloaded(scenario), target)?.requestsPerSecond;
    return rate ? 1000 / rate : undefined;
  };
  return SOAP_TWINS.flatMap((operation) => {
    const soap = `${SOAP_PREFIX}${operation}`;
    const coreQuiet = quietMs(soap, 'core');
    return (['gateway', 'forwarder', 'core'] as const).flatMap((target): GatewayCostRow[] => {
      const scenario = target === 'core' ? soap : operation;
      const result = found(scenario, target);
      if (!result || (target === 'core' && !found(operation, 'gateway') && !found(operation, 'forwarder'))) return [];
      const watched = result.watchedPerRequest ?? {};
      const quiet = quietMs(scenario, target);
      const coreCpuUs = microseconds(target === 'core' ? result.cpuMsPerRequest : watched[WATCHED.coreCpuMs]);
      const databaseCpuUs = microseconds(watched[WATCHED.databaseCpuMs]);
      const wakeups = result.contextSwitchesPerRequest;
      const coreWakeups = target === 'core' ? wakeups : watched[WATCHED.coreContextSwitches];
      return [
        {
          operation,
          target,
          cpuUs: microseconds(result.cpuMsPerRequest)!,
          ...(coreCpuUs === undefined ? {} : { coreCpuUs }),
          ...(databaseCpuUs === undefined ? {} : { databaseCpuUs }),
          ...(wakeups === undefined ? {} : { wakeups }),
          ...(coreWakeups === undefined ? {} : { coreWakeups }),
          requestsPerSecond: Math.round(result.requestsPerSecond),
          p50Ms: result.p50Ms,
          p99Ms: result.p99Ms,
          ...(quiet === undefined ? {} : { quietMs: quiet }),
          ...(quiet === undefined || coreQuiet === undefined || target === 'core'
            ? {}
            : { addedMs: quiet - coreQuiet }),
        },
      ];
    });
  });
}

/**
 * The gateway's cost against the forwarder's, per operation, with PASS/FAIL against GATEWAY_COST_LIMITS (CPU
 * per request, p99, the core's CPU behind each, and what the lookup adds at one connection).
 * Empty unless both were measured.
 */
export function gatewayCostLines(rows: readonly GatewayCostRow[]): string {
  const verdict = (pass: boolean) => (pass ? 'PASS' : 'FAIL');
  return SOAP_TWINS.flatMap((operation) => {
    const row = (target: GatewayCostRow['target']) =>
      rows.find((r) => r.operation === operation && r.target === target);
    const [gateway, forwarder, core] = [row('gateway'), row('forwarder'), row('core')];
    if (!gateway || !forwarder) return [];
    const ratio = gateway.cpuUs / forwarder.cpuUs;
    // With the audit trail off (the bench's COREGATE_AUDIT reaches the gateway), the lookup's target is tighter.
    const limit = cpuRatioLimit(operation, auditTrailOff(process.env.COREGATE_AUDIT));
    const behind = `core ${gateway.coreCpuUs ?? '?'} µs behind the gateway, ${forwarder.coreCpuUs ?? '?'} behind the forwarder, ${core?.coreCpuUs ?? '?'} alone`;
    const database = gateway.databaseCpuUs === undefined ? '' : `; gateway database ${gateway.databaseCpuUs} µs`;
    const p99Ratio = gateway.p99Ms / forwarder.p99Ms;
    const lines = [
      `${limit === undefined ? '    ' : verdict(ratio <= limit)}  cost ${operation}: gateway ${gateway.cpuUs} µs CPU/request = ${ratio.toFixed(2)}× the forwarder's ${forwarder.cpuUs}${limit === undefined ? '' : ` (limit ${limit}×)`}; ${behind}${database}`,
      `${verdict(p99Ratio <= GATEWAY_COST_LIMITS.p99Ratio)}  p99 ${operation}: gateway ${gateway.p99Ms} ms = ${p99Ratio.toFixed(2)}× the forwarder's ${forwarder.p99Ms} (limit ${GATEWAY_COST_LIMITS.p99Ratio}×)`,
    ];
    if (gateway.coreCpuUs !== undefined && forwarder.coreCpuUs !== undefined) {
      const coreRatio = gateway.coreCpuUs / forwarder.coreCpuUs;
      lines.push(
        `${verdict(coreCpuWithin(coreRatio))}  core ${operation}: ${gateway.coreCpuUs} µs CPU/request behind the gateway = ${coreRatio.toFixed(2)}× behind the forwarder (within ${CORE_CPU_PERCENT}%)`,
      );
    }
    if (gateway.addedMs !== undefined && forwarder.addedMs !== undefined && core?.quietMs !== undefined) {
      const text = `cost ${operation} at 1 connection: gateway adds ${gateway.addedMs.toFixed(2)} ms, forwarder ${forwarder.addedMs.toFixed(2)} ms to the core's ${core.quietMs.toFixed(2)} ms`;
      lines.push(
        operation === LOOKUP
          ? `${verdict(gateway.addedMs <= GATEWAY_COST_LIMITS.addedLookupMs)}  ${text} (limit ${GATEWAY_COST_LIMITS.addedLookupMs} ms)`
          : `      ${text}`,
      );
    }
    return lines;
  }).join('\n');
}

/** Writes the results as bench/results/<ISO timestamp>.json; returns the file's path. */
export function writeResults(startedAt: Date, results: Readonly<Record<string, unknown>>): string {
  const directory = join(BENCH_DIR, 'results');
  mkdirSync(directory, { recursive: true });
  const file = join(directory, `${startedAt.toISOString().replace(/[:.]/g, '-')}.json`);
  writeFileSync(file, `${JSON.stringify(results, null, 2)}\n`);
  return file;
}
