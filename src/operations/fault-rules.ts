/**
 * Administering the sandbox's fault rules (contract/fault-rules.ts): what `/admin/faults` and `coregate faults`
 * do, on a database, with their problems (400 naming the property, 404, 409 when the set is full). The admin
 * API and the CLI on a data directory with no server both call these, so they answer alike.
 */
import {
  FAULT_RULE_LIMITS,
  readFaultRule,
  tooManyFaultRules,
  type FaultRule,
  type FaultRuleRequest,
} from '../contract/fault-rules.js';
import { Problem } from '../contract/problems.js';
import type { Db } from '../database/database.js';
import { faultRules } from '../store/fault-rules.js';
import { CORE_OPERATIONS } from './index.js';

/** The names a rule's `operations` may name: every operation of either face. */
export const FAULT_RULE_OPERATION_NAMES: readonly string[] = [...new Set(CORE_OPERATIONS.map((op) => op.name))];

export const faultRuleAdmin = {
  /** Adds the rule a request describes; 400 naming each property at fault, 409 when the set is full. */
  async add(db: Db, request: FaultRuleRequest, createdBy: string | null): Promise<FaultRule> {
    const rule = readFaultRule(request, FAULT_RULE_OPERATION_NAMES, new Date());
    const added = await faultRules.add(db, rule, createdBy, FAULT_RULE_LIMITS.rules);
    if (!added) throw tooManyFaultRules();
    return added;
  },

  /** The rules in force, oldest first. */
  async list(db: Db): Promise<{ rules: FaultRule[] }> {
    return { rules: await faultRules.list(db) };
  },

  /** Removes one rule; 404 when there is none of that id. */
  async remove(db: Db, id: number): Promise<{ removed: number }> {
    if (!(await faultRules.remove(db, id))) throw new Problem(404, 'NOT_FOUND', `No fault rule ${id}`);
    return { removed: 1 };
  },

  /** Removes every rule. */
  async clear(db: Db): Promise<{ removed: number }> {
    return { removed: await faultRules.clear(db) };
  },
};
