/**
 * The sandbox's fault rules at the edges (what a rule is: contract/fault-rules.ts; the set each process
 * applies: store/fault-rules.ts). A rule is applied where a call's `X-Coregate-Fault` header is
 * (sandbox-faults.ts): after the token, rate limits, scope, body and credentials, so the call is
 * authenticated, counted and audited as any other, before the core is asked. A call a rule fires on gets
 * what the same failure of a real core gives on its face: on the JSON API the gateway's problem
 * (core/simulated-failures.ts); on the SOAP face, where coregate is the core, the failure itself (a Fault of
 * the rule's class, a dropped connection, a broken answer), and a problem as the face's Fault.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { FAULT_RULE_LIMITS, faultOutcome, type Face, type SoapFaultClass } from '../contract/fault-rules.js';
import type { BrokenAnswer, SimulatedFailures } from '../core/simulated-failures.js';
import type { AnyOperation } from '../operations/types.js';
import type { FaultInjectionSwitch } from '../store/fault-injection.js';
import type { FaultRuleSet, LiveFaultRule } from '../store/fault-rules.js';
import { dropConnection, type SandboxFaultOptions } from './sandbox-faults.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The class of the SOAP Fault a fault rule answers the call with, on the SOAP face. */
    soapFaultClass?: SoapFaultClass;
  }
}

/** A broken answer the SOAP face sends in place of the operation's (soap-routes.ts sends it). */
export class BrokenAnswerError extends Error {
  constructor(readonly answer: BrokenAnswer) {
    super('a fault rule answers a broken answer');
    this.name = 'BrokenAnswerError';
  }
}

/** What a call's audit event and log line name as its code when the SOAP face sent it a broken answer. */
export const BROKEN_ANSWER_CODE = 'MALFORMED_ANSWER';

/** A rule's delay on one call: its latency and up to its jitter more. */
const delayOf = (rule: LiveFaultRule) =>
  (rule.effect.latencyMs ?? 0) + Math.floor(Math.random() * ((rule.effect.jitterMs ?? 0) + 1));

/**
 * The rule set of this process, applied to calls.
 * @example if (await faultRules.apply(request, reply, operation, 'json', { onDropped })) return; // dropped
 */
export class FaultRules {
  constructor(
    private readonly set: FaultRuleSet,
    /** What a core's failures look like. */
    private readonly failures: SimulatedFailures,
    /** Whether fault injection is on: while off, no rule applies (and the set is not read). */
    private readonly injection: Pick<FaultInjectionSwitch, 'isOn' | 'knownOff'>,
  ) {}

  /** No rule can fire now: fault injection is off, as read within the last second. */
  idle(): boolean {
    return this.injection.knownOff();
  }

  /** The set changed in this process: the next call reads it again. */
  invalidate(): void {
    this.set.invalidate();
  }

  /**
   * Applies the rules that fire on a call: waits their delays, then answers their failure (by throwing it, or,
   * for a dropped connection, by closing it and returning true). False when the call goes on to its answer.
   */
  async apply(
    request: FastifyRequest,
    reply: FastifyReply,
    operation: AnyOperation,
    face: Face,
    dropped: Pick<SandboxFaultOptions, 'onDropped'>,
  ): Promise<boolean> {
    if (!(await this.injection.isOn())) return false;
    const fired = await this.set.fire(operation.name, face);
    if (fired.length === 0) return false;
    const { failures } = this;
    const named = fired.map((rule) => `rule ${rule.id}`).join(', ');
    request.sandboxFault = request.sandboxFault ? `${request.sandboxFault}; ${named}` : named;
    const delayMs = Math.min(
      FAULT_RULE_LIMITS.delayMs,
      fired.reduce((total, rule) => total + delayOf(rule), 0),
    );
    // A core this slow is given up at the gateway's deadline: the JSON API answers what the gateway then does.
    if (face === 'json' && delayMs >= failures.deadlineMs) {
      await sleep(failures.deadlineMs);
      throw failures.timeout(operation);
    }
    if (delayMs > 0) await sleep(delayMs);
    const last = fired[fired.length - 1]!;
    const outcome = faultOutcome(last.effect);
    if (!outcome) return false;
    if (face === 'soap') {
      if (outcome.kind === 'drop') {
        dropConnection(request, reply, dropped);
        return true;
      }
      if (outcome.kind === 'malformed') throw new BrokenAnswerError(failures.brokenAnswer(outcome.form, operation));
      if (outcome.kind === 'soapFault') request.soapFaultClass = outcome.faultClass;
    }
    throw failures.problem(outcome, operation, `Forced by fault rule ${last.id} (sandbox fault injection)`);
  }
}
