/**
 * What each front of the core allocates per request, and where: the gateway and the hand-written forwarder, one
 * process each in front of one core process on the PostgreSQL dataset, each measured twice, in turns (gateway,
 * forwarder, forwarder, gateway). Both run with bench/alloc-watch.mjs preloaded, which samples every allocation
 * (collected or not) over the measured part of a run. Prints the bytes allocated a request, by module and by
 * function (the allocating function: a repository source through the build's source maps, a package, or
 * Node.js's own), each front's side by side. What a request allocates is what the young generation's
 * scavenges are paid for (bench/collections.ts).
 *
 *   node --import tsx bench/allocations.ts [--accounts 20000] [--seconds 8] [--connections 64] [--scenario findBySSN] [--top 40]
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { SourceMap } from 'node:module';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { framePlace, type CallFrame } from './cpu-profile.js';
import { measureScenario } from './measure.js';
import { scenarioNamed, signalledAround, withOneProcessEach } from './one-process-each.js';
import type { Target } from './targets.js';

const { values } = parseArgs({
  options: {
    accounts: { type: 'string', default: '20000' },
    seconds: { type: 'string', default: '8' },
    connections: { type: 'string', default: '64' },
    scenario: { type: 'string', default: 'findBySSN' },
    top: { type: 'string', default: '40' },
    'database-url': { type: 'string', default: 'postgres://postgres@127.0.0.1:5432/test' },
  },
});

/** A node of V8's sampling heap profile: the bytes sampled as allocated by its frame itself. */
interface HeapNode {
  readonly callFrame: CallFrame;
  readonly selfSize: number;
  readonly children: readonly HeapNode[];
}

interface Tally {
  requests: number;
  bytes: number;
  readonly byModule: Map<string, number>;
  readonly byFunction: Map<string, number>;
}

const add = (into: Map<string, number>, key: string, bytes: number) => into.set(key, (into.get(key) ?? 0) + bytes);

/** Adds a profile's sampled bytes to the tally, by the allocating frame. */
function tallyProfile(head: HeapNode, maps: Map<string, SourceMap | undefined>, into: Tally): void {
  const visit = (node: HeapNode) => {
    if (node.selfSize > 0) {
      const place = framePlace(node.callFrame, maps);
      const name = `${node.callFrame.functionName || '(anonymous)'}  ${place.module}${place.line ? `:${place.line}` : ''}`;
      into.bytes += node.selfSize;
      add(into.byModule, place.module, node.selfSize);
      add(into.byFunction, name, node.selfSize);
    }
    for (const child of node.children) visit(child);
  };
  visit(head);
}

async function measureOnce(front: Target, directory: string, into: Tally, maps: Map<string, SourceMap | undefined>) {
  for (const name of readdirSync(directory)) rmSync(join(directory, name));
  // The preloaded watch's window is the measured part.
  const watched = signalledAround(front, 'allocations');
  const settings = { seconds: Number(values.seconds), connections: Number(values.connections) };
  const measurement = await measureScenario(watched, scenarioNamed(values.scenario!), settings);
  if (!measurement.ok) throw new Error(`${front.label}: ${measurement.reason}`);
  // The processes write their profiles after the signal: a large one takes a while.
  const written = () => readdirSync(directory).filter((name) => name.endsWith('.heapprofile'));
  for (let waited = 0; written().length === 0 && waited < 30_000; waited += 500)
    await new Promise((done) => setTimeout(done, 500));
  await new Promise((done) => setTimeout(done, 1000));
  const files = written();
  if (files.length === 0) throw new Error(`${front.label} wrote no allocation profile`);
  into.requests += measurement.result.requests;
  for (const name of files) {
    const profile = JSON.parse(readFileSync(join(directory, name), 'utf8')) as { head: HeapNode };
    tallyProfile(profile.head, maps, into);
  }
}

function table(
  title: string,
  rows: readonly { label: string; tally: Tally }[],
  of: (tally: Tally) => Map<string, number>,
) {
  const perRequest = (tally: Tally, bytes: number) => bytes / tally.requests;
  const names = [...new Set(rows.flatMap((row) => [...of(row.tally).keys()]))]
    .map((name) => ({
      name,
      most: Math.max(...rows.map((row) => perRequest(row.tally, of(row.tally).get(name) ?? 0))),
    }))
    .sort((a, b) => b.most - a.most)
    .slice(0, Number(values.top));
  return [
    `${title}, bytes a request:`,
    '',
    `| | ${rows.map((row) => row.label).join(' | ')} |`,
    `| --- | ${rows.map(() => '---:').join(' | ')} |`,
    `| **all** | ${rows.map((row) => `**${Math.round(perRequest(row.tally, row.tally.bytes))}**`).join(' | ')} |`,
    ...names.map(
      ({ name }) =>
        `| ${name.replaceAll('|', '\\|')} | ${rows.map((row) => Math.round(perRequest(row.tally, of(row.tally).get(name) ?? 0))).join(' | ')} |`,
    ),
  ].join('\n');
}

async function main(): Promise<void> {
  const directory = mkdtempSync(join(tmpdir(), 'coregate-alloc-watch-'));
  const frontEnv = {
    ALLOC_WATCH_DIR: directory,
    NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --import ${resolve('bench/alloc-watch.mjs')}`.trim(),
  };
  const options = { databaseUrl: values['database-url']!, accounts: Number(values.accounts), frontEnv };
  const maps = new Map<string, SourceMap | undefined>();
  try {
    await withOneProcessEach(options, async ({ gateway, forwarder }) => {
      const runs = [gateway, forwarder].map((front) => ({
        front,
        tally: { requests: 0, bytes: 0, byModule: new Map(), byFunction: new Map() } as Tally,
      }));
      // Gateway, forwarder, forwarder, gateway: the core warms up behind the first, so each front is second once.
      for (const run of [runs[0]!, runs[1]!, runs[1]!, runs[0]!]) {
        await measureOnce(run.front, directory, run.tally, maps);
        console.log(`${run.front.label}: ${run.tally.requests} requests so far`);
      }
      const rows = runs.map((run) => ({ label: run.front.label, tally: run.tally }));
      console.log(`\nAllocated per ${values.scenario} at ${values.connections} connections (one process each):\n`);
      console.log(table('By module', rows, (tally) => tally.byModule));
      console.log('');
      console.log(table('By function', rows, (tally) => tally.byFunction));
    });
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) await main();
