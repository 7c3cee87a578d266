/**
 * The deadlines of calls to a core, on one coarse timer per process instead of an `AbortSignal.timeout` (a
 * timer, a signal and an event listener) per call. Deadlines are kept in a list ordered by when they pass;
 * every call's deadline is the same length (COREGATE_SYMXCHANGE_TIMEOUT_MS), so a new one goes at the end
 * and one that ends is unlinked, each in constant time. The timer is set for the earliest deadline only,
 * rounded up to `DEADLINE_RESOLUTION_MS`: a deadline passes at most that late, never early.
 */

/** How late past its time a deadline may be noticed, at most. */
export const DEADLINE_RESOLUTION_MS = 5;

/** One call's deadline: `expired` once it has passed; `onExpire` is told when it does. */
export class Deadline {
  expired = false;
  /** The one party told when the deadline passes (the exchange in flight), if any. */
  private listener: (() => void) | undefined;
  /** @internal The list's links. */
  previous: Deadline | undefined;
  /** @internal */
  next: Deadline | undefined;
  /** @internal Still in its wheel's list. */
  linked = false;

  constructor(
    /** When it passes, on `performance.now()`'s clock. */
    readonly at: number,
    private readonly wheel: DeadlineWheel,
  ) {}

  /** Tells `listener` when the deadline passes (at once if it has), in place of any earlier one. */
  onExpire(listener: (() => void) | undefined): void {
    this.listener = listener;
    if (listener && this.expired) listener();
  }

  /** Ends the deadline early: the call is over, nobody is told. Idempotent. */
  release(): void {
    this.listener = undefined;
    this.wheel.unlink(this);
  }

  /** @internal Called by the wheel when the deadline passes. */
  expire(): void {
    this.expired = true;
    const listener = this.listener;
    this.listener = undefined;
    listener?.();
  }
}

/**
 * The deadlines of one process and their one timer.
 * @example
 * const deadline = DEADLINES.start(15_000);
 * try { deadline.onExpire(() => controller.abort()); … } finally { deadline.release(); }
 */
export class DeadlineWheel {
  private head: Deadline | undefined;
  private tail: Deadline | undefined;
  private timer: NodeJS.Timeout | undefined;
  /** When the timer fires, on `performance.now()`'s clock. */
  private timerAt = Infinity;

  /** A deadline `ms` from now. */
  start(ms: number): Deadline {
    const deadline = new Deadline(performance.now() + ms, this);
    // Ordered by time: from the end, which is where a deadline of the common length goes.
    let before = this.tail;
    while (before && before.at > deadline.at) before = before.previous;
    deadline.previous = before;
    deadline.next = before ? before.next : this.head;
    if (deadline.next) deadline.next.previous = deadline;
    else this.tail = deadline;
    if (before) before.next = deadline;
    else this.head = deadline;
    deadline.linked = true;
    if (deadline.at < this.timerAt) this.arm(deadline.at);
    return deadline;
  }

  /** @internal Takes a deadline out of the list (once: later calls do nothing). */
  unlink(deadline: Deadline): void {
    if (!deadline.linked) return;
    deadline.linked = false;
    if (deadline.previous) deadline.previous.next = deadline.next;
    else this.head = deadline.next;
    if (deadline.next) deadline.next.previous = deadline.previous;
    else this.tail = deadline.previous;
    deadline.previous = deadline.next = undefined;
    // The timer stays set: when it fires for a deadline that ended, it moves on to the next one.
  }

  private arm(at: number): void {
    if (this.timer) clearTimeout(this.timer);
    const delay = Math.max(0, Math.ceil((at - performance.now()) / DEADLINE_RESOLUTION_MS) * DEADLINE_RESOLUTION_MS);
    this.timerAt = performance.now() + delay;
    this.timer = setTimeout(() => this.tick(), delay);
    // A deadline keeps no process alive: a call in flight has its socket for that.
    this.timer.unref();
  }

  private tick(): void {
    this.timer = undefined;
    this.timerAt = Infinity;
    const now = performance.now();
    try {
      while (this.head && this.head.at <= now) {
        const passed = this.head;
        this.unlink(passed);
        passed.expire();
      }
    } finally {
      // A listener that throws leaves the deadlines after it to the next turn, never to no timer at all.
      if (this.head) this.arm(this.head.at);
    }
  }
}

/** The process's deadlines: one timer for every core call. */
export const DEADLINES = new DeadlineWheel();
