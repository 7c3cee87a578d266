/**
 * Child processes of the benchmark: CLI runs and servers. Every child gets its own process group, so
 * that stopping it also stops the workers it forked; all of them are stopped when the benchmark ends,
 * fails or is interrupted.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { createServer } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { startCommand } from '../scripts/start-command.js';

/** The bench directory, and the repository where every child runs. */
export const BENCH_DIR = fileURLToPath(new URL('.', import.meta.url));
const REPO_ROOT = fileURLToPath(new URL('..', import.meta.url));

/** `coregate` as `npm start` runs it (its Node.js flags included): compiled to dist/ by `buildCoregate`. */
const start = startCommand();
export const COREGATE = { command: process.execPath, args: [...start.flags, start.entry] } as const;
/** The environment settings of `npm start` (glibc's malloc arenas), given to every server the bench starts. */
const START_ENV = start.env;

/** Where the bench's own servers (the ceiling, the hand-written anchor and forwarder) are compiled to. */
const BENCH_BUILD_DIR = join(REPO_ROOT, 'node_modules', '.cache', 'coregate-bench');

/**
 * Compiles coregate (`npm run build`), so the servers measured are the ones `npm start` runs, and the
 * bench's own servers the same way (esbuild, run by node with `npm start`'s flags), so no server measured
 * carries a TypeScript compiler.
 */
export async function buildServers(): Promise<void> {
  await runCommand(process.execPath, ['--import', 'tsx', 'scripts/build.ts'], process.env);
  await build({
    entryPoints: {
      ceiling: join(BENCH_DIR, 'ceiling.ts'),
      handwritten: join(BENCH_DIR, 'handwritten.ts'),
      forwarder: join(BENCH_DIR, 'forwarder.ts'),
    },
    outdir: BENCH_BUILD_DIR,
    bundle: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    packages: 'external',
    // For the CPU profiles of `--profile` (bench/cpu-profile.ts maps their frames back to the sources).
    sourcemap: true,
    logLevel: 'warning',
  });
}

/** The command line of a compiled bench server, with `npm start`'s Node.js flags. */
export function benchServer(name: 'ceiling' | 'handwritten' | 'forwarder', args: readonly string[] = []) {
  return { command: process.execPath, args: [...start.flags, join(BENCH_BUILD_DIR, `${name}.js`), ...args] };
}

/** Process groups of the children started: each child leads its own, with whatever it forks. */
const groups = new Set<number>();

/** Lines of a server's output kept to explain a failure. */
const TAIL_LINES = 40;
const READY_TIMEOUT_MS = 180_000;
const STOP_GRACE_MS = 3000;

function signalGroup(group: number, signal: NodeJS.Signals | 0): boolean {
  // -0 would be the benchmark's own group.
  if (group <= 0) return false;
  try {
    process.kill(-group, signal);
    return true;
  } catch {
    return false; // The group is gone.
  }
}

function track(child: ChildProcess): ChildProcess {
  if (child.pid !== undefined) groups.add(child.pid);
  return child;
}

/**
 * Stops a process group: SIGTERM, then SIGKILL to what is left after a grace period. Working on the
 * group, not the child, also stops workers that outlived their primary.
 */
async function stopGroup(group: number): Promise<void> {
  signalGroup(group, 'SIGTERM');
  const deadline = Date.now() + STOP_GRACE_MS;
  while (signalGroup(group, 0) && Date.now() < deadline) await sleep(100);
  signalGroup(group, 'SIGKILL');
  groups.delete(group);
}

/** Stops every child still running. */
export async function stopAllChildren(): Promise<void> {
  await Promise.all([...groups].map(stopGroup));
}

/**
 * Stops the children on Ctrl-C, SIGTERM and any exit; `onInterrupt` runs after them (e.g. to exit 130).
 */
export function installCleanup(onInterrupt: (signal: NodeJS.Signals) => void): void {
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      process.stderr.write(`\n${signal}: stopping the servers\n`);
      void stopAllChildren().then(() => onInterrupt(signal));
    });
  }
  // Last resort, synchronous: no grace period is possible here.
  process.once('exit', () => groups.forEach((group) => signalGroup(group, 'SIGKILL')));
}

export interface CommandResult {
  readonly stdout: string;
}

/**
 * Runs a command to completion. Its stderr goes to the terminal (progress bars stay live); its stdout
 * is captured and, with `echo`, copied to the terminal too. Rejects on a non-zero exit.
 */
export function runCommand(
  command: string,
  args: readonly string[],
  env: NodeJS.ProcessEnv,
  options: { echo?: boolean } = {},
): Promise<CommandResult> {
  const child = track(
    spawn(command, args, { cwd: REPO_ROOT, env, stdio: ['ignore', 'pipe', 'inherit'], detached: true }),
  );
  let stdout = '';
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk;
    if (options.echo) process.stdout.write(chunk);
  });
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code, signal) => {
      if (code === 0) resolve({ stdout });
      else reject(new Error(`${[command, ...args].join(' ')} failed (${signal ?? `exit ${code}`})\n${stdout}`));
    });
  });
}

/** A port nobody listens on right now. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      probe.close(() => resolve(port));
    });
  });
}

export interface ServerSpec {
  readonly name: string;
  readonly command: string;
  readonly args: readonly string[];
  readonly env: NodeJS.ProcessEnv;
  readonly port: number;
  /** GET path polled for readiness. */
  readonly readyPath: string;
  /** Ready on any HTTP answer (a mock knows no readiness route), not only a 200. */
  readonly anyAnswerIsReady?: boolean;
  /** Also wait for this line on the server's output (e.g. printed once all its workers listen). */
  readonly readyLine?: RegExp;
}

export interface Server {
  readonly name: string;
  readonly pid: number;
  readonly url: string;
  /** The last lines the server printed. */
  tail(): string;
  stop(): Promise<void>;
}

async function isReady(spec: ServerSpec): Promise<boolean> {
  try {
    const response = await fetch(`http://127.0.0.1:${spec.port}${spec.readyPath}`, {
      signal: AbortSignal.timeout(2000),
    });
    await response.arrayBuffer();
    return spec.anyAnswerIsReady === true || response.status === 200;
  } catch {
    return false;
  }
}

/** Starts a server and resolves once it answers; rejects with its output if it exits or never answers. */
export async function startServer(spec: ServerSpec): Promise<Server> {
  const child = track(
    spawn(spec.command, spec.args, {
      cwd: REPO_ROOT,
      env: { ...START_ENV, ...spec.env, PORT: String(spec.port) },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    }),
  );
  const { pid } = child;
  if (pid === undefined) {
    const error = await new Promise<Error>((resolve) => child.once('error', resolve));
    throw new Error(`${spec.name} could not start: ${error.message}`);
  }
  const closed = new Promise((resolve) => child.once('close', resolve));
  const lines: string[] = [];
  let sawReadyLine = spec.readyLine === undefined;
  const remember = (received: readonly string[]) => {
    sawReadyLine ||= received.some((line) => spec.readyLine?.test(line));
    lines.push(...received.filter(Boolean));
    lines.splice(0, Math.max(0, lines.length - TAIL_LINES));
  };
  for (const stream of [child.stdout, child.stderr]) {
    let partial = '';
    stream?.setEncoding('utf8').on('data', (chunk: string) => {
      const received = `${partial}${chunk}`.split('\n');
      partial = received.pop() ?? '';
      remember(received);
    });
    stream?.once('end', () => remember([partial]));
  }
  const server: Server = {
    name: spec.name,
    pid,
    url: `http://127.0.0.1:${spec.port}`,
    tail: () => lines.join('\n'),
    stop: () => stopGroup(pid),
  };
  const deadline = Date.now() + READY_TIMEOUT_MS;
  while (!(sawReadyLine && (await isReady(spec)))) {
    if (child.exitCode !== null || child.signalCode !== null || Date.now() > deadline) {
      await server.stop();
      // Its last words arrive once its output closes.
      await Promise.race([closed, sleep(STOP_GRACE_MS)]);
      throw new Error(`${spec.name} did not become ready:\n${server.tail()}`);
    }
    await sleep(250);
  }
  return server;
}

/** The resident set of a process and all its descendants, in bytes; 0 once it is gone. */
function processTreeRss(pid: number): number {
  let kilobytes = 0;
  for (const member of processTree(pid)) {
    try {
      kilobytes += Number(/^VmRSS:\s+(\d+)/m.exec(readFileSync(`/proc/${member}/status`, 'utf8'))?.[1] ?? 0);
    } catch {
      // The process exited while being read.
    }
  }
  return kilobytes * 1024;
}

/** Clock ticks per second of /proc's CPU times (USER_HZ: 100 on Linux). */
const TICKS_PER_SECOND = 100;

/** The pids of a process and all its descendants that are alive now. */
function processTree(pid: number): number[] {
  const found: number[] = [];
  const pending = [pid];
  while (pending.length > 0) {
    const current = pending.pop()!;
    try {
      for (const task of readdirSync(`/proc/${current}/task`)) {
        const listed = readFileSync(`/proc/${current}/task/${task}/children`, 'utf8').trim();
        if (listed) pending.push(...listed.split(/\s+/).map(Number));
      }
      found.push(current);
    } catch {
      // The process exited while being read.
    }
  }
  return found;
}

/** CPU time (user and system) a process has used, in ms; 0 once it is gone. */
function processCpuMs(pid: number): number {
  try {
    // The fields after the command name (which may hold spaces) start with the state, field 3.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_SECOND;
  } catch {
    return 0;
  }
}

/**
 * Measures the CPU time a process tree uses from now until `stop`, in ms. Processes are followed by pid, so
 * a worker that exits during the run loses its share (the benchmark's servers keep theirs).
 */
export function sampleCpu(pid: number): { stop(): number } {
  const before = new Map(processTree(pid).map((member) => [member, processCpuMs(member)]));
  return {
    stop: () => processTree(pid).reduce((total, member) => total + processCpuMs(member) - (before.get(member) ?? 0), 0),
  };
}

/** Context switches of a process's main thread so far (its event loop's waits and preemptions); 0 once it is gone. */
function contextSwitches(pid: number): number {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const count = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+)`, 'm').exec(status)?.[1] ?? 0);
    return count('voluntary_ctxt_switches') + count('nonvoluntary_ctxt_switches');
  } catch {
    return 0;
  }
}

/**
 * Counts the context switches of the main threads of a process tree from now until `stop`: how often its
 * event loops slept and woke (or were preempted), which costs CPU of its own on a virtual machine.
 */
export function sampleContextSwitches(pid: number): { stop(): number } {
  const before = new Map(processTree(pid).map((member) => [member, contextSwitches(member)]));
  return {
    stop: () =>
      processTree(pid).reduce((total, member) => total + contextSwitches(member) - (before.get(member) ?? 0), 0),
  };
}

/** Measures the CPU time some processes (not their children) use from now until `stop`, in ms. */
export function sampleCpuOf(pids: readonly number[]): { stop(): number } {
  const before = pids.map(processCpuMs);
  return { stop: () => pids.reduce((total, pid, i) => total + Math.max(0, processCpuMs(pid) - before[i]!), 0) };
}

const RSS_SAMPLE_MS = 500;

/** Samples the RSS of a process tree every 500 ms until stopped; `stop` returns the maximum seen. */
export function sampleRss(pid: number): { stop(): number } {
  let maximum = processTreeRss(pid);
  const timer = setInterval(() => (maximum = Math.max(maximum, processTreeRss(pid))), RSS_SAMPLE_MS);
  return {
    stop() {
      clearInterval(timer);
      return Math.max(maximum, processTreeRss(pid));
    },
  };
}
