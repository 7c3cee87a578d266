/**
 * The fleet's child processes (PostgreSQL's tools, Redis, HAProxy, coregate): each leads a process group
 * of its own, so that a signal reaches a `serve --workers` primary and its workers together, as a container
 * runtime's would. Every group still running is killed when the fleet run ends, however it ends.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';

/** Lines of a child's output kept to explain a failure (the whole output is in its log file). */
const TAIL_LINES = 30;

export interface Child {
  readonly name: string;
  readonly pid: number;
  /** Resolves when the process has exited, with its code or signal. */
  readonly exited: Promise<string>;
  running(): boolean;
  /** Sends a signal to the whole process group, or with `leaderOnly` to the process started alone. */
  signal(signal: NodeJS.Signals, options?: { leaderOnly?: boolean }): void;
  /** The last lines it printed. */
  tail(): string;
}

const groups = new Set<number>();

function signalGroup(group: number, signal: NodeJS.Signals | 0): boolean {
  // Group 0 would be the fleet run's own.
  if (group <= 0) return false;
  try {
    process.kill(-group, signal);
    return true;
  } catch {
    return false; // The group is gone.
  }
}

/** Starts a command in its own process group, its output appended to `logFile`. */
export function startChild(
  name: string,
  command: string,
  args: readonly string[],
  options: { env?: NodeJS.ProcessEnv; cwd?: string; logFile: string },
): Child {
  const log = createWriteStream(options.logFile, { flags: 'a' });
  const child: ChildProcess = spawn(command, args, {
    cwd: options.cwd,
    env: options.env ?? process.env,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  const pid = child.pid;
  if (pid === undefined) throw new Error(`${name}: ${command} could not be started`);
  groups.add(pid);
  const lines: string[] = [];
  for (const stream of [child.stdout, child.stderr]) {
    stream?.setEncoding('utf8').on('data', (chunk: string) => {
      log.write(chunk);
      lines.push(...chunk.split('\n').filter(Boolean));
      lines.splice(0, Math.max(0, lines.length - TAIL_LINES));
    });
  }
  let exitedWith: string | undefined;
  const exited = new Promise<string>((resolve) =>
    child.once('exit', (code, signal) => {
      exitedWith = signal ?? `exit ${code}`;
      // A group whose leader is gone may still hold workers; they are killed with it at the end.
      log.end();
      resolve(exitedWith);
    }),
  );
  return {
    name,
    pid,
    exited,
    running: () => exitedWith === undefined,
    signal: (signal, options) => {
      if (!options?.leaderOnly) signalGroup(pid, signal);
      else if (exitedWith === undefined) child.kill(signal);
    },
    tail: () => lines.join('\n'),
  };
}

/**
 * SIGTERM, then SIGKILL to whatever is left of the group after `graceMs`. With `leaderOnly` the SIGTERM
 * goes to the process started alone (as `docker stop` or Kubernetes send it to PID 1), else to the group.
 */
export async function stopChild(child: Child, graceMs = 15_000, options: { leaderOnly?: boolean } = {}): Promise<void> {
  child.signal('SIGTERM', options);
  const deadline = Date.now() + graceMs;
  while (signalGroup(child.pid, 0) && Date.now() < deadline) await sleep(50);
  signalGroup(child.pid, 'SIGKILL');
  await child.exited;
  groups.delete(child.pid);
}

/** Kills the group at once (SIGKILL) and waits until every process of it is gone. */
export async function killChild(child: Child): Promise<void> {
  signalGroup(child.pid, 'SIGKILL');
  await child.exited;
  while (signalGroup(child.pid, 0)) await sleep(20);
  groups.delete(child.pid);
}

/** Kills every group still running; synchronous, so that it can run in an `exit` handler. */
export function killAllChildren(): void {
  for (const group of groups) signalGroup(group, 'SIGKILL');
  groups.clear();
}

/** Runs a command to completion; rejects with its output on a non-zero exit. */
export function runCommand(command: string, args: readonly string[], env?: NodeJS.ProcessEnv): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(command, args, { env: env ?? process.env, encoding: 'utf8' }, (error, stdout, stderr) => {
      if (error) reject(new Error(`${command} ${args.join(' ')} failed: ${error.message}\n${stdout}${stderr}`));
      else resolve(stdout);
    });
  });
}
