/**
 * The sandbox's fault rules over the admin API: `POST /admin/faults` adds a rule, `GET /admin/faults` lists
 * those in force with how often each fired and how many calls each has left, `DELETE /admin/faults/{id}`
 * removes one and `DELETE /admin/faults` all. Like the rest of the admin API: a bearer token with the `admin`
 * scope (401, 403), the token's rate limit (429), every call audited as `admin:faults.<what>`, problem+json.
 * Only while fault injection is on: otherwise 403 SANDBOX_FAULTS_DISABLED, as the header is.
 * `GET /admin/faults/injection` says whether it is on, and `PUT /admin/faults/injection` `{"enabled": …}` turns
 * it on or off for every worker and instance (within a second), persisted in the store; the environment's
 * `COREGATE_SANDBOX_FAULTS` is only its start value.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Type, type Static } from 'typebox';
import type { Config } from '../config.js';
import { FAULT_RULE_LIMITS, FaultRuleRequest, FaultRuleSchema, faultRulesDisabled } from '../contract/fault-rules.js';
import { forbidden, type ProblemCode } from '../contract/problems.js';
import type { Db } from '../database/database.js';
import { faultRuleAdmin } from '../operations/fault-rules.js';
import type { Authenticator } from '../security/authenticator.js';
import type { RateLimiter } from '../security/rate-limit.js';
import type { AuditLog } from '../store/audit.js';
import type { FaultInjectionSwitch } from '../store/fault-injection.js';
import { ADMIN_PROBLEMS_KEY, ADMIN_TAG, adminEvent, admitBearer } from './admin-routes.js';
import type { FaultRules } from './fault-rules.js';
import type { RateLimit } from './metrics.js';

export interface FaultRuleRoutesOptions {
  readonly db: Db;
  readonly config: Config;
  readonly authenticator: Authenticator;
  readonly limiter: RateLimiter;
  readonly onRateLimited?: (limit: RateLimit) => void;
  readonly audit: AuditLog;
  /** The rule set this process applies. */
  readonly rules: FaultRules;
  /** Whether fault injection is on, and the switch. */
  readonly injection: FaultInjectionSwitch;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** A fault-rule route's name in the audit trail (`admin:faults.add`). */
    faultRulesAudit?: string;
    /** The route of the switch itself: answered whether fault injection is on or off. */
    faultInjectionSwitch?: boolean;
  }
}

const FaultRuleList = Type.Object(
  { rules: Type.Array(FaultRuleSchema, { description: 'The rules in force, oldest first' }) },
  { additionalProperties: false },
);
const Removed = Type.Object(
  { removed: Type.Integer({ description: 'How many rules were removed' }) },
  { additionalProperties: false },
);
const FaultInjection = Type.Object(
  {
    enabled: Type.Boolean({
      description: 'Whether fault injection (the X-Coregate-Fault header and the fault rules) is on',
    }),
  },
  { additionalProperties: false },
);
type FaultInjection = Static<typeof FaultInjection>;
const RuleParams = Type.Object(
  { id: Type.String({ pattern: '^[1-9][0-9]{0,8}$', description: "The rule's id" }) },
  { additionalProperties: false },
);

/** Problems every fault-rule call may answer beyond the admin API's own (401, 403, 429). */
const SANDBOX: Readonly<Record<number, readonly ProblemCode[]>> = { 403: ['FORBIDDEN', 'SANDBOX_FAULTS_DISABLED'] };

/** …and the switch's own, answered whether fault injection is on or off. */
const SWITCH: Readonly<Record<number, readonly ProblemCode[]>> = { 403: ['FORBIDDEN'] };

const MINUTE = 60;

/** A route's OpenAPI description, as the admin API's other routes have it. */
const documented = (
  operationId: string,
  summary: string,
  description: string,
  problems: Readonly<Record<number, readonly ProblemCode[]>>,
  refusals: Readonly<Record<number, readonly ProblemCode[]>> = SANDBOX,
) => ({
  tags: [ADMIN_TAG.name],
  operationId,
  summary,
  description,
  security: [{ bearerAuth: ['admin'] }],
  [ADMIN_PROBLEMS_KEY]: { ...refusals, ...problems },
});

export function registerFaultRuleRoutes(app: FastifyInstance, options: FaultRuleRoutesOptions): void {
  const { db, config, authenticator, limiter, audit, rules, injection } = options;
  const general = { limit: config.rateLimitPerMinute, windowSeconds: MINUTE };

  /** Who may call: a live bearer token (401), within its rate limit (429), with `admin` (403), faults on (403). */
  const admit = async (request: FastifyRequest, reply: FastifyReply) => {
    await admitBearer(request, reply, { authenticator, limiter, general, onRateLimited: options.onRateLimited });
    if (!request.bearer!.scopes.includes('admin')) throw forbidden('The token lacks the admin scope');
    if (!request.routeOptions.config.faultInjectionSwitch && !(await injection.isOn())) throw faultRulesDisabled();
  };

  void app.register(async (faults) => {
    faults.addHook('onRequest', admit);
    faults.addHook('onResponse', async (request, reply) => {
      const operation = request.routeOptions.config.faultRulesAudit;
      if (!operation) return;
      audit.record(adminEvent(request, reply, operation, request.auditTarget));
    });

    faults.get(
      '/admin/faults/injection',
      {
        config: { faultRulesAudit: 'admin:faults.state', faultInjectionSwitch: true },
        schema: {
          ...documented(
            'getFaultInjection',
            'Whether fault injection is on',
            'Off, the `X-Coregate-Fault` header is refused and no fault rule applies. `COREGATE_SANDBOX_FAULTS` says until it is first switched.',
            {},
            SWITCH,
          ),
          response: { 200: FaultInjection },
        },
      },
      async (): Promise<FaultInjection> => ({ enabled: await injection.isOn() }),
    );

    faults.put(
      '/admin/faults/injection',
      {
        config: { faultRulesAudit: 'admin:faults.switch', faultInjectionSwitch: true },
        schema: {
          ...documented(
            'setFaultInjection',
            'Turn fault injection on or off, for every worker and instance',
            'Kept in the store: every worker and instance applies it within a second, and it outlives restarts (`COREGATE_SANDBOX_FAULTS` is only the value before the first switch). Off, the rules are kept but none applies.',
            { 400: ['VALIDATION_FAILED', 'MALFORMED_JSON'], 415: ['UNSUPPORTED_MEDIA_TYPE'] },
            SWITCH,
          ),
          body: FaultInjection,
          response: { 200: FaultInjection },
        },
      },
      async (request): Promise<FaultInjection> => {
        const { enabled } = request.body as FaultInjection;
        request.auditTarget = enabled ? 'faults:on' : 'faults:off';
        await injection.set(enabled);
        return { enabled };
      },
    );

    faults.post(
      '/admin/faults',
      {
        config: { faultRulesAudit: 'admin:faults.add' },
        schema: {
          ...documented(
            'addFaultRule',
            'Add a fault rule: calls it matches fail as a failing core makes them fail',
            `Applies to unmodified clients, on every worker and instance within a second, until it expires (at most ${FAULT_RULE_LIMITS.untilHours} h; ${FAULT_RULE_LIMITS.defaultMinutes} min by default) or has fired \`times\` times. On the JSON API a call gets the gateway's answer to that failure of its core; on the SOAP face, the failure itself. At most ${FAULT_RULE_LIMITS.rules} rules are kept.`,
            {
              400: ['VALIDATION_FAILED', 'MALFORMED_JSON'],
              409: ['TOO_MANY_FAULT_RULES'],
              413: ['PAYLOAD_TOO_LARGE'],
              415: ['UNSUPPORTED_MEDIA_TYPE'],
            },
          ),
          body: FaultRuleRequest,
          response: { 201: FaultRuleSchema },
        },
      },
      async (request, reply) => {
        const added = await faultRuleAdmin.add(db, request.body as FaultRuleRequest, request.bearer?.tokenName ?? null);
        request.auditTarget = `fault:${added.id}`;
        rules.invalidate();
        return reply.code(201).send(added);
      },
    );

    faults.get(
      '/admin/faults',
      {
        config: { faultRulesAudit: 'admin:faults.list' },
        schema: {
          ...documented(
            'listFaultRules',
            'List the fault rules in force, with how often each fired',
            'Oldest first; `fired` and `remaining` count across every worker and instance.',
            {},
          ),
          response: { 200: FaultRuleList },
        },
      },
      () => faultRuleAdmin.list(db),
    );

    faults.delete(
      '/admin/faults/:id',
      {
        config: { faultRulesAudit: 'admin:faults.remove' },
        schema: {
          ...documented('removeFaultRule', 'Remove a fault rule', 'Every worker stops applying it at once.', {
            400: ['VALIDATION_FAILED'],
            404: ['NOT_FOUND'],
          }),
          params: RuleParams,
          response: { 200: Removed },
        },
      },
      async (request) => {
        const { id } = request.params as { id: string };
        request.auditTarget = `fault:${id}`;
        const removed = await faultRuleAdmin.remove(db, Number(id));
        rules.invalidate();
        return removed;
      },
    );

    faults.delete(
      '/admin/faults',
      {
        config: { faultRulesAudit: 'admin:faults.clear' },
        schema: {
          ...documented('clearFaultRules', 'Remove every fault rule', 'Every worker stops applying them at once.', {}),
          response: { 200: Removed },
        },
      },
      async (request) => {
        request.auditTarget = 'faults';
        const removed = await faultRuleAdmin.clear(db);
        rules.invalidate();
        return removed;
      },
    );
  });
}
