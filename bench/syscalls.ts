/**
 * What each front of the core asks of the kernel per request, and what the core behind it does: the gateway
 * and the hand-written forwarder, one process each, in front of one core process on the PostgreSQL dataset,
 * each measured with `strace -c -f` attached to the front and to the core for the measured part of a run
 * (after its warm-up), each front twice, in turns. Prints, per request, each system call of either process
 * that ran at least 0.05 times a request, and the total. strace slows what it watches: the counts are what
 * this says, not the times.
 *
 *   node --import tsx bench/syscalls.ts [--accounts 20000] [--seconds 5] [--connections 64] [--scenario findBySSN]
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { measureScenario } from './measure.js';
import { scenarioNamed, withOneProcessEach } from './one-process-each.js';
import type { Target } from './targets.js';

const { values } = parseArgs({
  options: {
    accounts: { type: 'string', default: '20000' },
    seconds: { type: 'string', default: '5' },
    connections: { type: 'string', default: '64' },
    scenario: { type: 'string', default: 'findBySSN' },
    'database-url': { type: 'string', default: 'postgres://postgres@127.0.0.1:5432/test' },
  },
});

/** System calls by name: how many, in the window strace watched. */
type Counts = Map<string, number>;

/** strace's `-c` table: `% time  seconds  usecs/call  calls  errors  syscall`, one line a call. */
export function parseStraceSummary(text: string): Counts {
  const counts: Counts = new Map();
  for (const line of text.split('\n')) {
    const fields = line.trim().split(/\s+/);
    const name = fields.at(-1);
    if (fields.length < 5 || !name || !/^[a-z_0-9]+$/.test(name) || name === 'total') continue;
    const calls = Number(fields[3]);
    if (Number.isInteger(calls)) counts.set(name, (counts.get(name) ?? 0) + calls);
  }
  return counts;
}

/** strace attached to a process and its threads until stopped; resolves to its counts once it has exited. */
function watchSyscalls(pid: number): { stop(): Promise<Counts> } {
  const strace = spawn('strace', ['-c', '-f', '-p', String(pid)], { stdio: ['ignore', 'ignore', 'pipe'] });
  let output = '';
  strace.stderr.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  const exited = new Promise<void>((resolve) => strace.once('exit', () => resolve()));
  return {
    async stop() {
      strace.kill('SIGINT');
      await exited;
      return parseStraceSummary(output);
    },
  };
}

async function countsOf(front: Target, core: Target, scenarioName: string, seconds: number, connections: number) {
  const scenario = scenarioNamed(scenarioName);
  let watching: { front: ReturnType<typeof watchSyscalls>; core: ReturnType<typeof watchSyscalls> } | undefined;
  // A watch starts after the warm-up and stops with the measured part: strace is attached over that window.
  const watched: Target = {
    ...front,
    watches: [
      {
        name: 'strace',
        async start() {
          watching = { front: watchSyscalls(front.server.pid), core: watchSyscalls(core.server.pid) };
          // strace needs a moment to attach to every thread.
          await new Promise((resolve) => setTimeout(resolve, 300));
          return { stop: () => 0 };
        },
      },
    ],
  };
  const measurement = await measureScenario(watched, scenario, { seconds, connections });
  if (!watching) throw new Error(`${front.label}: the run never started`);
  const [frontCounts, coreCounts] = await Promise.all([watching.front.stop(), watching.core.stop()]);
  if (!measurement.ok) throw new Error(`${front.label}: ${measurement.reason}`);
  return { requests: measurement.result.requests, frontCounts, coreCounts };
}

function add(into: Counts, counts: Counts): void {
  for (const [name, calls] of counts) into.set(name, (into.get(name) ?? 0) + calls);
}

function table(rows: readonly { label: string; requests: number; counts: Counts }[]): string {
  const names = new Set<string>();
  for (const row of rows) for (const [name, calls] of row.counts) if (calls / row.requests >= 0.05) names.add(name);
  const perRequest = (row: (typeof rows)[number], calls: number) => (calls / row.requests).toFixed(2);
  const lines = [
    `| system call | ${rows.map((row) => row.label).join(' | ')} |`,
    `| --- | ${rows.map(() => '---:').join(' | ')} |`,
  ];
  for (const name of [...names].sort())
    lines.push(`| ${name} | ${rows.map((row) => perRequest(row, row.counts.get(name) ?? 0)).join(' | ')} |`);
  const total = (counts: Counts) => [...counts.values()].reduce((sum, calls) => sum + calls, 0);
  lines.push(`| **all** | ${rows.map((row) => `**${perRequest(row, total(row.counts))}**`).join(' | ')} |`);
  return lines.join('\n');
}

async function main(): Promise<void> {
  const seconds = Number(values.seconds);
  const connections = Number(values.connections);
  const options = { databaseUrl: values['database-url']!, accounts: Number(values.accounts) };
  await withOneProcessEach(options, async ({ core, gateway, forwarder }) => {
    // Gateway, forwarder, forwarder, gateway: the core warms up behind the first, so each front is second once.
    const runs = [gateway, forwarder].map((front) => ({
      front,
      requests: 0,
      frontCounts: new Map(),
      coreCounts: new Map(),
    }));
    for (const run of [runs[0]!, runs[1]!, runs[1]!, runs[0]!]) {
      const counts = await countsOf(run.front, core, values.scenario!, seconds, connections);
      console.log(`${run.front.label}: ${counts.requests} requests watched`);
      run.requests += counts.requests;
      add(run.frontCounts, counts.frontCounts);
      add(run.coreCounts, counts.coreCounts);
    }
    console.log(`\nSystem calls per ${values.scenario} at ${connections} connections (one process each):\n`);
    console.log(
      table(
        runs.flatMap((run) => [
          { label: run.front.label, requests: run.requests, counts: run.frontCounts },
          { label: `core behind the ${run.front.id}`, requests: run.requests, counts: run.coreCounts },
        ]),
      ),
    );
  });
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) await main();
