/**
 * NDJSON in and out of the admin API, in bounded memory: an answer streamed line by line as the client reads
 * it (a producer waits while the client's buffer is full), and a request body spooled to a temporary file
 * within a size limit, then read back line by line with a bound on a line's length.
 */
import { once } from 'node:events';
import { createReadStream, createWriteStream, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { finished, PassThrough, Transform, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { Problem } from '../contract/problems.js';

export const NDJSON = 'application/x-ndjson';

/** Writes one line; a promise when the reader's buffer is full, settled once it has room again. */
export type LineWriter = (line: string) => Promise<void> | undefined;

export interface StreamedLines {
  /** The answer's body. */
  readonly body: Readable;
  /** Settles when the producer has finished (rejecting when it failed after the first line). */
  readonly done: Promise<void>;
}

/**
 * Runs `produce`, giving it a writer into a stream that is the answer's body, and resolves once the first
 * line is written (or `produce` ended without any): a failure before that rejects, so that it is answered
 * as a problem, not as a 200 with an empty body. A failure later ends the stream unfinished, which the client
 * sees as a cut-off answer. A reader that takes no line for `stallMs`, or that goes away (`gone` aborts, at
 * any time, before the first line too), makes the writer throw, so the producer stops at its next line.
 * @example const { body } = await streamLines((write) => exportRecords(db, write), { stallMs: 30_000, gone });
 */
export async function streamLines(
  produce: (write: LineWriter) => Promise<unknown>,
  options: { readonly stallMs: number; readonly gone?: AbortSignal },
): Promise<StreamedLines> {
  const body = new PassThrough();
  const { gone } = options;
  const leave = () => body.destroy();
  if (gone?.aborted) leave();
  gone?.addEventListener('abort', leave, { once: true });
  body.once('close', () => gone?.removeEventListener('abort', leave));
  let first: (() => void) | undefined;
  const started = new Promise<void>((resolve) => (first = resolve));
  const write: LineWriter = (line) => {
    if (body.destroyed) throw new Error('the client went away');
    first?.();
    first = undefined;
    return body.write(`${line}\n`) ? undefined : drained(body, options.stallMs);
  };
  const done = produce(write).then(
    () => {
      first?.();
      body.end();
    },
    (error: unknown) => {
      body.destroy(error as Error);
      throw error;
    },
  );
  await Promise.race([started, done]);
  // Once the answer has begun, a later failure is the stream's (the caller logs it).
  done.catch(() => undefined);
  return { body, done };
}

/** Resolves when `stream` can take more; rejects when it is closed or takes nothing for `stallMs`. */
async function drained(stream: PassThrough, stallMs: number): Promise<void> {
  // Aborted once either event came (or the time ran out), so no listener outlives its wait.
  const waiting = new AbortController();
  const stalled = setTimeout(() => waiting.abort(), stallMs);
  const { signal } = waiting;
  try {
    await Promise.race([once(stream, 'drain', { signal }), once(stream, 'close', { signal })]);
  } catch {
    const error = new Error(`the client read nothing for ${stallMs} ms`);
    stream.destroy(error);
    throw error;
  } finally {
    clearTimeout(stalled);
    waiting.abort();
  }
  if (stream.destroyed) throw new Error('the client went away');
}

/** A request body spooled to a file of its own (mode 0600); `remove` deletes it. */
export interface SpooledBody {
  readonly file: string;
  remove(): void;
}

/**
 * Copies a request body to a temporary file, refusing it with 413 once it is larger than `limitBytes`: the
 * upload, however slow, then holds no transaction (the embedded database serves one at a time). A refused
 * body is dropped as it arrives, not destroyed: that would close the connection before the 413 is out.
 */
export async function spoolBody(body: Readable, limitBytes: number): Promise<SpooledBody> {
  const directory = mkdtempSync(join(tmpdir(), 'coregate-import-'));
  const file = join(directory, 'records.ndjson');
  const remove = () => rmSync(directory, { recursive: true, force: true });
  let received = 0;
  const limited = new Transform({
    transform(chunk: Buffer, _encoding, next) {
      received += chunk.length;
      if (received <= limitBytes) return next(null, chunk);
      next(
        new Problem(
          413,
          'PAYLOAD_TOO_LARGE',
          `The records file is larger than ${limitBytes} bytes (COREGATE_IMPORT_LIMIT_MB)`,
        ),
      );
    },
  });
  body.pipe(limited);
  // A body cut off (its client gone) fails the copy; pipe() alone would leave it waiting.
  finished(body, (error) => error && limited.destroy(error));
  try {
    await pipeline(limited, createWriteStream(file, { mode: 0o600 }));
  } catch (error) {
    // What is left of the body is dropped as it arrives.
    body.unpipe(limited);
    body.resume();
    remove();
    throw error;
  }
  return { file, remove };
}

/**
 * The lines of a file (a final line without a newline included, `\r\n` read as one), each at most
 * `maxLineBytes` long: a longer one is refused with `tooLong(lineNumber)`, so that no line is held whole in
 * memory beyond the bound.
 */
export async function* fileLines(
  file: string,
  maxLineBytes: number,
  tooLong: (lineNumber: number) => Error,
): AsyncGenerator<string> {
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  let lineNumber = 1;
  const line = () => {
    const text = Buffer.concat(pending, pendingBytes).toString('utf8');
    pending = [];
    pendingBytes = 0;
    lineNumber += 1;
    return text.endsWith('\r') ? text.slice(0, -1) : text;
  };
  for await (const chunk of createReadStream(file) as AsyncIterable<Buffer>) {
    let start = 0;
    for (let end = chunk.indexOf(10); end !== -1; end = chunk.indexOf(10, start)) {
      pending.push(chunk.subarray(start, end));
      pendingBytes += end - start;
      if (pendingBytes > maxLineBytes) throw tooLong(lineNumber);
      yield line();
      start = end + 1;
    }
    pending.push(chunk.subarray(start));
    pendingBytes += chunk.length - start;
    if (pendingBytes > maxLineBytes) throw tooLong(lineNumber);
  }
  if (pendingBytes > 0) yield line();
}
