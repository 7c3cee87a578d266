/**
 * A preload (`node --import ./bench/gc-watch.mjs`) that watches a process's garbage collections and its event
 * loop's delay for bench/collections.ts. Each SIGUSR2 writes what was seen since the last one to
 * `$GC_WATCH_DIR/<pid>-<n>.json` and starts again; the first only starts the window.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { constants, monitorEventLoopDelay, PerformanceObserver } from 'node:perf_hooks';

const KINDS = new Map([
  [constants.NODE_PERFORMANCE_GC_MINOR, 'scavenge'],
  [constants.NODE_PERFORMANCE_GC_MAJOR, 'full'],
  [constants.NODE_PERFORMANCE_GC_INCREMENTAL, 'incremental'],
  [constants.NODE_PERFORMANCE_GC_WEAKCB, 'weak callbacks'],
]);

const directory = process.env.GC_WATCH_DIR;
if (directory) {
  const delay = monitorEventLoopDelay({ resolution: 2 });
  delay.enable();
  /** @type {Record<string, { count: number, ms: number, maxMs: number }>} */
  let collections = {};
  new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      const kind = KINDS.get(entry.detail?.kind) ?? 'other';
      const seen = (collections[kind] ??= { count: 0, ms: 0, maxMs: 0 });
      seen.count += 1;
      seen.ms += entry.duration;
      seen.maxMs = Math.max(seen.maxMs, entry.duration);
    }
  }).observe({ entryTypes: ['gc'] });
  let windows = 0;
  process.on('SIGUSR2', () => {
    if (windows > 0) {
      const ms = (nanoseconds) => nanoseconds / 1e6;
      const seen = {
        collections,
        delayMs: { p50: ms(delay.percentile(50)), p99: ms(delay.percentile(99)), max: ms(delay.max) },
      };
      writeFileSync(join(directory, `${process.pid}-${windows}.json`), JSON.stringify(seen));
    }
    windows += 1;
    collections = {};
    delay.reset();
  });
}
