/**
 * A preload (`node --import ./bench/alloc-watch.mjs`) that samples what a process allocates, for
 * bench/allocations.ts: V8's sampling heap profiler, keeping the samples of objects already collected, so it
 * counts every allocation, not only what is still alive. The first SIGUSR2 starts sampling, the second writes
 * what was sampled to `$ALLOC_WATCH_DIR/<pid>-<n>.heapprofile`, and so on in pairs.
 */
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';
import { join } from 'node:path';

/** Bytes between samples, on average (V8's default is 32 KB: too few samples for a request's few KB). */
const SAMPLING_INTERVAL = 256;

const directory = process.env.ALLOC_WATCH_DIR;
if (directory) {
  const session = new Session();
  session.connect();
  const report = (error) => error && console.error(`alloc-watch: ${error.message}`);
  let signals = 0;
  process.on('SIGUSR2', () => {
    const window = signals++;
    if (window % 2 === 0) {
      session.post('HeapProfiler.enable', (error) => {
        if (error) return report(error);
        session.post(
          'HeapProfiler.startSampling',
          {
            samplingInterval: SAMPLING_INTERVAL,
            includeObjectsCollectedByMajorGC: true,
            includeObjectsCollectedByMinorGC: true,
          },
          report,
        );
      });
      return;
    }
    session.post('HeapProfiler.stopSampling', (error, result) => {
      if (error) return report(error);
      writeFileSync(join(directory, `${process.pid}-${window}.heapprofile`), JSON.stringify(result.profile));
    });
  });
}
