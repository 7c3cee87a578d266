/**
 * The benchmark's output: a table of every measurement with its ratios to the ceiling and to Prism,
 * the scale checks with PASS/FAIL, and the JSON file of everything under bench/results.
 */
import { cpus, platform, release, totalmem } from 'node:os';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Measurement } from './measure.js';
import type { ScaleCheck } from './scale.js';
import { SCALE_LIMIT } from './scale.js';
import { SOAP_PREFIX } from './scenarios.js';
import { BENCH_DIR } from './servers.js';

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
  'B/resp',
  '/ceiling',
  '/Prism',
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
    String(result.bytesPerResponse),
    ratio(measurements, m, 'ceiling'),
    ratio(measurements, m, 'prism'),
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

/** Writes the results as bench/results/<ISO timestamp>.json; returns the file's path. */
export function writeResults(startedAt: Date, results: Readonly<Record<string, unknown>>): string {
  const directory = join(BENCH_DIR, 'results');
  mkdirSync(directory, { recursive: true });
  const file = join(directory, `${startedAt.toISOString().replace(/[:.]/g, '-')}.json`);
  writeFileSync(file, `${JSON.stringify(results, null, 2)}\n`);
  return file;
}
