/**
 * The sandbox's fault rules in the database (contract/fault-rules.ts says what a rule is), where every worker
 * and instance reads the same set: added under a bound on how many are kept, listed, removed, read by each
 * process for its copy of the set (`FaultRuleSet`), and fired. A firing is one UPDATE that counts it and,
 * for a rule of the next N calls, takes one of them only while one is left, so that "the next N calls" is
 * exact across the fleet. Expired rules are never read, listed or fired, and are swept. Times are the database's.
 */
import { sql, type Selectable } from 'kysely';
import {
  appliesTo,
  faultOutcome,
  type Face,
  type FaultEffect,
  type FaultRule,
  type NewFaultRule,
} from '../contract/fault-rules.js';
import type { Db } from '../database/database.js';
import { fixedTables, type FaultRuleTable } from '../database/tables.js';

/** Serializes additions on every instance, so that the bound holds. */
const ADD_LOCK = 627_0011;

/** The database's clock. */
const now = sql<Date>`now()`;

/** A rule as the set applied to calls holds it. */
export interface LiveFaultRule {
  readonly id: number;
  readonly operations: string;
  readonly face: FaultRule['face'];
  readonly effect: FaultEffect;
  readonly probability: number;
  /** Calls it still fires on; null when it has no such limit. */
  readonly remaining: number | null;
  /** When it expires (the database's time). */
  readonly until: Date;
}

type Row = Selectable<FaultRuleTable>;

const iso = (time: Date | string) => new Date(time).toISOString();

/** A row as the admin API answers it: its effect's properties beside the rule's own. */
function faultRuleOf(row: Row): FaultRule {
  return {
    id: row.id,
    operations: row.operations,
    face: row.face,
    ...(row.effect as FaultEffect),
    probability: row.probability,
    times: row.times,
    remaining: row.remaining,
    fired: Number(row.fired),
    until: iso(row.until),
    createdAt: iso(row.created_at),
    createdBy: row.created_by,
  };
}

export const faultRules = {
  /**
   * Adds a rule; undefined when `limit` rules are kept already. Room is made first by sweeping expired rules,
   * then, oldest first, rules that have fired on all their calls (they are kept only to be listed).
   */
  async add(db: Db, rule: NewFaultRule, createdBy: string | null, limit: number): Promise<FaultRule | undefined> {
    return db.transaction().execute(async (trx) => {
      await sql`select pg_advisory_xact_lock(${ADD_LOCK})`.execute(trx);
      const rules = fixedTables(trx);
      await rules.deleteFrom('fault_rule').where('until', '<=', now).execute();
      const { kept } = await rules
        .selectFrom('fault_rule')
        .select((eb) => eb.fn.countAll<string | number>().as('kept'))
        .executeTakeFirstOrThrow();
      const excess = Number(kept) - limit + 1;
      if (excess > 0) {
        const spent = rules
          .selectFrom('fault_rule')
          .select('id')
          .where('remaining', '=', 0)
          .orderBy('id')
          .limit(excess);
        const made = await rules.deleteFrom('fault_rule').where('id', 'in', spent).executeTakeFirst();
        if (Number(made.numDeletedRows) < excess) return undefined;
      }
      const row = await rules
        .insertInto('fault_rule')
        .values({
          operations: rule.operations,
          face: rule.face,
          effect: JSON.stringify(rule.effect),
          probability: rule.probability,
          times: rule.times,
          remaining: rule.times,
          until: rule.until.toISOString(),
          created_by: createdBy,
        })
        .returningAll()
        .executeTakeFirstOrThrow();
      return faultRuleOf(row);
    });
  },

  /** The rules in force, oldest first, with how often each fired and how many calls it has left. */
  async list(db: Db): Promise<FaultRule[]> {
    const rows = await fixedTables(db)
      .selectFrom('fault_rule')
      .selectAll()
      .where('until', '>', now)
      .orderBy('id')
      .execute();
    return rows.map(faultRuleOf);
  },

  /** The rules that may still fire, oldest first: what each process applies to calls. */
  async live(db: Db): Promise<LiveFaultRule[]> {
    const rows = await fixedTables(db)
      .selectFrom('fault_rule')
      .select(['id', 'operations', 'face', 'effect', 'probability', 'remaining', 'until'])
      .where('until', '>', now)
      .where((eb) => eb.or([eb('remaining', 'is', null), eb('remaining', '>', 0)]))
      .orderBy('id')
      .execute();
    return rows.map((row) => ({ ...row, effect: row.effect as FaultEffect, until: new Date(row.until) }));
  },

  /**
   * Fires a rule on one call: counts it and takes one of its remaining calls, in one statement. Undefined
   * when it may not fire (expired, removed, or its calls taken by others); else the calls it has left.
   */
  async fire(db: Db, id: number): Promise<{ remaining: number | null } | undefined> {
    return fixedTables(db)
      .updateTable('fault_rule')
      .set({ fired: sql<number>`fired + 1`, remaining: sql<number | null>`remaining - 1` })
      .where('id', '=', id)
      .where('until', '>', now)
      .where((eb) => eb.or([eb('remaining', 'is', null), eb('remaining', '>', 0)]))
      .returning('remaining')
      .executeTakeFirst();
  },

  /** Removes a rule; false when there is none of that id. */
  async remove(db: Db, id: number): Promise<boolean> {
    const result = await fixedTables(db).deleteFrom('fault_rule').where('id', '=', id).executeTakeFirst();
    return result.numDeletedRows > 0n;
  },

  /** Removes every rule; returns how many were in force. */
  async clear(db: Db): Promise<number> {
    const removed = await fixedTables(db)
      .deleteFrom('fault_rule')
      .returning(sql<boolean>`until > now()`.as('inForce'))
      .execute();
    return removed.filter((row) => row.inForce).length;
  },

  /** Deletes expired rules; returns how many. */
  async sweep(db: Db): Promise<number> {
    const result = await fixedTables(db).deleteFrom('fault_rule').where('until', '<=', now).executeTakeFirst();
    return Number(result.numDeletedRows);
  },
};

/** How old a process's copy of the rule set may be. */
export const FAULT_RULES_REFRESH_MS = 1_000;
/** How often a process sweeps expired rules from the database. */
const SWEEP_INTERVAL_MS = 60_000;

/** Where a rule set that cannot be read is told (pino's shape). */
export interface FaultRuleLog {
  warn(facts: Record<string, unknown>, message: string): void;
  info(message: string): void;
}

/**
 * A process's copy of the rule set, read again at most once a refresh interval: a call that finds it older
 * waits for one read, shared with every call waiting then, so a call costs no query while no rule matches it,
 * and a rule added or removed elsewhere applies here within the interval (at once after `invalidate`).
 * @example const fired = await set.fire('findBySSN', 'json'); // the rules that fire on this call
 */
export class FaultRuleSet {
  private rules: readonly LiveFaultRule[] = [];
  /** When the copy was last read (performance.now()); -Infinity when it must be read before use. */
  private readAt = Number.NEGATIVE_INFINITY;
  /** Moved by `invalidate`: a read begun before a move does not make the copy current. */
  private version = 0;
  private reading: Promise<void> | undefined;
  private sweptAt = 0;
  private failing = false;

  constructor(
    private readonly db: Db,
    private readonly log: FaultRuleLog,
    private readonly refreshMs = FAULT_RULES_REFRESH_MS,
  ) {}

  /** The set changed in this process: the next call reads it again. */
  invalidate(): void {
    this.version += 1;
    this.readAt = Number.NEGATIVE_INFINITY;
  }

  /**
   * The rules that fire on a call of `operation` through `face`, oldest first: each one in force that applies
   * to it, passes its probability and may still fire in the database; the first that does more than delay
   * the answer ends the list.
   */
  async fire(operation: string, face: Face): Promise<LiveFaultRule[]> {
    const rules = await this.current();
    const fired: LiveFaultRule[] = [];
    const now = Date.now();
    for (const rule of rules) {
      if (rule.until.getTime() <= now || !appliesTo(rule, operation, face)) continue;
      if (!(Math.random() < rule.probability)) continue;
      const taken = await faultRules.fire(this.db, rule.id);
      // Gone (removed, expired, or its calls taken elsewhere), or now spent: this copy stops applying it.
      if (!taken || taken.remaining === 0) this.rules = this.rules.filter((kept) => kept !== rule);
      if (!taken) continue;
      fired.push(rule);
      if (faultOutcome(rule.effect)) break;
    }
    return fired;
  }

  /** The copy, read again first when it is older than the refresh interval. */
  private async current(): Promise<readonly LiveFaultRule[]> {
    while (performance.now() - this.readAt >= this.refreshMs) {
      this.reading ??= this.read().finally(() => (this.reading = undefined));
      await this.reading;
    }
    return this.rules;
  }

  /** Reads the set; when it cannot be read, the last copy stays in use until the next interval. */
  private async read(): Promise<void> {
    const version = this.version;
    try {
      this.rules = await faultRules.live(this.db);
      if (this.failing) this.log.info('fault rules can be read again');
      this.failing = false;
    } catch (error) {
      if (!this.failing)
        this.log.warn({ err: error }, 'fault rules cannot be read; the last set read applies meanwhile');
      this.failing = true;
    }
    if (version === this.version) this.readAt = performance.now();
    if (!this.failing && Date.now() - this.sweptAt >= SWEEP_INTERVAL_MS) {
      this.sweptAt = Date.now();
      void faultRules.sweep(this.db).catch(() => undefined);
    }
  }
}
