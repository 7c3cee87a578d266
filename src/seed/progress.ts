/**
 * A dependency-free progress report on stderr for long runs (seeding, import). On a terminal: one line
 * redrawn in place with a bar, count, percent, rate and ETA. Elsewhere (CI logs, files): a plain line at
 * every 10%, so logs stay short and readable.
 */

export interface Progress {
  update(done: number): void;
  /** Prints the final line (count, elapsed time, rate). */
  finish(): void;
}

/** What the report writes to: stderr by default; `isTTY` selects the redrawn bar. */
export interface ProgressOutput {
  readonly isTTY?: boolean;
  readonly columns?: number;
  write(text: string): unknown;
}

const BAR_WIDTH = 30;
/** Redraw at most this often: a redraw per account would cost more than the work it reports. */
const REDRAW_INTERVAL_MS = 100;

const integer = new Intl.NumberFormat('en-US', { maximumFractionDigits: 0 });

/** @example formatDuration(3725) // '1:02:05' */
export function formatDuration(seconds: number): string {
  if (!Number.isFinite(seconds)) return '--:--';
  const whole = Math.max(0, Math.round(seconds));
  const hours = Math.floor(whole / 3600);
  const minutes = Math.floor((whole % 3600) / 60);
  const secs = String(whole % 60).padStart(2, '0');
  return hours > 0 ? `${hours}:${String(minutes).padStart(2, '0')}:${secs}` : `${minutes}:${secs}`;
}

/**
 * @example
 * const progress = createProgress('Seeding accounts', 20_000);
 * await seedDatabase(database, secrets, { accounts: 20_000, seed, onProgress: (done) => progress.update(done) });
 * progress.finish();
 */
export function createProgress(
  label: string,
  total: number,
  output: ProgressOutput = process.stderr,
  now: () => number = () => performance.now(),
): Progress {
  const started = now();
  let done = 0;
  let lastDraw = -Infinity;
  let lastDecile = 0;

  const rate = () => done / Math.max((now() - started) / 1000, 1e-3);
  const percent = () => (total > 0 ? (100 * done) / total : 100);

  function line(): string {
    const perSecond = rate();
    const eta = perSecond > 0 ? (total - done) / perSecond : Infinity;
    return `${label} ${integer.format(done)}/${integer.format(total)} ${percent().toFixed(1)}% ${integer.format(perSecond)}/s ETA ${formatDuration(eta)}`;
  }

  function drawBar(): void {
    const filled = total > 0 ? Math.round((BAR_WIDTH * Math.min(done, total)) / total) : BAR_WIDTH;
    const text = `[${'#'.repeat(filled)}${'-'.repeat(BAR_WIDTH - filled)}] ${line()}`;
    // \r and clear-to-end-of-line: redraw in place; cut to the terminal width so it never wraps.
    output.write(`\r${text.slice(0, (output.columns ?? 120) - 1)}\x1b[K`);
  }

  return {
    update(value) {
      done = Math.min(Math.max(value, 0), total);
      if (output.isTTY) {
        const time = now();
        if (time - lastDraw < REDRAW_INTERVAL_MS && done < total) return;
        lastDraw = time;
        drawBar();
        return;
      }
      const decile = total > 0 ? Math.floor((10 * done) / total) : 10;
      if (decile > lastDecile) {
        lastDecile = decile;
        output.write(`${line()}\n`);
      }
    },
    finish() {
      const seconds = (now() - started) / 1000;
      const summary = `${label} done: ${integer.format(done)} in ${formatDuration(seconds)} (${integer.format(rate())}/s)\n`;
      output.write(output.isTTY ? `\r\x1b[K${summary}` : summary);
    },
  };
}
