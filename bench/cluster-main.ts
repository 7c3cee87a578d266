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
    process.once('SIGTERM', () => {
      for (const worker of Object.values(cluster.workers ?? {})) worker?.kill();
      process.exit(0);
    });
    return;
  }
  // Exiting, not dying of the signal, lets a process run under --cpu-prof write its profile.
  process.once('SIGTERM', () => process.exit(0));
  void serve(port);
}
