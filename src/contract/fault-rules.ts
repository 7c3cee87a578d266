/**
 * Fault rules: the sandbox's faults set on the server (`POST /admin/faults`, `coregate faults add`) instead
 * of asked for by a call's `X-Coregate-Fault` header, so that an unmodified client meets them, as WireMock's
 * scenarios, Mockoon's rules and Toxiproxy's toxics let a tester make the server misbehave. A rule names the
 * operations and the face it applies to, what happens to a call it fires on (a problem, a SOAP Fault of a
 * class, added latency, a dropped connection, a malformed answer) and how often (a probability, the next N
 * calls, until a time). This module holds what a rule is: its request and answer schemas, its bounds, how a
 * request becomes a rule, and which calls it matches. The store keeps rules (store/fault-rules.ts), the edges
 * apply them (http/fault-rules.ts), and what each failure looks like is the gateway's own (core/simulated-failures.ts).
 */
import { Type, type Static } from 'typebox';
import { Problem, validationFailed, type PropertyError } from './problems.js';
import {
  SANDBOX_FAULT_MAX_DELAY_MS,
  SANDBOX_FAULT_PROBLEMS,
  TURN_ON,
  type SandboxFaultCode,
} from './sandbox-faults.js';

/** The bounds of the rule set and of each rule. */
export const FAULT_RULE_LIMITS = {
  /** Rules in force at once, on every instance together. */
  rules: 100,
  /** How far ahead `until` may be: a forgotten rule dies within a day. */
  untilHours: 24,
  /** A rule's life when `until` is not given. */
  defaultMinutes: 60,
  /** The largest `times`. */
  times: 1_000_000,
  /** The longest `operations` pattern (the longest operation name has 50). */
  operationsLength: 64,
  /** The most `latencyMs` plus `jitterMs` of one rule, and of every rule firing on one call together. */
  delayMs: SANDBOX_FAULT_MAX_DELAY_MS,
} as const;

/** Which face a rule applies to: the JSON API, the SymXchange SOAP face, or both. */
export const FAULT_RULE_FACES = ['json', 'soap', 'both'] as const;
export type FaultRuleFace = (typeof FAULT_RULE_FACES)[number];
/** The face a call came through. */
export type Face = Exclude<FaultRuleFace, 'both'>;

/** SOAP 1.1's fault classes a rule may answer with. */
export const SOAP_FAULT_CLASSES = ['Client', 'Server'] as const;
export type SoapFaultClass = (typeof SOAP_FAULT_CLASSES)[number];

/** How an answer is malformed: the envelope cut off partway, or a page that is not XML (a proxy's error page). */
export const MALFORMED_FORMS = ['truncated', 'not-xml'] as const;
export type MalformedForm = (typeof MALFORMED_FORMS)[number];

const FAULT_CODES = Object.keys(SANDBOX_FAULT_PROBLEMS) as SandboxFaultCode[];

/** `*`, an operation's name, or a prefix of names ending in `*` (`findBy*`). */
const OPERATIONS_PATTERN = '^(\\*|[A-Za-z][A-Za-z0-9_]*\\*?)$';

const enumOf = <T extends string>(values: readonly T[], description: string) =>
  Type.Unsafe<T>({ type: 'string', enum: [...values], description });

const delay = (description: string) =>
  Type.Optional(Type.Integer({ minimum: 0, maximum: FAULT_RULE_LIMITS.delayMs, description }));

/** What happens to a call a rule fires on, as a request gives it, the database keeps it and a list shows it. */
const FaultProperties = {
  code: Type.Optional(
    enumOf(
      FAULT_CODES,
      "A problem to answer with: the gateway's own answer to that failure of a core (CORE_UNAVAILABLE as for a core that refuses connections), or the problem coregate sends for it",
    ),
  ),
  status: Type.Optional(
    Type.Integer({
      minimum: 400,
      maximum: 599,
      description: "The problem's status, where its code has more than one (UNAVAILABLE: 503 or 408)",
    }),
  ),
  soapFault: Type.Optional(
    enumOf(
      SOAP_FAULT_CLASSES,
      'A SOAP Fault of this class on the SOAP face; the JSON API answers what the gateway answers a core that sends one (502 CORE_ERROR)',
    ),
  ),
  drop: Type.Optional(
    Type.Literal(true, {
      description:
        'The SOAP face closes the connection without an answer; the JSON API answers what the gateway answers a core that does (503 CORE_UNAVAILABLE)',
    }),
  ),
  malformed: Type.Optional(
    enumOf(
      MALFORMED_FORMS,
      'The SOAP face answers a cut-off envelope (`truncated`) or an HTML page (`not-xml`); the JSON API answers what the gateway answers a core that does (502 CORE_BAD_RESPONSE)',
    ),
  ),
  latencyMs: delay('Milliseconds added before the answer (alone, or before any of the above)'),
  jitterMs: delay('Up to this many milliseconds more, at random'),
};

export const FaultRuleRequest = Type.Object(
  {
    operations: Type.String({
      minLength: 1,
      maxLength: FAULT_RULE_LIMITS.operationsLength,
      pattern: OPERATIONS_PATTERN,
      description: 'The operations it applies to: a name (`findBySSN`), a prefix of names (`findBy*`) or `*`',
    }),
    face: Type.Optional(enumOf(FAULT_RULE_FACES, 'The face it applies to (default `both`)')),
    ...FaultProperties,
    probability: Type.Optional(
      Type.Number({ minimum: 0, maximum: 1, description: 'The chance it fires on a call it matches (default 1)' }),
    ),
    times: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: FAULT_RULE_LIMITS.times,
        description: 'It fires on the next N calls it matches, counted across every worker and instance, then stops',
      }),
    ),
    until: Type.Optional(
      Type.String({
        format: 'date-time',
        maxLength: 40,
        description: `When it expires (RFC 3339, at most ${FAULT_RULE_LIMITS.untilHours} h ahead; default ${FAULT_RULE_LIMITS.defaultMinutes} min from now)`,
      }),
    ),
  },
  {
    additionalProperties: false,
    description:
      'A fault rule: one of `code`, `soapFault`, `drop` or `malformed`, and/or `latencyMs`, on the operations and face named',
    examples: [{ operations: 'findBy*', code: 'CORE_UNAVAILABLE', times: 3 }],
  },
);
export type FaultRuleRequest = Static<typeof FaultRuleRequest>;

const nullableInteger = (description: string) => Type.Unsafe<number | null>({ type: ['integer', 'null'], description });

/** A rule as the admin API answers it. */
export const FaultRuleSchema = Type.Object(
  {
    id: Type.Integer({ description: 'Its number, for `DELETE /admin/faults/{id}`' }),
    operations: Type.String(),
    face: enumOf(FAULT_RULE_FACES, 'The face it applies to'),
    ...FaultProperties,
    probability: Type.Number(),
    times: nullableInteger('The N of "the next N calls"; null when it has no such limit'),
    remaining: nullableInteger('Calls it still fires on; null when it has no such limit'),
    fired: Type.Integer({ description: 'Calls it fired on, on every worker and instance' }),
    until: Type.String({ format: 'date-time' }),
    createdAt: Type.String({ format: 'date-time' }),
    createdBy: Type.Unsafe<string | null>({ type: ['string', 'null'], description: 'The token that added it' }),
  },
  { additionalProperties: false },
);
export type FaultRule = Static<typeof FaultRuleSchema>;

/** What happens to a call a rule fires on: the request's own properties, as the database keeps them. */
export type FaultEffect = Pick<
  FaultRuleRequest,
  'code' | 'status' | 'soapFault' | 'drop' | 'malformed' | 'latencyMs' | 'jitterMs'
>;

/** A checked request: what the store inserts. */
export interface NewFaultRule {
  readonly operations: string;
  readonly face: FaultRuleFace;
  readonly effect: FaultEffect;
  readonly probability: number;
  readonly times: number | null;
  readonly until: Date;
}

/** The failure a rule's effect ends in, when it does more than delay the answer. */
export type FaultOutcome =
  | { readonly kind: 'problem'; readonly code: SandboxFaultCode; readonly status: number }
  | { readonly kind: 'soapFault'; readonly faultClass: SoapFaultClass }
  | { readonly kind: 'drop' }
  | { readonly kind: 'malformed'; readonly form: MalformedForm };

/**
 * The failure of an effect; undefined for latency alone.
 * @example faultOutcome({ code: 'CORE_UNAVAILABLE' }) // { kind: 'problem', code: 'CORE_UNAVAILABLE', status: 503 }
 */
export function faultOutcome(effect: FaultEffect): FaultOutcome | undefined {
  if (effect.code !== undefined)
    return { kind: 'problem', code: effect.code, status: effect.status ?? SANDBOX_FAULT_PROBLEMS[effect.code][0] };
  if (effect.soapFault !== undefined) return { kind: 'soapFault', faultClass: effect.soapFault };
  if (effect.drop) return { kind: 'drop' };
  if (effect.malformed !== undefined) return { kind: 'malformed', form: effect.malformed };
  return undefined;
}

/**
 * Whether a rule's `operations` names an operation: `*`, the name itself, or a prefix ending in `*`.
 * @example matchesOperation('findBy*', 'findBySSN') // true
 */
export function matchesOperation(pattern: string, name: string): boolean {
  if (pattern === '*') return true;
  return pattern.endsWith('*') ? name.startsWith(pattern.slice(0, -1)) : name === pattern;
}

/** Whether a rule applies to a call of an operation through a face. */
export function appliesTo(rule: Pick<NewFaultRule, 'operations' | 'face'>, name: string, face: Face): boolean {
  return (rule.face === 'both' || rule.face === face) && matchesOperation(rule.operations, name);
}

/** 403: the rules are administered while fault injection is on only, as the header is honoured. */
export function faultRulesDisabled(): Problem {
  return new Problem(403, 'SANDBOX_FAULTS_DISABLED', `Fault rules are refused: fault injection is off (${TURN_ON})`);
}

/** 409: the rule set is full. */
export function tooManyFaultRules(): Problem {
  return new Problem(
    409,
    'TOO_MANY_FAULT_RULES',
    `At most ${FAULT_RULE_LIMITS.rules} fault rules are kept; remove some (DELETE /admin/faults/{id}, or all with DELETE /admin/faults)`,
  );
}

/** The effects a rule may have one of; latency may go with any. */
const OUTCOMES = ['code', 'soapFault', 'drop', 'malformed'] as const;

/** A list of names as a problem quotes it: the first few. */
const someOf = (names: readonly string[]) =>
  names.length > 8 ? `${names.slice(0, 8).join(', ')}, …` : names.join(', ');

/**
 * A request, already valid against `FaultRuleRequest`, checked for what a schema cannot say (the one thing
 * it does, a status its code is sent with, operations that exist, an `until` ahead and within bounds) and
 * made a rule; throws 400 VALIDATION_FAILED naming each property at fault.
 * @example readFaultRule({ operations: 'findBy*', code: 'CORE_UNAVAILABLE' }, ['findBySSN'], new Date()).face // 'both'
 */
export function readFaultRule(request: FaultRuleRequest, operationNames: readonly string[], now: Date): NewFaultRule {
  const errors: PropertyError[] = [];
  const fail = (property: string, detail: string) => errors.push({ pointer: property ? `/${property}` : '', detail });

  if (!operationNames.some((name) => matchesOperation(request.operations, name)))
    fail(
      'operations',
      `names no operation (names are case-sensitive, e.g. ${someOf(operationNames)}; a prefix ends in *, and * is every one)`,
    );

  const given = OUTCOMES.filter((name) => request[name] !== undefined);
  if (given.length > 1)
    fail(given[1]!, `a rule does one thing: ${given.join(' and ')} cannot go together (latencyMs may go with any one)`);
  if (given.length === 0 && request.latencyMs === undefined && request.jitterMs === undefined)
    fail('', 'a rule needs what happens: code, soapFault, drop, malformed or latencyMs');
  if (request.status !== undefined) {
    if (request.code === undefined) fail('status', 'needs the code of the problem it is the status of');
    else {
      const statuses: readonly number[] = SANDBOX_FAULT_PROBLEMS[request.code];
      if (!statuses.includes(request.status))
        fail('status', `${request.code} is answered with status ${statuses.join(' or ')}, not ${request.status}`);
    }
  }
  if ((request.latencyMs ?? 0) + (request.jitterMs ?? 0) > FAULT_RULE_LIMITS.delayMs)
    fail('jitterMs', `latencyMs and jitterMs together must be at most ${FAULT_RULE_LIMITS.delayMs}`);

  let until = new Date(now.getTime() + FAULT_RULE_LIMITS.defaultMinutes * 60_000);
  if (request.until !== undefined) {
    const latest = new Date(now.getTime() + FAULT_RULE_LIMITS.untilHours * 3_600_000);
    const at = Date.parse(request.until);
    // RFC 3339 with its offset: a time without one would mean whatever zone the server runs in.
    if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/i.test(request.until) || Number.isNaN(at))
      fail('until', 'must be a date-time with its offset, e.g. 2026-11-26T10:00:00Z');
    else if (at <= now.getTime()) fail('until', `must be in the future (it is ${now.toISOString()})`);
    else if (at > latest.getTime())
      fail('until', `must be at most ${FAULT_RULE_LIMITS.untilHours} h ahead (${latest.toISOString()})`);
    else until = new Date(at);
  }
  if (errors.length > 0) throw validationFailed(errors);

  const effect: FaultEffect = Object.fromEntries(
    (['code', 'status', 'soapFault', 'drop', 'malformed', 'latencyMs', 'jitterMs'] as const)
      .filter((name) => request[name] !== undefined)
      .map((name) => [name, request[name]]),
  );
  return {
    operations: request.operations,
    face: request.face ?? 'both',
    effect,
    probability: request.probability ?? 1,
    times: request.times ?? null,
    until,
  };
}
