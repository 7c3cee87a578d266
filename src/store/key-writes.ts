/**
 * A gateway's changes to its Idempotency-Keys that the database could not take when they were due. After
 * a call to the core, the attempt releases its key (the call failed), or settles it (with its answer, or
 * with "may have been applied"); when the database is away at that moment, the change is kept here and
 * tried again until it is written, so the key is freed or answered within a moment of the database's
 * return, and not left pending until a retry takes it over (twice the core's timeout later). Each change
 * names the reservation it belongs to (`ReservationStamp`), so one written late never touches a later
 * reservation of the same key.
 *
 * Bounded: at most `capacity` keys wait, one change each (a later change of a key replaces its earlier
 * one); past it the oldest is given up, and its key waits for a takeover as it would have without this.
 * Only connection failures are kept: a change the database refuses for itself is not retried.
 */
import { isConnectionFailure } from '../database/database.js';

export interface KeyWritesOptions {
  /** How many keys' changes may wait at once. */
  readonly capacity: number;
  /** The wait before the first retry; it doubles up to `retryMaxMs` while the database stays away. */
  readonly retryMs: number;
  readonly retryMaxMs: number;
  /** Told of the first failure of a run, of a change given up, and of the recovery. */
  readonly onEvent: (event: KeyWritesEvent) => void;
}

export type KeyWritesEvent =
  | { readonly kind: 'waiting'; readonly error: unknown; readonly waiting: number }
  | { readonly kind: 'given-up'; readonly owner: string; readonly key: string }
  | { readonly kind: 'written'; readonly written: number };

export const KEY_WRITES_DEFAULTS: Omit<KeyWritesOptions, 'onEvent'> = {
  capacity: 10_000,
  retryMs: 250,
  retryMaxMs: 2_000,
};

export class KeyWrites {
  /** Waiting changes by owner and key, oldest first (a Map keeps insertion order). */
  private readonly waiting = new Map<string, () => Promise<void>>();
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private retryMs: number;
  private written = 0;

  constructor(private readonly options: KeyWritesOptions) {
    this.retryMs = options.retryMs;
  }

  /**
   * Runs `change` now; when the database is unreachable, keeps it to retry and resolves `false` (a change
   * refused for another reason rejects as it did). Resolves `true` once written.
   */
  async run(owner: string, key: string, change: () => Promise<void>): Promise<boolean> {
    try {
      await change();
      return true;
    } catch (error) {
      if (!isConnectionFailure(error)) throw error;
      this.keep(owner, key, change, error);
      return false;
    }
  }

  /** Changes waiting for the database. */
  get size(): number {
    return this.waiting.size;
  }

  /** Tries every waiting change once more now; resolves when the round is over. */
  retry(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.running ??= this.round().finally(() => {
      this.running = undefined;
      this.schedule();
    });
    return this.running;
  }

  /** Stops retrying: one last round, then what still waits is given up (a takeover settles those keys). */
  async close(): Promise<void> {
    if (this.waiting.size > 0) await this.retry();
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    for (const id of this.waiting.keys()) this.giveUp(id);
  }

  /** Keeps a change the database could not take (`error`), to retry; it replaces one kept for the same key. */
  keep(owner: string, key: string, change: () => Promise<void>, error: unknown): void {
    const id = `${owner}\u0000${key}`;
    this.waiting.delete(id);
    while (this.waiting.size >= this.options.capacity) this.giveUp(this.waiting.keys().next().value!);
    this.waiting.set(id, change);
    if (!this.timer && !this.running) {
      this.options.onEvent({ kind: 'waiting', error, waiting: this.waiting.size });
      this.schedule();
    }
  }

  private giveUp(id: string): void {
    this.waiting.delete(id);
    const [owner = '', key = ''] = id.split('\u0000');
    this.options.onEvent({ kind: 'given-up', owner, key });
  }

  private schedule(): void {
    if (this.timer || this.running || this.waiting.size === 0) return;
    this.timer = setTimeout(() => void this.retry(), this.retryMs);
    this.timer.unref();
  }

  /** Oldest first; stops at the first connection failure (the database is still away) and backs off. */
  private async round(): Promise<void> {
    for (const [id, change] of [...this.waiting]) {
      try {
        await change();
        this.written += 1;
      } catch (error) {
        if (isConnectionFailure(error)) {
          this.retryMs = Math.min(this.retryMs * 2, this.options.retryMaxMs);
          return;
        }
        // Refused for itself: retrying cannot help, and the key waits for a takeover.
        if (this.waiting.get(id) === change) this.giveUp(id);
        continue;
      }
      // A change kept again while this one was written is newer: it stays.
      if (this.waiting.get(id) === change) this.waiting.delete(id);
    }
    this.retryMs = this.options.retryMs;
    if (this.written > 0) this.options.onEvent({ kind: 'written', written: this.written });
    this.written = 0;
  }
}
