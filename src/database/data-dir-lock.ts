/**
 * One owner per embedded data directory. PGlite is a single-process database: two processes that open
 * one directory each work on their own copy in memory, and the last to write wins on disk. So a process
 * opens the embedded database only while it holds `<dataDir>/coregate.lock`, a file created atomically
 * (link, which fails when the file exists) and holding who owns it. A second process fails at once, naming
 * the owner. A stale lock (its owner is gone: a crash, `kill -9`, a container rescheduled) is replaced.
 *
 * Who judges staleness: a lock written on this host is stale once its process is gone
 * (`process.kill(pid, 0)`, and on Linux the process start time, so a reused pid does not keep a dead lock
 * alive). Processes on another host cannot be seen, so the owner refreshes the file's mtime, its heartbeat,
 * every `heartbeatMs` while it holds the lock, and a lock from another host is stale once its heartbeat is
 * `STALE_AFTER_HEARTBEATS` intervals old. On this host the process table decides alone: it is exact, and a
 * live owner's heartbeat pauses while PGlite runs a long statement on its thread.
 */
import { createHash, randomBytes } from 'node:crypto';
import {
  closeSync,
  fstatSync,
  futimesSync,
  linkSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { hostname } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';

export const LOCK_FILE = 'coregate.lock';
/**
 * Where the server holding the lock listens (`{"url":…,"pid":…,"lock":<its lock's id>}`): written once it
 * listens, removed with the lock, so that a command on the same data directory can call its admin API
 * instead of refusing (cli/remote.ts). A file of an earlier lock is never believed.
 */
export const SERVER_FILE = 'coregate.url';

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
  /** How often the owner refreshes the file's mtime; the lock travels with its own staleness rule. */
  readonly heartbeatMs?: number;
}

/** The owner touches the lock this often while it runs. */
export const HEARTBEAT_MS = 10_000;
/** A lock from another host whose heartbeat is this many of its intervals old is stale (30 s by default). */
export const STALE_AFTER_HEARTBEATS = 3;

/** A lock that was replaced: its owner (`null` when its content could not be read) and how old its heartbeat was. */
export interface StaleLock {
  readonly holder: LockHolder | null;
  readonly heartbeatAgeMs: number;
}

export interface LockOptions {
  /** How often this process refreshes its lock's heartbeat (tests shorten it). */
  readonly heartbeatMs?: number;
}

export interface DataDirLock {
  readonly file: string;
  readonly holder: LockHolder;
  /** The stale lock this one replaced, if any. */
  readonly tookOver: StaleLock | undefined;
  /** Stops the heartbeat and deletes the lock file if it is still this lock (never another's). Idempotent. */
  release(): void;
}

/** What `SERVER_FILE` holds. */
export interface ServerAddress {
  readonly url: string;
  readonly pid: number;
  /** The id of the lock its server holds (`LockHolder.id`). */
  readonly lock: string;
}

/** The locks this process holds, by directory, with what it announced there (`announceServer`). */
const heldHere = new Map<string, { holder: LockHolder; announced?: string }>();

/**
 * Writes where this process serves into a data directory whose lock it holds; false (and nothing written)
 * when it holds no lock there (a PostgreSQL or in-memory database, a test's app). The file goes with the lock.
 * @example announceServer(config.dataDir, 'http://127.0.0.1:8627')
 */
export function announceServer(dataDir: string, url: string): boolean {
  const directory = resolve(dataDir);
  const held = heldHere.get(directory);
  if (!held) return false;
  const address: ServerAddress = { url, pid: process.pid, lock: held.holder.id };
  const content = `${JSON.stringify(address)}\n`;
  const file = join(directory, SERVER_FILE);
  writeAtomically(file, content, (temporary) => renameSync(temporary, file));
  held.announced = content;
  return true;
}

/** Removes what `announceServer` wrote (the server stops listening); the lock stays. */
export function withdrawServer(dataDir: string): void {
  const directory = resolve(dataDir);
  const held = heldHere.get(directory);
  if (held?.announced === undefined) return;
  removeIfOurs(join(directory, SERVER_FILE), held.announced);
  held.announced = undefined;
}

/**
 * The live server holding a data directory's lock and where it listens; undefined when no live process
 * holds it, or its holder has announced no address (a command, or a server still starting).
 */
export function liveServerOf(dataDir: string): { readonly holder: LockHolder; readonly url: string } | undefined {
  const directory = resolve(dataDir);
  const lock = readLock(join(directory, LOCK_FILE));
  if (!lock?.holder || isStale(lock)) return undefined;
  let address: Partial<ServerAddress>;
  try {
    address = JSON.parse(readFileSync(join(directory, SERVER_FILE), 'utf8')) as Partial<ServerAddress>;
  } catch {
    return undefined;
  }
  if (address.lock !== lock.holder.id || typeof address.url !== 'string') return undefined;
  return { holder: lock.holder, url: address.url };
}

/** A second process asked for a data directory another one holds. */
export class DataDirLockedError extends Error {
  readonly code = 'DATA_DIR_LOCKED';
  readonly holder: LockHolder;
  constructor(
    readonly dataDir: string,
    held: Held,
    readonly file: string,
  ) {
    const { holder, heartbeatAgeMs } = held;
    const elsewhere = holder.hostname !== hostname();
    const seen = elsewhere ? `, last heartbeat ${seconds(heartbeatAgeMs)} ago` : '';
    // A process of this host holds it until it ends; one of another host until its heartbeat stops.
    const staleIn = Math.max(0, staleAfterMs(holder) - heartbeatAgeMs);
    super(
      `the embedded database in ${dataDir} is in use by process ${holder.pid}${elsewhere ? ` on host ${holder.hostname}` : ''} ` +
        `(${holder.command}, since ${since(holder)}${seen}); stop it first, ` +
        'or use DATABASE_URL (PostgreSQL) to share a database between processes' +
        (elsewhere
          ? `; if it no longer runs there, its lock is stale in ${seconds(staleIn)} and a start after that takes it over`
          : ''),
    );
    this.name = 'DataDirLockedError';
    this.holder = holder;
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
export async function lockDataDir(
  dataDir: string,
  command = commandOfThisProcess(),
  options: LockOptions = {},
): Promise<DataDirLock> {
  const directory = resolve(dataDir);
  // Readable by its owner only: it holds the database, the master secret and the demo credentials.
  mkdirSync(directory, { recursive: true, mode: 0o700 });
  const file = join(directory, LOCK_FILE);
  const content = `${JSON.stringify(holderOfThisProcess(command, options.heartbeatMs ?? HEARTBEAT_MS))}\n`;
  const deadline = Date.now() + TAKEOVER_WAIT_MS;
  for (;;) {
    const outcome = claim(file, content);
    if (outcome.kind === 'owned') return ownedLock(file, content, outcome.tookOver);
    if (outcome.kind === 'held') throw new DataDirLockedError(directory, outcome, file);
    if (Date.now() > deadline) {
      if (outcome.kind === 'contended') throw new DataDirLockedError(directory, outcome, file);
      throw new Error(`could not take the lock ${file}: it keeps changing`);
    }
    await new Promise((done) => setTimeout(done, TAKEOVER_POLL_MS));
  }
}

/** One line for the log when a lock replaced a stale one, saying why it was stale. */
export function tookOverMessage(lock: DataDirLock): string {
  const { holder, heartbeatAgeMs } = lock.tookOver ?? { holder: null, heartbeatAgeMs: 0 };
  if (!holder) return `took over the stale lock (unreadable) on ${lock.file}`;
  const here = holder.hostname === hostname();
  const why = here
    ? 'that process is gone'
    : `its last heartbeat is ${seconds(heartbeatAgeMs)} old (stale after ${seconds(staleAfterMs(holder))})`;
  return (
    `took over the stale lock of process ${holder.pid}${here ? '' : ` on host ${holder.hostname}`} ` +
    `(${holder.command}, since ${since(holder)}) on ${lock.file}: ${why}`
  );
}

/** A lock a live process owns, and how old its heartbeat is. */
interface Held {
  readonly holder: LockHolder;
  readonly heartbeatAgeMs: number;
}

type Claim =
  | { readonly kind: 'owned'; readonly tookOver?: StaleLock }
  /** A live process owns it. */
  | ({ readonly kind: 'held' } & Held)
  /** A live process is replacing the same stale lock right now: look again shortly. */
  | ({ readonly kind: 'contended' } & Held)
  /** The file changed under us: look again. */
  | { readonly kind: 'again' };

/**
 * Creates `file` with `content`, or replaces it when it is stale. Of several processes replacing one
 * stale lock, exactly one does: each first claims `<file>.<digest of the stale content>.takeover` (the
 * same claim, taken the same way, so a claim left by a crash is itself replaced), then, holding it, checks
 * that the file is still that lock and still stale, and renames its own over it. Nothing else replaces a
 * lock that exists, and a heartbeat only touches its owner's own file, so the check stays true until the
 * rename (but for an owner whose heartbeat resumes in that instant after pausing for the whole threshold).
 */
function claim(file: string, content: string): Claim {
  if (createExclusive(file, content)) return { kind: 'owned' };
  const stale = readLock(file);
  if (stale === undefined) return { kind: 'again' };
  if (stale.holder && !isStale(stale))
    return { kind: 'held', holder: stale.holder, heartbeatAgeMs: stale.heartbeatAgeMs };
  const takeover = `${file}.${stale.digest}.takeover`;
  const claimed = claim(takeover, content);
  if (claimed.kind === 'held' || claimed.kind === 'contended') return { ...claimed, kind: 'contended' };
  if (claimed.kind === 'again') return claimed;
  try {
    const current = readLock(file);
    if (current?.digest !== stale.digest || !isStale(current)) return { kind: 'again' };
    writeAtomically(file, content, (temporary) => renameSync(temporary, file));
    return { kind: 'owned', tookOver: { holder: stale.holder, heartbeatAgeMs: current.heartbeatAgeMs } };
  } finally {
    removeIfOurs(takeover, content);
  }
}

function ownedLock(file: string, content: string, tookOver: StaleLock | undefined): DataDirLock {
  const holder = JSON.parse(content) as LockHolder;
  const directory = dirname(file);
  const held: { holder: LockHolder; announced?: string } = { holder };
  heldHere.set(directory, held);
  const forgetHeld = () => {
    if (heldHere.get(directory) !== held) return;
    heldHere.delete(directory);
    if (held.announced !== undefined) removeIfOurs(join(directory, SERVER_FILE), held.announced);
  };
  // The heartbeat touches the file this process created, through a descriptor of its own: once another
  // process has replaced the lock (judging it stale), the touches land on the replaced file, never on theirs.
  const descriptor = openSync(file, 'r');
  const heartbeat = setInterval(() => {
    try {
      const now = new Date();
      futimesSync(descriptor, now, now);
    } catch {
      // A missed beat only brings staleness nearer; the next one tries again.
    }
  }, holder.heartbeatMs ?? HEARTBEAT_MS);
  // The heartbeat must not keep a finished command alive.
  heartbeat.unref();
  // A process that ends without closing the database (an error, process.exit) still gives the lock up;
  // one killed outright leaves it stale. Exiting is no time to throw: a lock left behind is only stale.
  const releaseOnExit = () => {
    try {
      forgetHeld();
      removeIfOurs(file, content);
    } catch {
      // left stale
    }
  };
  let released = false;
  const release = () => {
    if (released) return;
    released = true;
    clearInterval(heartbeat);
    closeSync(descriptor);
    process.removeListener('exit', releaseOnExit);
    forgetHeld();
    removeIfOurs(file, content);
  };
  process.on('exit', releaseOnExit);
  return { file, holder, tookOver, release };
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

interface ReadLock extends StaleLock {
  /** Names this very lock (its content): a heartbeat does not change it, a replacement does. */
  readonly digest: string;
}

/** The lock's owner (`null` when the content does not parse), its heartbeat's age and digest; undefined if gone. */
function readLock(file: string): ReadLock | undefined {
  let descriptor: number;
  try {
    descriptor = openSync(file, 'r');
  } catch (error) {
    if (codeOf(error) === 'ENOENT') return undefined;
    throw error;
  }
  try {
    // Content and mtime of the same file, even if it is replaced meanwhile.
    const raw = readFileSync(descriptor, 'utf8');
    // A heartbeat from a clock ahead of ours counts as fresh, not as negative age.
    const heartbeatAgeMs = Math.max(0, Date.now() - fstatSync(descriptor).mtimeMs);
    return {
      holder: parseHolder(raw),
      heartbeatAgeMs,
      digest: createHash('sha256').update(raw).digest('hex').slice(0, 16),
    };
  } finally {
    closeSync(descriptor);
  }
}

function parseHolder(raw: string): LockHolder | null {
  try {
    const holder = JSON.parse(raw) as Partial<LockHolder>;
    const valid =
      Number.isInteger(holder.pid) &&
      (holder.pid ?? 0) > 0 &&
      typeof holder.hostname === 'string' &&
      typeof holder.command === 'string' &&
      typeof holder.startedAt === 'string' &&
      (holder.heartbeatMs === undefined || (Number.isInteger(holder.heartbeatMs) && holder.heartbeatMs > 0));
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

/**
 * Whether a lock no longer has a live owner: on this host, its process is gone; on another host, whose
 * processes are not visible here, its heartbeat has stopped.
 */
function isStale(lock: StaleLock): boolean {
  // A lock that cannot be read names no owner to wait for.
  if (!lock.holder) return true;
  if (lock.holder.hostname === hostname()) return !isRunningHere(lock.holder);
  return lock.heartbeatAgeMs > staleAfterMs(lock.holder);
}

/** How old a lock's heartbeat may be before it is stale: by the owner's own interval. */
function staleAfterMs(holder: LockHolder): number {
  return STALE_AFTER_HEARTBEATS * (holder.heartbeatMs ?? HEARTBEAT_MS);
}

function isRunningHere(holder: LockHolder): boolean {
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

function holderOfThisProcess(command: string, heartbeatMs: number): LockHolder {
  const start = processStart(process.pid);
  return {
    pid: process.pid,
    hostname: hostname(),
    command,
    startedAt: new Date().toISOString(),
    id: randomBytes(8).toString('hex'),
    ...(start === undefined ? {} : { processStart: start }),
    heartbeatMs,
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

const seconds = (ms: number) => `${Math.round(ms / 1000)} s`;

const codeOf = (error: unknown): string | undefined => (error as NodeJS.ErrnoException | undefined)?.code;
