/**
 * The entry point of the bench's own servers (the ceiling, the hand-written anchor): `--workers W` runs W
 * processes through node:cluster, as `coregate serve --workers` does, each serving on `PORT`; SIGTERM
 * stops them all (each exits, so a profiled one writes its profile).
 */
import cluster from 'node:cluster';
import { parseArgs } from 'node:util';

/** @example runClustered((port) => serve(port)) */
export function runClustered(serve: (port: number) => Promise<void>): void {
  const { values } = parseArgs({ options: { workers: { type: 'string' } } });
  const workers = Number(values.workers ?? 1);
  const port = Number(process.env.PORT ?? 0);
  if (cluster.isPrimary && workers > 1) {
    for (let n = 0; n < workers; n += 1) cluster.fork();
    // The primary exits once its workers have: a worker under --cpu-prof writes its profile as it exits.
    let stopping = false;
    process.on('SIGTERM', () => {
      if (stopping) return;
      stopping = true;
      const alive = Object.values(cluster.workers ?? {}).filter((worker) => worker !== undefined);
      let left = alive.length;
      if (left === 0) process.exit(0);
      for (const worker of alive) {
        worker.once('exit', () => {
          left -= 1;
          if (left === 0) process.exit(0);
        });
        worker.kill();
      }
    });
    return;
  }
  // Exiting, not dying of the signal, lets a process run under --cpu-prof write its profile. The listener
  // stays: a second SIGTERM (the process group's and the primary's) would otherwise kill it mid-write.
  let exiting = false;
  process.on('SIGTERM', () => {
    if (exiting) return;
    exiting = true;
    process.exit(0);
  });
  void serve(port);
}
