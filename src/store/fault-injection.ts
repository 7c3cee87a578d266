/**
 * Whether the sandbox's fault injection is on (the `X-Coregate-Fault` header and the fault rules): a switch
 * kept in the store (`coregate_setting` row `fault_injection`), so that `coregate faults enable|disable` and
 * `PUT /admin/faults/injection` turn it for every worker and instance while they serve. Until it is first
 * switched, `COREGATE_SANDBOX_FAULTS` says (the start value). Each process reads it at most once a second,
 * as it reads the fault rules.
 */
import type { Db } from '../database/database.js';
import { settings, SETTING } from './access.js';
import { FAULT_RULES_REFRESH_MS } from './fault-rules.js';

export const faultInjection = {
  /** The switch as stored; `startValue` (COREGATE_SANDBOX_FAULTS) while it has never been switched. */
  async isOn(db: Db, startValue: boolean): Promise<boolean> {
    const stored = await settings.get(db, SETTING.faultInjection);
    return stored === undefined ? startValue : stored === 'on';
  },

  /** Switches it, for every process reading this store. */
  async set(db: Db, on: boolean): Promise<void> {
    await settings.set(db, SETTING.faultInjection, on ? 'on' : 'off');
  },
};

/**
 * A process's copy of the switch, read again when older than a second (one read shared by the calls waiting
 * for it). A store that cannot be read leaves the last copy in use.
 * @example if (!(await faultSwitch.isOn())) throw sandboxFaultsDisabled();
 */
export class FaultInjectionSwitch {
  private on: boolean;
  private readAt = Number.NEGATIVE_INFINITY;
  private reading: Promise<void> | undefined;

  constructor(
    private readonly db: Db,
    private readonly startValue: boolean,
    private readonly refreshMs = FAULT_RULES_REFRESH_MS,
  ) {
    this.on = startValue;
  }

  async isOn(): Promise<boolean> {
    if (performance.now() - this.readAt >= this.refreshMs) {
      this.reading ??= this.read().finally(() => (this.reading = undefined));
      await this.reading;
    }
    return this.on;
  }

  /**
   * Off, as read within the last `refreshMs`: what a call asks before it waits on `isOn`, so that a call in a
   * gateway with fault injection off awaits nothing for it.
   */
  knownOff(): boolean {
    return !this.on && performance.now() - this.readAt < this.refreshMs;
  }

  /** Switches it in the store; this process knows at once, the others within a second. */
  async set(on: boolean): Promise<void> {
    await faultInjection.set(this.db, on);
    this.on = on;
    this.readAt = performance.now();
  }

  private async read(): Promise<void> {
    try {
      this.on = await faultInjection.isOn(this.db, this.startValue);
    } catch {
      // The database is away: the call goes on with the last copy (its own queries will say so).
    }
    this.readAt = performance.now();
  }
}
