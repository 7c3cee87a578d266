/**
 * Where a server's CPU goes: summarizes the V8 CPU profiles (`node --cpu-prof`) its processes wrote during a
 * bench run (`npm run bench -- --profile`): self time by function and by module (a source file of this
 * repository, mapped back through the build's source maps, a package, or Node.js's own), and each sample
 * charged to the innermost repository function on its stack, which tells what each piece of coregate costs
 * with the packages it calls. Shares are of the time the main threads were not idle (a profile sees no other
 * thread: the garbage collector's helpers, the JIT compiler and the kernel's time are not in it).
 *
 * Run on profiles of an earlier run: node --import tsx bench/cpu-profile.ts <profile directory> [scenario|all] [top]
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { SourceMap } from 'node:module';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const REPO_ROOT = fileURLToPath(new URL('..', import.meta.url));

export interface CallFrame {
  readonly functionName: string;
  readonly url: string;
  readonly lineNumber: number;
  readonly columnNumber: number;
}

interface ProfileNode {
  readonly id: number;
  readonly callFrame: CallFrame;
  readonly children?: readonly number[];
}

interface CpuProfile {
  /** µs of the monotonic clock. */
  readonly startTime: number;
  readonly nodes: readonly ProfileNode[];
  readonly samples: readonly number[];
  readonly timeDeltas: readonly number[];
}

/** V8's pseudo-frames: not code of the process's own. */
const IDLE = '(idle)';

const PACKAGE = /node_modules\/((?:@[^/]+\/)?[^/]+)/;

/**
 * Where a frame's code is: a repository source file (through its build's source map: coregate's dist/ and the
 * bench's servers under node_modules/.cache), a package, Node.js's own (`node:…`) or V8's (`(garbage collector)`).
 */
export function framePlace(frame: CallFrame, maps: Map<string, SourceMap | undefined>): Place {
  if (!frame.url) return { module: frame.functionName.startsWith('(') ? frame.functionName : '(native)' };
  if (frame.url.startsWith('node:')) return { module: frame.url };
  const file = frame.url.startsWith('file://') ? fileURLToPath(frame.url) : frame.url;
  if (!maps.has(file)) {
    const mapFile = `${file}.map`;
    maps.set(file, existsSync(mapFile) ? new SourceMap(JSON.parse(readFileSync(mapFile, 'utf8')) as never) : undefined);
  }
  const entry = maps.get(file)?.findEntry(frame.lineNumber, frame.columnNumber);
  if (entry && 'originalSource' in entry) {
    const source = entry.originalSource.startsWith('file://')
      ? fileURLToPath(entry.originalSource)
      : entry.originalSource;
    const inRepo = relative(REPO_ROOT, join(file, '..', source));
    const inPackage = PACKAGE.exec(inRepo);
    return inPackage ? { module: inPackage[1]! } : { module: inRepo, line: entry.originalLine + 1, repository: true };
  }
  const inPackage = PACKAGE.exec(file);
  return { module: inPackage ? inPackage[1]! : relative(REPO_ROOT, file) };
}

export interface Place {
  readonly module: string;
  readonly line?: number;
  /** Source of this repository (src/, bench/), not a package's or Node.js's. */
  readonly repository?: boolean;
}

/** A time per name, largest first. */
export type Shares = readonly { readonly name: string; readonly us: number }[];

/** Where the profiled time went, in µs, over one or more profiles. */
export interface ProfileSummary {
  readonly profiles: number;
  /** Profiled time the processes were not idle. */
  readonly busyUs: number;
  /** Self time per function (`name  module:line`). */
  readonly functions: Shares;
  /** Self time per module. */
  readonly modules: Shares;
  /**
   * Each sample's time charged to the innermost repository function on its stack, with all it called
   * (packages, Node.js): what each piece of coregate (or of the forwarder) costs. Time with no repository
   * frame on the stack (the HTTP server, the sockets, the garbage collector) is charged to its leaf's module.
   */
  readonly responsibleFunctions: Shares;
  /** The same per module. */
  readonly responsibleModules: Shares;
}

/** Spans of the monotonic clock in µs (`process.hrtime`'s, which V8's profiles use too). */
export type Windows = readonly (readonly [number, number])[];

/** The file of a profile directory naming when each scenario was measured on its server. */
const WINDOWS_FILE = 'windows.json';

/** Notes in a profile directory when each scenario was measured, so that summaries can keep to one. */
export function writeWindows(directory: string, windows: Readonly<Record<string, Windows>>): void {
  mkdirSync(directory, { recursive: true });
  writeFileSync(join(directory, WINDOWS_FILE), `${JSON.stringify(windows, null, 2)}\n`);
}

/** When each scenario was measured, as a profile directory notes it (empty when it does not). */
export function readWindows(directory: string): Record<string, Windows> {
  const file = join(directory, WINDOWS_FILE);
  return existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as Record<string, Windows>) : {};
}

/**
 * Summarizes every .cpuprofile file of a directory (one per process of a server), keeping to the samples
 * taken within `windows` (the measurements: not the servers' start, nor the checks between runs).
 */
export function summarizeProfiles(directory: string, windows: Windows): ProfileSummary {
  const within = (us: number) => windows.some(([from, to]) => us >= from && us <= to);
  const files = readdirSync(directory).filter((name) => name.endsWith('.cpuprofile'));
  const maps = new Map<string, SourceMap | undefined>();
  const tallies = {
    functions: new Map<string, number>(),
    modules: new Map<string, number>(),
    responsibleFunctions: new Map<string, number>(),
    responsibleModules: new Map<string, number>(),
  };
  let busyUs = 0;
  const add = (into: Map<string, number>, key: string, us: number) => into.set(key, (into.get(key) ?? 0) + us);
  const functionName = (node: ProfileNode, place: Place) =>
    `${node.callFrame.functionName || '(anonymous)'}  ${place.module}${place.line ? `:${place.line}` : ''}`;
  for (const file of files) {
    const profile = JSON.parse(readFileSync(join(directory, file), 'utf8')) as CpuProfile;
    const byId = new Map(profile.nodes.map((node) => [node.id, node]));
    const parent = new Map<number, number>();
    for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
    const places = new Map(profile.nodes.map((node) => [node.id, framePlace(node.callFrame, maps)]));
    let takenAt = profile.startTime;
    profile.samples.forEach((id, i) => {
      const us = profile.timeDeltas[i] ?? 0;
      takenAt += us;
      const node = byId.get(id);
      if (!node || node.callFrame.functionName === IDLE || us <= 0 || !within(takenAt)) return;
      busyUs += us;
      const place = places.get(id)!;
      add(tallies.functions, functionName(node, place), us);
      add(tallies.modules, place.module, us);
      let responsible = id;
      while (!places.get(responsible)!.repository && parent.has(responsible)) responsible = parent.get(responsible)!;
      const charged = places.get(responsible)!.repository ? responsible : id;
      add(tallies.responsibleFunctions, functionName(byId.get(charged)!, places.get(charged)!), us);
      add(tallies.responsibleModules, places.get(charged)!.module, us);
    });
  }
  const sorted = (from: Map<string, number>): Shares =>
    [...from].sort((a, b) => b[1] - a[1]).map(([name, us]) => ({ name, us }));
  return {
    profiles: files.length,
    busyUs,
    functions: sorted(tallies.functions),
    modules: sorted(tallies.modules),
    responsibleFunctions: sorted(tallies.responsibleFunctions),
    responsibleModules: sorted(tallies.responsibleModules),
  };
}

/** The summary as text: the `top` entries of each view, as shares of the busy time. */
export function profileLines(title: string, summary: ProfileSummary, top = 25): string {
  const share = (us: number) => `${((us / Math.max(1, summary.busyUs)) * 100).toFixed(1).padStart(5)}%`;
  const view = (heading: string, shares: Shares) => [
    `  ${heading}`,
    ...shares.slice(0, top).map(({ name, us }) => `  ${share(us)}  ${name}`),
  ];
  return [
    `${title}: ${summary.profiles} profile(s), ${(summary.busyUs / 1e6).toFixed(1)} s busy on their main threads`,
    ...view('self time, by function', summary.functions),
    ...view('self time, by module', summary.modules),
    ...view('charged to the innermost repository function (with what it called)', summary.responsibleFunctions),
    ...view('charged to the innermost repository module (with what it called)', summary.responsibleModules),
  ].join('\n');
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const [directory, scenario, top = '25'] = process.argv.slice(2);
  const windows = directory ? readWindows(directory) : {};
  const chosen = scenario && scenario !== 'all' ? windows[scenario] : Object.values(windows).flat();
  if (!directory || !chosen) {
    console.error(
      'Usage: node --import tsx bench/cpu-profile.ts <profile directory> [scenario|all] [top]\n' +
        `Scenarios: ${Object.keys(windows).join(', ') || '(none noted)'}`,
    );
    process.exitCode = 2;
  } else {
    console.log(profileLines(`${directory}, ${scenario ?? 'all'}`, summarizeProfiles(directory, chosen), Number(top)));
  }
}
