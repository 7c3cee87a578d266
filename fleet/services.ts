/**
 * What the fleet runs on, all of it the run's own: a PostgreSQL cluster made with `initdb`, a Redis
 * server, and coregate instances compiled once into a directory of the run (so that a rebuild of dist/ by
 * someone else mid-run changes nothing). Each can be stopped and started again by a scenario.
 */
import { chmodSync, chownSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { postgresBinDir } from '../test/support/pg-cluster.js';
import { startCommand } from '../scripts/start-command.js';
import { killChild, runCommand, startChild, stopChild, type Child } from './children.js';

export const REPO_ROOT = fileURLToPath(new URL('..', import.meta.url));

/** Where the fleet's coregate is compiled to: inside the repository, where node_modules is found. */
export const FLEET_BUILD_DIR = join(REPO_ROOT, 'node_modules', '.cache', 'coregate-fleet', 'dist');

/** Compiles coregate as `npm run build` does, into the fleet's own directory. */
export async function buildCoregate(): Promise<void> {
  await runCommand(process.execPath, ['--import', 'tsx', join(REPO_ROOT, 'scripts', 'build.ts'), FLEET_BUILD_DIR]);
}

const POSTGRES_USER = 'postgres';

export interface Postgres {
  readonly port: number;
  url(database: string): string;
  /** A fast shutdown: every session is ended and no connection is accepted until `start`. */
  stop(): Promise<void>;
  start(): Promise<void>;
}

/**
 * Creates a cluster under `home` and starts it on `port`. As root, PostgreSQL's tools run as the
 * `postgres` user (the server refuses root), as in test/support/pg-cluster.ts.
 */
export async function startPostgres(home: string, port: number): Promise<Postgres> {
  const bin = postgresBinDir();
  if (!bin) throw new Error('PostgreSQL server binaries (initdb, pg_ctl) are not installed');
  const asRoot = process.getuid?.() === 0;
  mkdirSync(home, { recursive: true, mode: 0o700 });
  if (asRoot) {
    // The server's user must reach its directory through the run's (which only its owner may list).
    chmodSync(dirname(home), 0o711);
    const id = async (flag: string) => Number((await runCommand('id', [flag, POSTGRES_USER])).trim());
    chownSync(home, await id('-u'), await id('-g'));
  }
  const data = join(home, 'data');
  const run = (tool: string, args: readonly string[]) =>
    asRoot
      ? runCommand('runuser', ['-u', POSTGRES_USER, '--', join(bin, tool), ...args])
      : runCommand(join(bin, tool), args);
  await run('initdb', ['-D', data, '-A', 'trust', '-U', POSTGRES_USER, '--no-sync', '--no-instructions']);
  const options = `-p ${port} -k ${home} -c listen_addresses=127.0.0.1 -c max_connections=200 -c fsync=off`;
  const postgres: Postgres = {
    port,
    url: (database) => `postgres://${POSTGRES_USER}@127.0.0.1:${port}/${database}`,
    start: async () =>
      void (await run('pg_ctl', ['-D', data, '-o', options, '-l', join(home, 'server.log'), '-w', 'start'])),
    stop: async () => void (await run('pg_ctl', ['-D', data, '-m', 'fast', '-w', 'stop'])),
  };
  await postgres.start();
  return postgres;
}

export interface RedisServer {
  readonly port: number;
  /** `redis://127.0.0.1:<port>/<database>`: each fleet keeps its limits in a database of its own. */
  url(database: number): string;
  start(): Promise<void>;
  stop(): Promise<void>;
}

/** A Redis server of the run's own on `port`, nothing persisted (the limits it holds are short-lived). */
export function redisServer(port: number, logFile: string): RedisServer {
  let child: Child | undefined;
  return {
    port,
    url: (database) => `redis://127.0.0.1:${port}/${database}`,
    async start() {
      child = startChild(
        'redis',
        'redis-server',
        ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
        {
          logFile,
        },
      );
      for (let tries = 0; ; tries += 1) {
        const answer = await runCommand('redis-cli', ['-p', String(port), 'ping']).catch(() => '');
        if (answer.trim() === 'PONG') return;
        if (!child.running() || tries > 100) throw new Error(`redis-server did not start:\n${child.tail()}`);
        await sleep(50);
      }
    },
    async stop() {
      if (child) await stopChild(child);
      child = undefined;
    },
  };
}

const SERVING = /serving the Core Account Records API at/;
const READY_TIMEOUT_MS = 90_000;

export interface InstanceSpec {
  readonly name: string;
  readonly port: number;
  readonly workers: number;
  readonly env: NodeJS.ProcessEnv;
  readonly logFile: string;
}

/** One coregate instance (`serve --workers N`), started, stopped and killed as a scenario needs. */
export class Instance {
  private child: Child | undefined;

  constructor(readonly spec: InstanceSpec) {}

  get name(): string {
    return this.spec.name;
  }

  get url(): string {
    return `http://127.0.0.1:${this.spec.port}`;
  }

  /** The primary's pid (the group's), while it runs. */
  get pid(): number | undefined {
    return this.child?.running() ? this.child.pid : undefined;
  }

  /** Starts it and resolves once every worker listens and `/ready` answers 200. */
  async start(extraArgs: readonly string[] = []): Promise<void> {
    const start = startCommand();
    const args = [
      ...start.flags,
      join(FLEET_BUILD_DIR, 'coregate.js'),
      'serve',
      '--workers',
      String(this.spec.workers),
    ];
    const child = startChild(this.name, process.execPath, [...args, ...extraArgs], {
      cwd: REPO_ROOT,
      env: { ...process.env, ...start.env, ...this.spec.env, PORT: String(this.spec.port) },
      logFile: this.spec.logFile,
    });
    this.child = child;
    const deadline = Date.now() + READY_TIMEOUT_MS;
    while (!(SERVING.test(child.tail()) && (await this.ready()))) {
      if (!child.running() || Date.now() > deadline) {
        await killChild(child);
        throw new Error(`${this.name} did not become ready (${await child.exited}):\n${child.tail()}`);
      }
      await sleep(100);
    }
  }

  /** Whether `/ready` answers 200 now. */
  async ready(): Promise<boolean> {
    try {
      const response = await fetch(`${this.url}/ready`, { signal: AbortSignal.timeout(2000) });
      await response.arrayBuffer();
      return response.status === 200;
    } catch {
      return false;
    }
  }

  /**
   * SIGTERM to the primary, as `docker stop` and Kubernetes send it (to PID 1; the primary passes it on to
   * its workers), or with `group` to every process at once, as systemd's default KillMode does. Resolves
   * once every process has exited, with how the primary ended.
   */
  async terminate(options: { group?: boolean } = {}): Promise<string> {
    const child = this.child;
    if (!child) return 'not running';
    await stopChild(child, 30_000, { leaderOnly: !options.group });
    return child.exited;
  }

  /**
   * SIGKILL to the primary and its workers at once, as when its machine or container dies: sent when
   * called; resolves once every process of it is gone.
   */
  kill(): Promise<void> {
    return this.child ? killChild(this.child) : Promise.resolve();
  }

  tail(): string {
    return this.child?.tail() ?? '';
  }
}
