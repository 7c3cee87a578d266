/**
 * `coregate serve` as a user runs it: a real process, started from the source through tsx (or from a
 * compiled build), ready once it prints the line naming the URL it serves.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import pg from 'pg';
import { startCommand } from '../../scripts/start-command.js';

/** The command line from source, through tsx: what a suite run on its own starts. */
export const SOURCE_CLI: readonly string[] = ['--import', 'tsx', 'src/cli/main.ts'];

const built = process.env.COREGATE_TEST_CLI;
/** How `npm start` runs the build, when the suites run it. */
const start = built ? startCommand() : undefined;

/**
 * The command line the process-level suites start: under `npm test`, the build it compiled from the source
 * once at its start (`COREGATE_TEST_CLI`, scripts/test.ts), run as `npm start` runs dist/ (its Node.js flags
 * here, its environment in `spawnServe`), which starts in half the time and CPU of tsx compiling on every
 * start; run on their own, the source through tsx.
 */
export const CLI: readonly string[] = built && start ? [...start.flags, built] : SOURCE_CLI;

/** The environment `npm start` gives the build (its allocator settings), when the suites run the build. */
const BUILT_ENV: NodeJS.ProcessEnv = start?.env ?? {};

const SERVING = /serving the Core Account Records API at (http:\/\/[^ ]+)/;

export interface Served {
  readonly child: ChildProcess;
  readonly baseUrl: string;
  /** Everything it printed so far, stdout and stderr together. */
  output(): string;
}

export interface Starting {
  readonly child: ChildProcess;
  output(): string;
  /** Resolves once it serves (and `ready` matches its output); rejects if it exits first or takes 120 s (killed). */
  readonly listening: Promise<Served>;
}

export interface ServeOptions {
  /** The command line to run (default: CLI). */
  readonly cli?: readonly string[];
  /** Arguments after `serve`. */
  readonly args?: readonly string[];
  /** Added to this process's environment. */
  readonly env?: NodeJS.ProcessEnv;
  /** Also wait for this in the output (e.g. the demo banner). */
  readonly ready?: RegExp;
}

/** Starts `coregate serve`; see `Starting.listening`. */
export function spawnServe(options: ServeOptions = {}): Starting {
  const child = spawn(process.execPath, [...(options.cli ?? CLI), 'serve', ...(options.args ?? [])], {
    env: { ...BUILT_ENV, ...process.env, ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const listening = new Promise<Served>((resolve, reject) => {
    // A server that never listens is not left running; the timer holds no test process open.
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`serve did not listen within 120 s:\n${output}`));
    }, 120_000);
    timer.unref();
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const match = SERVING.exec(output);
      if (match && (options.ready?.test(output) ?? true)) {
        clearTimeout(timer);
        resolve({ child, baseUrl: match[1]!, output: () => output });
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`serve exited with ${code}:\n${output}`));
    });
  });
  return { child, output: () => output, listening };
}

/** Starts `coregate serve` and resolves once it serves. */
export function serve(options: ServeOptions = {}): Promise<Served> {
  return spawnServe(options).listening;
}

/** The resident memory of a process, in megabytes (Linux's /proc). */
export function rssMb(pid: number): number {
  const kb = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  return Number(kb) / 1024;
}

/** Sends SIGTERM (unless it has exited already) and resolves with the exit code. */
export function stop(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolve) => {
    child.removeAllListeners('exit');
    child.once('exit', (code) => resolve(code));
    child.kill('SIGTERM');
  });
}

/** Runs one statement on PostgreSQL over a connection of its own (creating and dropping test databases). */
export async function adminStatement(url: string, statement: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(statement);
  } finally {
    await client.end();
  }
}
