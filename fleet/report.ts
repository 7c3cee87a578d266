/**
 * The fleet run's report: one table row per scenario, then each scenario's goals and what happened when,
 * as markdown (printed, and written to fleet/results/latest.md).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { scenarioPassed, summarize, verdict, type ScenarioReport } from './scenarios.js';

const seconds = (ms: number) => `${(ms / 1000).toFixed(0)} s`;
const percent = (value: number) => `${value >= 0 ? '+' : '−'}${Math.abs(value * 100).toFixed(1)}%`;

function row(report: ScenarioReport, strict: boolean): string[] {
  const { attempts } = report;
  const failed = attempts.filter((attempt) => attempt.outcome !== 'ok');
  const storeRequests = attempts.filter((attempt) => attempt.fleet === 'store').length;
  const updates = report.updates.reduce(
    (total, check) => ({ sent: total.sent + check.sent, acked: total.acked + check.acked }),
    { sent: 0, acked: 0 },
  );
  const retriedWrites = attempts.filter((attempt) => attempt.write && attempt.outcome !== 'ok').length;
  const once = report.goals.filter((goal) => goal.name.startsWith('every update') || goal.name.includes('twice'));
  const exactlyOnce = once.every((goal) => goal.passed)
    ? 'yes'
    : once.some((goal) => verdict(goal, strict) === 'FAIL')
      ? 'NO'
      : 'gateway: NO (known issue)';
  const known = report.goals.some((goal) => verdict(goal, strict) === 'known');
  const stale = report.stale.reduce((total, result) => total + result.stale, 0);
  const staleChecks = report.stale.reduce((total, result) => total + result.checks, 0);
  const { store, gateway } = report.haproxyRetries;
  return [
    report.title,
    seconds(report.durationMs),
    `${attempts.length} (store ${storeRequests}, gateway ${attempts.length - storeRequests})`,
    failed.length === 0
      ? '0'
      : `${failed.length}: ${summarize(failed)}` +
        (report.unexpectedFailures.length === 0
          ? ` — all ${report.tolerated}`
          : ` — ${report.unexpectedFailures.length} not tolerated`),
    `${updates.acked}/${updates.sent}` + (retriedWrites > 0 ? ` (${retriedWrites} failed attempts retried)` : ''),
    `store ${store.retries}/${store.redispatches}, gateway ${gateway.retries}/${gateway.redispatches}`,
    exactlyOnce,
    `${stale} of ${staleChecks}`,
    report.rates.map((rate) => `${rate.fleet} ${percent(rate.deviation)}`).join(', '),
    scenarioPassed(report, strict) ? (known ? 'pass, known issue' : 'pass') : 'FAIL',
  ];
}

const HEADER = [
  'scenario',
  'time',
  'requests',
  'failed (by kind)',
  'updates acked',
  'HAProxy retries/redispatches',
  'exactly once',
  'stale reads',
  'rate limit vs shared',
  'result',
];

export function resultsTable(reports: readonly ScenarioReport[], strict: boolean): string {
  const lines = [HEADER, HEADER.map(() => '---'), ...reports.map((report) => row(report, strict))];
  return lines.map((cells) => `| ${cells.join(' | ')} |`).join('\n');
}

function details(report: ScenarioReport, strict: boolean): string {
  const goals = report.goals.map((goal) => {
    const said = verdict(goal, strict);
    const known = said === 'known' ? ` (known issue: ${goal.knownIssue})` : '';
    return `- ${said === 'FAIL' ? '**FAIL**' : said} ${goal.name}: ${goal.detail}${known}`;
  });
  const events = report.events.map((event) => `${seconds(event.at)} ${event.label}`).join('; ');
  const rates = report.rates.map(
    (rate) =>
      `${rate.fleet}: limit ${rate.limitPerMinute}/min, ${rate.sent} sent, ${rate.allowed} let through, ` +
      `${rate.refused} refused 429 (${Object.entries(rate.outcomes)
        .map(([outcome, count]) => `${outcome} ${count}`)
        .join(', ')})`,
  );
  return [
    `### ${report.title}`,
    '',
    ...goals,
    ...report.notes.map((note) => `- note: ${note}`),
    `- events: ${events}`,
    `- rate-limit hammer: ${rates.join('; ')}`,
  ].join('\n');
}

export interface RunFacts {
  readonly startedAt: Date;
  readonly totalMs: number;
  readonly topology: readonly string[];
  /** Known issues fail the run too. */
  readonly strict: boolean;
}

export function markdownReport(reports: readonly ScenarioReport[], facts: RunFacts): string {
  const passed = reports.every((report) => scenarioPassed(report, facts.strict));
  return [
    `# Fleet run ${facts.startedAt.toISOString()}: ${passed ? 'every goal met' : 'GOALS FAILED'}` +
      (reports.some((report) => report.goals.some((goal) => verdict(goal, facts.strict) === 'known'))
        ? ', but for known issues'
        : ''),
    '',
    ...facts.topology.map((line) => `- ${line}`),
    `- whole run: ${seconds(facts.totalMs)}`,
    '',
    resultsTable(reports, facts.strict),
    '',
    'Failed requests are those the client saw fail (a read is not retried by the client; an update is, until it',
    'is acknowledged). HAProxy retries/redispatches are its own re-sends during the scenario. Stale reads: pairs',
    'of a write through one instance and a read through another, directly. Rate limit: a fresh token hammered',
    'through every instance, what got through against what one shared limit allows.',
    '',
    ...reports.map((report) => details(report, facts.strict)).flatMap((text) => [text, '']),
  ].join('\n');
}

export function writeReport(file: string, markdown: string): void {
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, markdown);
}
