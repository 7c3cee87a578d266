/**
 * What each front of the core spends on garbage collection per request: the gateway and the hand-written
 * forwarder, one process each, in front of one core process on the PostgreSQL dataset, each measured twice,
 * in turns (gateway, forwarder, forwarder, gateway). Both fronts run with bench/gc-watch.mjs preloaded, which
 * times every collection (`perf_hooks`) and the event loop's delay over the measured part of a run (after
 * its warm-up). Prints, for each front, its scavenges and full collections, their time per request, and the
 * event loop's delay.
 *
 *   node --import tsx bench/collections.ts [--accounts 20000] [--seconds 8] [--connections 64] [--scenario findBySSN]
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { measureScenario } from './measure.js';
import { scenarioNamed, signalledAround, withOneProcessEach } from './one-process-each.js';
import type { Target } from './targets.js';

const { values } = parseArgs({
  options: {
    accounts: { type: 'string', default: '20000' },
    seconds: { type: 'string', default: '8' },
    connections: { type: 'string', default: '64' },
    scenario: { type: 'string', default: 'findBySSN' },
    'database-url': { type: 'string', default: 'postgres://postgres@127.0.0.1:5432/test' },
  },
});

/** What bench/gc-watch.mjs writes for one process and one window. */
interface Window {
  readonly collections: Record<string, { count: number; ms: number; maxMs: number }>;
  readonly delayMs: { p50: number; p99: number; max: number };
}

interface Tally {
  requests: number;
  readonly collections: Map<string, { count: number; ms: number; maxMs: number }>;
  delayP99Ms: number[];
}

async function measureOnce(
  front: Target,
  directory: string,
  scenarioName: string,
  seconds: number,
  connections: number,
  into: Tally,
) {
  const scenario = scenarioNamed(scenarioName);
  for (const name of readdirSync(directory)) rmSync(join(directory, name));
  // The preloaded watch's window is the measured part.
  const watched = signalledAround(front, 'collections');
  const measurement = await measureScenario(watched, scenario, { seconds, connections });
  if (!measurement.ok) throw new Error(`${front.label}: ${measurement.reason}`);
  // The processes write their windows on the signal's turn.
  await new Promise((resolve) => setTimeout(resolve, 500));
  into.requests += measurement.result.requests;
  for (const name of readdirSync(directory)) {
    const window = JSON.parse(readFileSync(join(directory, name), 'utf8')) as Window;
    for (const [kind, seen] of Object.entries(window.collections)) {
      const sum = into.collections.get(kind) ?? { count: 0, ms: 0, maxMs: 0 };
      into.collections.set(kind, {
        count: sum.count + seen.count,
        ms: sum.ms + seen.ms,
        maxMs: Math.max(sum.maxMs, seen.maxMs),
      });
    }
    if (Object.keys(window.collections).length > 0) into.delayP99Ms.push(window.delayMs.p99);
  }
}

function table(rows: readonly { label: string; tally: Tally }[]): string {
  const kinds = [...new Set(rows.flatMap((row) => [...row.tally.collections.keys()]))].sort();
  const lines = [
    `| | ${rows.map((row) => row.label).join(' | ')} |`,
    `| --- | ${rows.map(() => '---:').join(' | ')} |`,
    `| requests | ${rows.map((row) => row.tally.requests).join(' | ')} |`,
  ];
  for (const kind of kinds) {
    const cell = (tally: Tally, show: (seen: { count: number; ms: number; maxMs: number }) => string) => {
      const seen = tally.collections.get(kind);
      return seen ? show(seen) : '–';
    };
    lines.push(`| ${kind}s | ${rows.map((row) => cell(row.tally, (seen) => String(seen.count))).join(' | ')} |`);
    lines.push(
      `| ${kind}: ms each, mean / max | ${rows.map((row) => cell(row.tally, (seen) => `${(seen.ms / seen.count).toFixed(2)} / ${seen.maxMs.toFixed(1)}`)).join(' | ')} |`,
    );
    lines.push(
      `| ${kind}: µs a request | ${rows.map((row) => cell(row.tally, (seen) => ((seen.ms * 1000) / row.tally.requests).toFixed(1))).join(' | ')} |`,
    );
  }
  const all = (tally: Tally) => [...tally.collections.values()].reduce((sum, seen) => sum + seen.ms, 0);
  lines.push(
    `| **all collections: µs a request** | ${rows.map((row) => `**${((all(row.tally) * 1000) / row.tally.requests).toFixed(1)}**`).join(' | ')} |`,
  );
  lines.push(
    `| event loop delay p99, ms (each window) | ${rows.map((row) => row.tally.delayP99Ms.map((ms) => ms.toFixed(1)).join(', ')).join(' | ')} |`,
  );
  return lines.join('\n');
}

async function main(): Promise<void> {
  const seconds = Number(values.seconds);
  const connections = Number(values.connections);
  const directory = mkdtempSync(join(tmpdir(), 'coregate-gc-watch-'));
  // The fronts start with the watch preloaded.
  const frontEnv = {
    GC_WATCH_DIR: directory,
    NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --import ${resolve('bench/gc-watch.mjs')}`.trim(),
  };
  const options = { databaseUrl: values['database-url']!, accounts: Number(values.accounts), frontEnv };
  try {
    await withOneProcessEach(options, async ({ gateway, forwarder }) => {
      const runs = [gateway, forwarder].map((front) => ({
        front,
        tally: { requests: 0, collections: new Map(), delayP99Ms: [] } as Tally,
      }));
      // Gateway, forwarder, forwarder, gateway: the core warms up behind the first, so each front is second once.
      for (const run of [runs[0]!, runs[1]!, runs[1]!, runs[0]!]) {
        await measureOnce(run.front, directory, values.scenario!, seconds, connections, run.tally);
        console.log(`${run.front.label}: ${run.tally.requests} requests so far`);
      }
      console.log(`\nGarbage collection per ${values.scenario} at ${connections} connections (one process each):\n`);
      console.log(table(runs.map((run) => ({ label: run.front.label, tally: run.tally }))));
    });
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) await main();
