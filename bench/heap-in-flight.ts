/**
 * What a request in flight keeps alive in each front of the core: the gateway and the hand-written
 * forwarder, one process each, in front of one core process on the PostgreSQL dataset. Each front is warmed
 * up, its heap written once idle and once two seconds into findBySSN at 64 connections (Node.js's
 * `--heapsnapshot-signal`: the snapshot is taken after a full collection, so it holds only what is alive),
 * and the two compared by kind of object. Prints, per front, the objects and bytes more under load than idle,
 * in all and per request in flight, and the kinds that grew the most. A scavenge copies what is alive: this
 * is what the young generation carries per request at 64 connections.
 *
 *   node --import tsx bench/heap-in-flight.ts [--accounts 20000] [--connections 64] [--rows 20]
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { measureScenario } from './measure.js';
import { scenarioNamed, withOneProcessEach } from './one-process-each.js';
import type { Target } from './targets.js';

const { values } = parseArgs({
  options: {
    accounts: { type: 'string', default: '20000' },
    connections: { type: 'string', default: '64' },
    rows: { type: 'string', default: '20' },
    'database-url': { type: 'string', default: 'postgres://postgres@127.0.0.1:5432/test' },
  },
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Objects and bytes of each kind (`type:name`, e.g. `object:Promise`, `closure:LOG`) in a heap snapshot. */
export function kindsOf(snapshotText: string): Map<string, { count: number; bytes: number }> {
  const snapshot = JSON.parse(snapshotText) as {
    snapshot: { meta: { node_fields: string[]; node_types: [string[]] } };
    nodes: number[];
    strings: string[];
  };
  const { node_fields: fields, node_types: nodeTypes } = snapshot.snapshot.meta;
  const width = fields.length;
  const [typeAt, nameAt, sizeAt] = ['type', 'name', 'self_size'].map((field) => fields.indexOf(field)) as [
    number,
    number,
    number,
  ];
  const kinds = new Map<string, { count: number; bytes: number }>();
  for (let node = 0; node < snapshot.nodes.length; node += width) {
    const type = nodeTypes[0][snapshot.nodes[node + typeAt]!]!;
    // Objects and closures by their constructor's or function's name; everything else by its type alone.
    const named = type === 'object' || type === 'closure';
    const kind = named ? `${type}:${snapshot.strings[snapshot.nodes[node + nameAt]!]!.slice(0, 60)}` : type;
    const seen = kinds.get(kind) ?? { count: 0, bytes: 0 };
    seen.count += 1;
    seen.bytes += snapshot.nodes[node + sizeAt]!;
    kinds.set(kind, seen);
  }
  return kinds;
}

/** Signals the front's processes to write a heap snapshot into `directory`; the new one's text, once whole. */
async function snapshot(front: Target, directory: string, known: Set<string>): Promise<string> {
  process.kill(-front.server.pid, 'SIGUSR2');
  for (;;) {
    await sleep(500);
    const fresh = readdirSync(directory).filter((name) => name.endsWith('.heapsnapshot') && !known.has(name));
    if (fresh.length === 0) continue;
    // The largest: a front's serving process, not a cluster primary that only holds the port.
    const file = fresh.map((name) => join(directory, name)).sort((a, b) => statSync(b).size - statSync(a).size)[0]!;
    const size = statSync(file).size;
    await sleep(1000);
    if (statSync(file).size !== size) continue;
    // Whole once it stopped growing and ends where the snapshot's JSON does (a pause can hold its writing).
    const text = readFileSync(file, 'utf8');
    if (!text.trimEnd().endsWith('}')) continue;
    for (const name of fresh) known.add(name);
    return text;
  }
}

async function main(): Promise<void> {
  const connections = Number(values.connections);
  const rows = Number(values.rows);
  const directory = mkdtempSync(join(tmpdir(), 'coregate-heap-'));
  // The fronts start able to write their heaps on a signal.
  const frontEnv = {
    NODE_OPTIONS:
      `${process.env.NODE_OPTIONS ?? ''} --heapsnapshot-signal=SIGUSR2 --diagnostic-dir=${directory}`.trim(),
  };
  const options = { databaseUrl: values['database-url']!, accounts: Number(values.accounts), frontEnv };
  try {
    await withOneProcessEach(options, async ({ gateway, forwarder }) => {
      const scenario = scenarioNamed('findBySSN');
      const known = new Set<string>();
      for (const front of [gateway, forwarder]) {
        // Warmed up first, so that compiled code and the pools' connections are there in both snapshots.
        await measureScenario(front, scenario, { seconds: 4, connections });
        await sleep(1000);
        const idle = kindsOf(await snapshot(front, directory, known));
        let loaded: Promise<string> | undefined;
        const watched: Target = {
          ...front,
          watches: [
            {
              name: 'heap',
              async start() {
                loaded = sleep(2000).then(() => snapshot(front, directory, known));
                return { stop: () => 0 };
              },
            },
          ],
        };
        await measureScenario(watched, scenario, { seconds: 6, connections });
        const busy = kindsOf(await loaded!);
        const grown = [...busy].map(([kind, seen]) => {
          const before = idle.get(kind) ?? { count: 0, bytes: 0 };
          return { kind, count: seen.count - before.count, bytes: seen.bytes - before.bytes };
        });
        // Compiled code grows with the run, not with the requests in flight.
        const perRequest = grown.filter((row) => row.kind !== 'code');
        const bytes = perRequest.reduce((sum, row) => sum + row.bytes, 0);
        const count = perRequest.reduce((sum, row) => sum + row.count, 0);
        console.log(
          `\n${front.label}: ${count} objects, ${(bytes / 1024).toFixed(0)} KB more under load than idle: ` +
            `${(count / connections).toFixed(0)} objects, ${(bytes / 1024 / connections).toFixed(1)} KB a request in flight\n`,
        );
        console.log('| kind | objects a request in flight | bytes a request in flight |');
        console.log('| --- | ---: | ---: |');
        for (const row of perRequest.sort((a, b) => b.bytes - a.bytes).slice(0, rows))
          console.log(
            `| ${row.kind} | ${(row.count / connections).toFixed(1)} | ${Math.round(row.bytes / connections)} |`,
          );
      }
    });
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) await main();
