/**
 * A core's circuit breaker: after `failures` failures in a row that count (a core that cannot be reached or
 * does not answer), the circuit opens and calls are refused at once (`BrokenCircuitError`) for
 * `halfOpenAfterMs`; then one call tries the core (half open) while the others wait for it: its success
 * closes the circuit, a failure that counts opens it again, and any other outcome closes it (the core
 * answered). A success closes the count of failures in a row. A call through a closed circuit costs one
 * `then` on its own promise, with handlers made once per circuit.
 */
import type { CircuitState } from './core.js';

/** A call refused because the circuit is open. */
export class BrokenCircuitError extends Error {
  constructor() {
    super('Execution prevented because the circuit breaker is open');
    this.name = 'BrokenCircuitError';
  }
}

export interface CircuitOptions {
  /** Failures that count, in a row, that open the circuit. */
  readonly failures: number;
  /** How long an open circuit refuses calls before one tries the core. */
  readonly halfOpenAfterMs: number;
  /** Whether a failure counts toward opening (a core unreachable); others are answers. */
  readonly counts: (error: unknown) => boolean;
  /** Told of each change of state. */
  readonly onChange?: (state: CircuitState) => void;
  /** Milliseconds since the epoch; `Date.now` by default. */
  readonly now?: () => number;
}

/**
 * @example
 * const circuit = new Circuit({ failures: 5, halfOpenAfterMs: 10_000, counts: (e) => e instanceof CoreFailure });
 * const answer = await circuit.execute(() => transport.post(…)); // BrokenCircuitError while open
 */
export class Circuit {
  private current: CircuitState = 'closed';
  private inARow = 0;
  private openedAt = 0;
  /** While half open: settles when the call trying the core does. */
  private trying: Promise<void> | undefined;
  private readonly now: () => number;

  constructor(private readonly options: CircuitOptions) {
    if (!Number.isInteger(options.failures) || options.failures < 1)
      throw new RangeError(`failures must be a positive integer, got ${options.failures}`);
    this.now = options.now ?? Date.now;
  }

  get state(): CircuitState {
    return this.current;
  }

  /** Runs `call` through the circuit: refused while open, held while another call tries the core. */
  execute<T>(call: () => Promise<T>): Promise<T> {
    if (this.current === 'closed') return this.run(call).then(this.succeeded, this.failed);
    if (this.current === 'half_open') return this.trying!.then(() => this.execute(call));
    if (this.now() - this.openedAt < this.options.halfOpenAfterMs) return Promise.reject(new BrokenCircuitError());
    this.enter('half_open');
    const trial = this.run(call).then(
      (value) => {
        this.close();
        return value;
      },
      (error: unknown) => {
        if (this.options.counts(error)) this.open();
        else this.close();
        throw error;
      },
    );
    this.trying = trial.then(
      () => undefined,
      () => undefined,
    );
    return trial;
  }

  /** The call's promise; a call that throws at once is a rejected one. */
  private run<T>(call: () => Promise<T>): Promise<T> {
    try {
      return call();
    } catch (error) {
      return Promise.reject(error);
    }
  }

  private readonly succeeded = <T>(value: T): T => {
    this.inARow = 0;
    return value;
  };

  private readonly failed = (error: unknown): never => {
    // A call that went out while the circuit was closed and ends after it opened changes nothing.
    if (this.current === 'closed' && this.options.counts(error) && ++this.inARow >= this.options.failures) this.open();
    throw error;
  };

  private open(): void {
    this.openedAt = this.now();
    this.trying = undefined;
    this.enter('open');
  }

  private close(): void {
    this.inARow = 0;
    this.trying = undefined;
    this.enter('closed');
  }

  private enter(state: CircuitState): void {
    if (this.current === state) return;
    this.current = state;
    this.options.onChange?.(state);
  }
}
