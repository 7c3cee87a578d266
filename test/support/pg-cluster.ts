/**
 * A PostgreSQL cluster of the test's own: created with `initdb` in a temporary directory, served on a
 * free loopback port, and stopped and started by the test (outages are real server restarts, not mocks).
 * As root, the server binaries run as the `postgres` user, since PostgreSQL refuses to run as root.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface PgCluster {
  /** `postgres://postgres@127.0.0.1:<port>/postgres` */
  readonly url: string;
  readonly port: number;
  start(): void;
  /** A fast shutdown: the server ends every session (57P01) and stops accepting connections. */
  stop(): void;
  /** Stops the server and deletes the cluster. */
  remove(): void;
}

/** The directory of `initdb` and `pg_ctl`: on PATH, or Debian's /usr/lib/postgresql/<version>/bin. */
export function postgresBinDir(): string | undefined {
  const which = spawnSync('sh', ['-c', 'command -v initdb'], { encoding: 'utf8' });
  if (which.status === 0 && which.stdout.trim()) return join(which.stdout.trim(), '..');
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root).sort((a, b) => Number(b) - Number(a));
  return versions.map((version) => join(root, version, 'bin')).find((dir) => existsSync(join(dir, 'initdb')));
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

const POSTGRES_USER = 'postgres';

function postgresIds(): { uid: number; gid: number } {
  const uid = Number(execFileSync('id', ['-u', POSTGRES_USER], { encoding: 'utf8' }).trim());
  const gid = Number(execFileSync('id', ['-g', POSTGRES_USER], { encoding: 'utf8' }).trim());
  return { uid, gid };
}

/** Creates and starts a cluster; throws when PostgreSQL's server binaries are not installed. */
export async function createPgCluster(): Promise<PgCluster> {
  const bin = postgresBinDir();
  if (!bin) throw new Error('PostgreSQL server binaries (initdb, pg_ctl) are not installed');
  const asRoot = process.getuid?.() === 0;
  const home = mkdtempSync(join(tmpdir(), 'coregate-pg-'));
  const data = join(home, 'data');
  if (asRoot) {
    const { uid, gid } = postgresIds();
    chownSync(home, uid, gid);
  }
  chmodSync(home, 0o700);
  const run = (command: string, args: readonly string[]) => {
    const [file, argv] = asRoot
      ? ['runuser', ['-u', POSTGRES_USER, '--', join(bin, command), ...args]]
      : [join(bin, command), args];
    const result = spawnSync(file, argv, { encoding: 'utf8', cwd: home });
    if (result.status !== 0) throw new Error(`${command} ${args.join(' ')} failed:\n${result.stdout}${result.stderr}`);
  };
  run('initdb', ['-D', data, '-A', 'trust', '-U', POSTGRES_USER, '--no-sync', '--no-instructions']);
  const port = await freePort();
  const options = `-p ${port} -k ${home} -c listen_addresses=127.0.0.1 -c max_connections=60`;
  const cluster: PgCluster = {
    url: `postgres://${POSTGRES_USER}@127.0.0.1:${port}/postgres`,
    port,
    start: () => run('pg_ctl', ['-D', data, '-o', options, '-l', join(home, 'server.log'), '-w', 'start']),
    stop: () => run('pg_ctl', ['-D', data, '-m', 'fast', '-w', 'stop']),
    remove: () => {
      try {
        cluster.stop();
      } catch {
        // already stopped
      }
      rmSync(home, { recursive: true, force: true });
    },
  };
  cluster.start();
  return cluster;
}
