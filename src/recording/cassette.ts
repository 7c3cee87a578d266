/**
 * A cassette (docs/recording.md): the exchanges a gateway had with a core, one NDJSON line each, in files
 * of the record dir named by the time they were started (`cassette-<time>.ndjson`). The writer never makes
 * a call wait: lines go to a bounded queue, a full queue drops the line and counts it, and one loop appends
 * them. A file past its size is closed and the next one started; past the total size, the oldest goes.
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { open, readdir, rm, stat, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';

/** One exchange as a cassette line holds it, its member data already scrubbed. */
export interface CassetteLine {
  /** The SymXchange release the core speaks (`3.0`, `2020.00`). */
  readonly release: string;
  /** The SymXchange service and the wire operation (`account`, `getShareSelectFields`). */
  readonly service: string;
  readonly operation: string;
  /** The coregate operation the exchange is of: its family and name (`P2 getShareSelectFields`). */
  readonly family: string;
  readonly name: string;
  /** The request as JSON, scrubbed (its credentials never written). */
  readonly request: unknown;
  /** The core's answer decoded into JSON, scrubbed; absent for a fault or a failure. */
  readonly answer?: unknown;
  /** SHA-256 (hex) of the answer's bytes as the core sent them; absent when none was read. */
  readonly answerSha256?: string;
  /** `ok`, or the problem the call became: its status and code (a fault, a failure). */
  readonly status: number;
  readonly outcome: string;
  /** The problem's detail (coregate's words, never the core's text) and Retry-After, for a problem. */
  readonly detail?: string;
  readonly retryAfter?: string;
  /** The core's fault class and code, for a fault. */
  readonly fault?: { readonly faultcode?: string; readonly code?: string };
  readonly latencyMs: number;
  /** ISO 8601, when the exchange began. */
  readonly time: string;
}

export interface CassetteLimits {
  readonly fileBytes: number;
  readonly totalBytes: number;
  readonly queueLines: number;
}

export interface CassetteCounts {
  readonly written: number;
  readonly dropped: number;
}

export interface CassetteWriter {
  /** Queues a line; returns false when the queue was full and the line was dropped. Never waits. */
  append(line: CassetteLine): boolean;
  counts(): CassetteCounts;
  /** Resolves once every queued line is written (or dropped for an error). */
  flush(): Promise<void>;
  close(): Promise<void>;
}

const CASSETTE_FILE = /^cassette-.*\.ndjson$/;
/** The generated recording secret's file in the record dir: never handed out with the cassettes. */
export const RECORDING_SECRET_FILE = 'recording.secret';

/**
 * The recording secret: COREGATE_RECORD_SECRET, else the record dir's generated one (made once, 0600).
 * @example recordingSecret('/var/coregate/recordings', undefined).length // 32
 */
export function recordingSecret(dir: string, given: string | undefined): Buffer {
  if (given !== undefined) return Buffer.from(given, 'utf8');
  mkdirSync(dir, { recursive: true });
  const file = join(dir, RECORDING_SECRET_FILE);
  if (!existsSync(file)) {
    writeFileSync(file, `${randomBytes(32).toString('hex')}\n`, { mode: 0o600, flag: 'wx' });
    chmodSync(file, 0o600);
  }
  return Buffer.from(readFileSync(file, 'utf8').trim(), 'hex');
}

/** The cassette files of a dir, oldest first. */
export async function cassetteFiles(dir: string): Promise<string[]> {
  return (await readdir(dir)).filter((name) => CASSETTE_FILE.test(name)).sort();
}

/**
 * The writer of a record dir's cassettes.
 * @example const writer = cassetteWriter('/var/coregate/recordings', { fileBytes: 64 << 20, totalBytes: 1 << 30, queueLines: 10_000 }, onError);
 */
export function cassetteWriter(dir: string, limits: CassetteLimits, onError: (error: unknown) => void): CassetteWriter {
  mkdirSync(dir, { recursive: true });
  const queue: string[] = [];
  let written = 0;
  let dropped = 0;
  let file: { handle: FileHandle; size: number } | undefined;
  let sequence = 0;
  let running: Promise<void> | undefined;
  let closed = false;

  const startFile = async () => {
    const stamp = new Date().toISOString().replace(/[:.]/g, '-');
    sequence += 1;
    const name = `cassette-${stamp}-${String(sequence).padStart(6, '0')}.ndjson`;
    file = { handle: await open(join(dir, name), 'a', 0o600), size: 0 };
    await keepWithinTotal(name);
  };

  /** Drops the oldest files until the others and the current one fit the total bound. */
  const keepWithinTotal = async (current: string) => {
    const names = await cassetteFiles(dir);
    const sizes = await Promise.all(names.map(async (name) => (await stat(join(dir, name))).size));
    let total = sizes.reduce((sum, size) => sum + size, 0);
    for (let i = 0; i < names.length && total > limits.totalBytes - limits.fileBytes; i += 1) {
      if (names[i] === current) break;
      await rm(join(dir, names[i]!), { force: true });
      total -= sizes[i]!;
    }
  };

  const drain = async () => {
    while (queue.length > 0) {
      let batch: string[] | undefined;
      try {
        if (!file || (file.size > 0 && file.size + Buffer.byteLength(queue[0]!) > limits.fileBytes)) {
          await file?.handle.close();
          await startFile();
        }
        // As many lines as the file has room for (one at least), written at once.
        const room = limits.fileBytes - file!.size;
        let bytes = 0;
        let count = 0;
        while (count < queue.length && count < 256) {
          const size = Buffer.byteLength(queue[count]!);
          if (count > 0 && bytes + size > room) break;
          bytes += size;
          count += 1;
        }
        batch = queue.splice(0, count);
        await file!.handle.write(batch.join(''));
        file!.size += bytes;
        written += batch.length;
      } catch (error) {
        // The batch in hand, or (a file that could not be started) the line that waited for it.
        dropped += batch ? batch.length : queue.splice(0, 1).length;
        onError(error);
      }
    }
  };

  const kick = () => {
    running ??= drain().finally(() => {
      running = undefined;
      if (queue.length > 0 && !closed) kick();
    });
    return running;
  };

  return {
    append(line) {
      if (closed || queue.length >= limits.queueLines) {
        dropped += 1;
        return false;
      }
      queue.push(`${JSON.stringify(line)}\n`);
      void kick();
      return true;
    },
    counts: () => ({ written, dropped }),
    async flush() {
      while (running || queue.length > 0) await kick();
    },
    async close() {
      await this.flush();
      closed = true;
      await file?.handle.close();
      file = undefined;
    },
  };
}
