/**
 * node:test's spec reporter, with a progress line at least every 30 s while the run lasts:
 * `… 1200 tests (0 failed), 24/67 files, 9 min`. A process-level suite can take minutes, and spec prints a
 * file's tests only when they end, so without it the output is silent that long. The progress lines stop
 * before the run's summary, so node's own summary (`ℹ tests …`) stays the last thing printed (CI reads it).
 * Run: node --test --test-reporter=./test/support/progress-reporter.mjs; scripts/test.ts passes the number of
 * files in TEST_FILE_COUNT.
 */
import { Transform } from 'node:stream';
import { clearInterval, setInterval } from 'node:timers';
import { spec } from 'node:test/reporters';

const EVERY_MS = Number(process.env.TEST_PROGRESS_EVERY_MS) || 30_000;

export default class ProgressReporter extends Transform {
  #spec = new spec();
  #started = Date.now();
  #tests = 0;
  #failed = 0;
  #files = 0;
  #fileCount = Number(process.env.TEST_FILE_COUNT) || undefined;
  #timer;
  #lastLine = Date.now();

  constructor() {
    super({ writableObjectMode: true });
    this.#spec.on('data', (text) => {
      this.#lastLine = Date.now();
      this.push(text);
    });
    this.#timer = setInterval(() => this.#tick(), 1000).unref();
  }

  #tick() {
    if (Date.now() - this.#lastLine < EVERY_MS) return;
    const minutes = Math.floor((Date.now() - this.#started) / 60_000);
    const files = this.#fileCount ? `${this.#files}/${this.#fileCount} files` : `${this.#files} files`;
    this.#lastLine = Date.now();
    this.push(`… ${this.#tests} tests (${this.#failed} failed), ${files}, ${minutes} min\n`);
  }

  _transform(event, _encoding, done) {
    const { type, data } = event;
    // The run's own plan comes once every file has ended, just before its summary: no progress after it.
    if (type === 'test:plan' && data.file === undefined && data.nesting === 0) clearInterval(this.#timer);
    if ((type === 'test:pass' || type === 'test:fail') && data.details?.type !== 'suite' && data.name !== data.file) {
      this.#tests += 1;
      if (type === 'test:fail') this.#failed += 1;
    }
    if (type === 'test:complete' && data.nesting === 0 && data.name === data.file) this.#files += 1;
    this.#spec.write(event, done);
  }

  _flush(done) {
    clearInterval(this.#timer);
    this.#spec.once('end', () => done());
    this.#spec.end();
  }
}
