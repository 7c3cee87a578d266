/**
 * One owner per embedded data directory. PGlite is a single-process database: two processes that open
 * one directory each work on their own copy in memory, and the last to write wins on disk. So a process
 * opens the embedded database only while it holds `<dataDir>/coregate.lock`, a file created atomically
 * (link, which fails when the file exists) and holding who owns it. A second process fails at once, naming
 * the owner. A lock whose process is gone (a crash, `kill -9`) is stale and is replaced.
 *
 * Liveness is judged on this host (`process.kill(pid, 0)`, and on Linux the process start time, so a
 * reused pid does not keep a dead lock alive): the data directory is meant to be local. A lock written on
 * another host is never taken over; the error names the file to delete.
 */
import { createHash, randomBytes } from 'node:crypto';
import { linkSync, mkdirSync, readFileSync, renameSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { basename, join, resolve } from 'node:path';

export const LOCK_FILE = 'coregate.lock';

/** What the lock file holds. */
export interface LockHolder {
  readonly pid: number;
  readonly hostname: string;
  /** The command the owner runs, e.g. `coregate serve`, to name it to a second process. */
  readonly command: string;
  readonly startedAt: string;
  /** Random: tells this lock from any other, also another of the same process. */
  readonly id: string;
  /** Linux: the owner's start time in clock ticks since boot (`/proc/<pid>/stat`), which a reused pid does not share. */
  readonly processStart?: string;
}

export interface DataDirLock {
  readonly file: string;
  readonly holder: LockHolder;
  /** The stale lock this one replaced; `null` when it could not be read. */
  readonly tookOver: LockHolder | null | undefined;
  /** Deletes the lock file if it is still this lock (never another's). Idempotent. */
  release(): void;
}

/** A second process asked for a data directory another one holds. */
export class DataDirLockedError extends Error {
  readonly code = 'DATA_DIR_LOCKED';
  constructor(
    readonly dataDir: string,
    readonly holder: LockHolder,
    readonly file: string,
  ) {
    const elsewhere = holder.hostname !== hostname();
    super(
      `the embedded database in ${dataDir} is in use by process ${holder.pid}${elsewhere ? ` on host ${holder.hostname}` : ''} ` +
        `(${holder.command}, since ${since(holder)}); stop it first` +
        `${elsewhere ? ` (if it no longer runs there, delete ${file})` : ''}, ` +
        'or use DATABASE_URL (PostgreSQL) to share a database between processes',
    );
    this.name = 'DataDirLockedError';
  }
}

/** How long to wait for another process that is replacing the same stale lock (it takes milliseconds). */
const TAKEOVER_WAIT_MS = 2_000;
const TAKEOVER_POLL_MS = 20;

/**
 * Takes the lock of a data directory (created if missing), replacing a stale one.
 *
 * @example
 * const lock = await lockDataDir('./data', 'coregate serve');
 * try { ... } finally { lock.release(); }
 */
export async function lockDataDir(dataDir: string, command = commandOfThisProcess()): Promise<DataDirLock> {
  const directory = resolve(dataDir);
  mkdirSync(directory, { recursive: true });
  const file = join(directory, LOCK_FILE);
  const content = `${JSON.stringify(holderOfThisProcess(command))}\n`;
  const deadline = Date.now() + TAKEOVER_WAIT_MS;
  for (;;) {
    const outcome = claim(file, content);
    if (outcome.kind === 'owned') return ownedLock(file, content, outcome.tookOver);
    if (outcome.kind === 'held') throw new DataDirLockedError(directory, outcome.holder, file);
    if (Date.now() > deadline) {
      if (outcome.kind === 'contended') throw new DataDirLockedError(directory, outcome.holder, file);
      throw new Error(`could not take the lock ${file}: it keeps changing`);
    }
    await new Promise((done) => setTimeout(done, TAKEOVER_POLL_MS));
  }
}

/** One line for the log when a lock replaced a stale one. */
export function tookOverMessage(lock: DataDirLock): string {
  const stale = lock.tookOver;
  const of = stale ? `of process ${stale.pid} (${stale.command}, since ${since(stale)})` : '(unreadable)';
  return `took over the stale lock ${of} on ${lock.file}: that process is gone`;
}

type Claim =
  | { readonly kind: 'owned'; readonly tookOver?: LockHolder | null }
  /** A live process owns it. */
  | { readonly kind: 'held'; readonly holder: LockHolder }
  /** A live process is replacing the same stale lock right now: look again shortly. */
  | { readonly kind: 'contended'; readonly holder: LockHolder }
  /** The file changed under us: look again. */
  | { readonly kind: 'again' };

/**
 * Creates `file` with `content`, or replaces it when it is stale. Of several processes replacing one
 * stale lock, exactly one does: each first claims `<file>.<digest of the stale content>.takeover` (the
 * same claim, taken the same way, so a claim left by a crash is itself replaced), then, holding it, checks
 * that the file is still that stale lock and renames its own over it. Nothing else replaces a lock
 * that exists, so the check stays true until the rename.
 */
function claim(file: string, content: string): Claim {
  if (createExclusive(file, content)) return { kind: 'owned' };
  const stale = readLock(file);
  if (stale === undefined) return { kind: 'again' };
  if (stale.holder && isRunning(stale.holder)) return { kind: 'held', holder: stale.holder };
  const takeover = `${file}.${stale.digest}.takeover`;
  const claimed = claim(takeover, content);
  if (claimed.kind === 'held' || claimed.kind === 'contended') return { kind: 'contended', holder: claimed.holder };
  if (claimed.kind === 'again') return claimed;
  try {
    if (readLock(file)?.digest !== stale.digest) return { kind: 'again' };
    writeAtomically(file, content, (temporary) => renameSync(temporary, file));
    return { kind: 'owned', tookOver: stale.holder };
  } finally {
    removeIfOurs(takeover, content);
  }
}

function ownedLock(file: string, content: string, tookOver: LockHolder | null | undefined): DataDirLock {
  // A process that ends without closing the database (an error, process.exit) still gives the lock up;
  // one killed outright leaves it stale. Exiting is no time to throw: a lock left behind is only stale.
  const releaseOnExit = () => {
    try {
      removeIfOurs(file, content);
    } catch {
      // left stale
    }
  };
  const release = () => {
    process.removeListener('exit', releaseOnExit);
    removeIfOurs(file, content);
  };
  process.on('exit', releaseOnExit);
  return { file, holder: JSON.parse(content) as LockHolder, tookOver, release };
}

/** Writes `content` to a file of its own beside `file`, hands it to `place`, and removes it. */
function writeAtomically(file: string, content: string, place: (temporary: string) => void): void {
  const temporary = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  writeFileSync(temporary, content, { flag: 'wx', mode: 0o644 });
  try {
    place(temporary);
  } finally {
    rmSync(temporary, { force: true });
  }
}

/**
 * Creates `file` holding `content` in one step (a hard link to a complete file), so no reader ever sees
 * it empty or half written; false when it exists.
 */
function createExclusive(file: string, content: string): boolean {
  try {
    writeAtomically(file, content, (temporary) => linkSync(temporary, file));
    return true;
  } catch (error) {
    if (codeOf(error) === 'EEXIST') return false;
    throw error;
  }
}

/** The lock's owner (`null` when the content does not parse) and a digest naming this very lock; undefined if gone. */
function readLock(file: string): { holder: LockHolder | null; digest: string } | undefined {
  let raw: string;
  try {
    raw = readFileSync(file, 'utf8');
  } catch (error) {
    if (codeOf(error) === 'ENOENT') return undefined;
    throw error;
  }
  return { holder: parseHolder(raw), digest: createHash('sha256').update(raw).digest('hex').slice(0, 16) };
}

function parseHolder(raw: string): LockHolder | null {
  try {
    const holder = JSON.parse(raw) as Partial<LockHolder>;
    const valid =
      Number.isInteger(holder.pid) &&
      (holder.pid ?? 0) > 0 &&
      typeof holder.hostname === 'string' &&
      typeof holder.command === 'string' &&
      typeof holder.startedAt === 'string';
    return valid ? (holder as LockHolder) : null;
  } catch {
    return null;
  }
}

function removeIfOurs(file: string, content: string): void {
  try {
    if (readFileSync(file, 'utf8') === content) unlinkSync(file);
  } catch (error) {
    if (codeOf(error) !== 'ENOENT') throw error;
  }
}

/** Whether the lock's owner still runs; a lock of another host counts as held (its processes are not visible here). */
function isRunning(holder: LockHolder): boolean {
  if (holder.hostname !== hostname()) return true;
  try {
    process.kill(holder.pid, 0);
  } catch (error) {
    // EPERM: it runs, as another user.
    if (codeOf(error) === 'ESRCH') return false;
  }
  const started = processStart(holder.pid);
  return holder.processStart === undefined || started === undefined || started === holder.processStart;
}

/** Linux: field 22 of /proc/<pid>/stat (start time in clock ticks since boot); undefined elsewhere. */
export function processStart(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) is in parentheses and may hold spaces; fields 3.. follow the last ')'.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
  } catch {
    return undefined;
  }
}

function holderOfThisProcess(command: string): LockHolder {
  const start = processStart(process.pid);
  return {
    pid: process.pid,
    hostname: hostname(),
    command,
    startedAt: new Date().toISOString(),
    id: randomBytes(8).toString('hex'),
    ...(start === undefined ? {} : { processStart: start }),
  };
}

/** `coregate token create` from this process's arguments: the command words only, never an option's value. */
function commandOfThisProcess(): string {
  const script = process.argv[1] ? basename(process.argv[1]) : 'node';
  const program = /^(main\.[jt]s|coregate(\.js)?)$/.test(script) ? 'coregate' : script;
  const words = process.argv.slice(2);
  const options = words.findIndex((word) => word.startsWith('-'));
  return [program, ...(options === -1 ? words : words.slice(0, options)).slice(0, 2)].join(' ');
}

const since = (holder: LockHolder) => holder.startedAt.replace(/\.\d{3}Z$/, 'Z');

const codeOf = (error: unknown): string | undefined => (error as NodeJS.ErrnoException | undefined)?.code;
