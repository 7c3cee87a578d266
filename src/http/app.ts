/**
 * Builds the HTTP service: every operation of the registry as a POST route with its schemas and the
 * envelope checks (operation-routes.ts), the ops endpoints, the API reference and security headers.
 */
import { randomUUID } from 'node:crypto';
import Fastify, {
  LogController,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
  type FastifyServerOptions,
} from 'fastify';
import { hostAndPort, type Config } from '../config.js';
import { checkCredentialPolicy } from '../operations/credential-policy.js';
import { CORE_OPERATIONS, OPERATIONS, SHARED_SCHEMAS } from '../operations/index.js';
import { Authenticator } from '../security/authenticator.js';
import type { JwtVerifier } from '../security/jwt.js';
import { createRateLimiter, type RateLimiter } from '../security/rate-limit.js';
import type { Secrets } from '../crypto/secrets.js';
import { AuditLog } from '../store/audit.js';
import type { DatabaseKind, Db } from '../database/database.js';
import { errorHandler, sendProblem } from './error-handler.js';
import { registerJsonBodyParser } from './json-body.js';
import { registerMaintenance } from './maintenance.js';
import { KEY_WRITES_DEFAULTS, KeyWrites } from '../store/key-writes.js';
import { registerAdminRoutes } from './admin-routes.js';
import { registerFaultRuleRoutes } from './fault-rule-routes.js';
import { FaultRules } from './fault-rules.js';
import { SimulatedFailures } from '../core/simulated-failures.js';
import { FaultRuleSet } from '../store/fault-rules.js';
import { FaultInjectionSwitch } from '../store/fault-injection.js';
import { announceServer, withdrawServer } from '../database/data-dir-lock.js';
import { withSafeErrorLogging } from './log-safety.js';
import { logRequest } from './logging.js';
import { registerRequestTracing, tracedRequestEnd, withTraceIds } from './tracing.js';
import { registerMetricsRoute, ServiceMetrics } from './metrics.js';
import { registerApiReference } from './api-reference.js';
import { acceptedCredentials, auditEvent, OperationPipeline } from './operation-pipeline.js';
import { registerOperationRoutes } from './operation-routes.js';
import { registerSoapRoutes, soapEndpoints } from './soap-routes.js';
import { createSymxCodec } from '../symxchange/codec.js';
import { KNOWN_FACTS } from '../catalog/symxchange/index.js';
import { registerOpsRoutes } from './ops-routes.js';
import { closeIfRefused, Connections, registerBodyAdmission } from './connections.js';
import { clientErrorHandler } from './client-errors.js';
import { lazySerializers, lazyValidators } from './lazy-compilers.js';
import { Problem } from '../contract/problems.js';
import { createCore, type Core } from '../core/index.js';

export interface AppOptions {
  readonly db: Db;
  /** Which database `db` is: the audit trail's upkeep differs (partitions on PostgreSQL). */
  readonly databaseKind: DatabaseKind;
  readonly secrets: Secrets;
  readonly config: Config;
  /** Fastify logger options; false in tests. */
  readonly logger?: FastifyServerOptions['logger'];
  /** Accepts identity-provider JWTs as bearer tokens when given. */
  readonly jwt?: JwtVerifier;
  /** Defaults to Redis when `config.redisUrl` is set, per-process memory otherwise. */
  readonly limiter?: RateLimiter;
  /** What answers: by default the core the settings choose (the store, or a SymXchange core). */
  readonly core?: Core;
  /**
   * The demo set-up's administrative password (demo-credentials.json): `GET /admin/demo-credentials` answers
   * it, for /docs to fill in its examples, while the store holds the demo dataset and it is in force.
   */
  readonly demoAdminPassword?: string;
  /** The demo set-up's user password (demo-credentials.json), on the same terms. */
  readonly demoUserPassword?: string;
  /**
   * Whether the instance is shutting down (serve, from the first signal on): /ready then answers 503 (a
   * balancer takes it out while `COREGATE_SHUTDOWN_DRAIN_MS` keeps it serving), and each answer closes its
   * connection, so that a kept-alive connection (a load balancer's) does not stay open, idle, and hold the exit
   * back to the grace period.
   */
  readonly stopping?: () => boolean;
}

const REQUEST_ID = /^[A-Za-z0-9._-]{1,64}$/;
/** How often Node enforces the header and request deadlines on open connections. */
const CONNECTION_CHECK_MS = 1_000;

/** Paths of the redacted log fields: credentials and the bearer token never reach the log. */
export const LOG_REDACT = [
  'req.headers.authorization',
  'req.headers.cookie',
  'req.body.Credentials',
  '*.Password',
  '*.CardNumber',
  '*.SSN',
  '*.MICR',
];

/** Headers of every API response; the interactive reference sets its own content policy. */
const SECURITY_HEADERS = {
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'cross-origin-resource-policy': 'same-origin',
  'strict-transport-security': 'max-age=31536000; includeSubDomains',
};
const API_CONTENT_POLICY = "default-src 'none'; frame-ancestors 'none'";

/**
 * The headers of every answer: the request id, the security headers, and `Connection: close` after a refusal
 * or once the instance is `stopping`.
 */
function answerHeaders(request: FastifyRequest, reply: FastifyReply, stopping?: () => boolean): void {
  reply.header('x-request-id', request.id);
  reply.headers(SECURITY_HEADERS);
  if (!request.url.startsWith('/docs')) reply.header('content-security-policy', API_CONTENT_POLICY);
  if (request.operation) reply.header('cache-control', 'no-store');
  if (stopping?.()) reply.header('connection', 'close');
  else closeIfRefused(request, reply);
}

export async function buildApp(options: AppOptions): Promise<FastifyInstance> {
  const { db, secrets, config } = options;
  checkCredentialPolicy(config.credentialPolicy);
  const metrics = new ServiceMetrics({ db });
  // No client address takes more than its share of the connections; at the cap the largest holders give way.
  const connections = new Connections({
    max: config.maxConnections,
    perAddress: config.maxConnectionsPerAddress,
    trustedProxies: config.trustedProxies,
    onClosed: (reason) => metrics.connectionClosed(reason),
  });
  const app = Fastify({
    // Errors reach the log without SQL text, parameters or record values (log-safety.ts).
    // …and, when spans are exported, with the trace id of the request they were written in (tracing.ts).
    logger: withTraceIds(withSafeErrorLogging(options.logger ?? false)),
    // One line per request, written when it is answered (logging.ts), instead of Fastify's two.
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: config.bodyLimit,
    // Slow and stuck clients: the header block and the whole request each have a deadline, an idle
    // keep-alive connection is closed, and Node checks the deadlines every second (default: 30 s).
    requestTimeout: config.requestTimeoutMs,
    keepAliveTimeout: config.keepAliveTimeoutMs,
    connectionTimeout: config.requestTimeoutMs,
    http: {
      headersTimeout: Math.min(config.headersTimeoutMs, config.requestTimeoutMs),
      connectionsCheckingInterval: CONNECTION_CHECK_MS,
      // An HTTP/1.1 request without Host is a problem like any bad request (screenRequests), not Node's empty 400.
      requireHostHeader: false,
    },
    // What Node's parser cannot read (431, a malformed header or body, a missed deadline) is a problem too.
    clientErrorHandler: clientErrorHandler(connections, {
      ...SECURITY_HEADERS,
      'content-security-policy': API_CONTENT_POLICY,
    }),
    // A load balancer named in COREGATE_TRUSTED_PROXIES tells the client's address (X-Forwarded-For); any
    // other sender of that header is not believed.
    ...(config.trustedProxies.length > 0 ? { trustProxy: [...config.trustedProxies] } : {}),
    // A URL Fastify cannot route (bad percent-encoding) is answered as every other error: problem+json.
    // (Fastify runs no onSend hook for it: the headers every answer carries are set here.)
    frameworkErrors: (_error, request, reply) => {
      answerHeaders(request, reply, options.stopping);
      return sendProblem(reply, new Problem(400, 'VALIDATION_FAILED', 'The request URL is not valid'), request);
    },
    onProtoPoisoning: 'error',
    onConstructorPoisoning: 'error',
    requestIdHeader: false,
    genReqId: (request) => {
      const given = request.headers['x-request-id'];
      return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
    },
    // Each route's validator and serializer is compiled on its first use (lazy-compilers.ts).
    schemaController: { compilersFactory: { buildValidator: lazyValidators(), buildSerializer: lazySerializers() } },
    ajv: {
      // Strict types (a number is never coerced into a string identifier), every error reported, and
      // nothing silently removed: unknown properties are rejected by the schemas.
      customOptions: {
        allErrors: true,
        allowUnionTypes: true,
        coerceTypes: false,
        removeAdditional: false,
        useDefaults: false,
      },
    },
  });

  // Connections that do not fit are closed as they arrive, so a flood of idle sockets cannot exhaust file descriptors.
  connections.watch(app.server);
  // Each request's span, first, so that all the request does is inside it (tracing.ts; off, nothing is
  // added). The one onRequest hook after it screens and admits (operation-routes.ts).
  registerRequestTracing(app);
  const authenticator = new Authenticator(db, secrets, config, {
    jwt: options.jwt,
    onLockout: (credential, event) => metrics.lockout(credential, event),
  });
  const limiter =
    options.limiter ??
    createRateLimiter(config.redisUrl, {
      // Long enough that a busy event loop under a burst does not turn into an outage; short enough that
      // noticing one costs a request at most a second (during it, no request waits for Redis).
      timeoutMs: 1000,
      onError: (error) =>
        app.log.warn(
          { err: error },
          `Redis at ${hostAndPort(config.redisUrl ?? '', 6379)} (REDIS_URL) is unavailable (${error.message}); ` +
            'rate limits are enforced per instance until it is back',
        ),
      onRecover: () => app.log.info('Redis is back; rate limits are shared again'),
    });
  const audit = new AuditLog(db, {
    enabled: config.auditEnabled,
    flushMs: config.auditFlushMs,
    bufferMax: config.auditBufferMax,
    onError: (error, message) => app.log.error(error ? { err: error } : {}, message),
  });
  app.addHook('onClose', async () => {
    await audit.flush();
    if (!options.limiter) await limiter.close();
  });
  app.decorate('audit', audit);
  if (!config.auditEnabled) app.log.warn('COREGATE_AUDIT=off: no call is audited');

  const allowedMethods = new Map<string, Set<string>>();
  app.addHook('onRoute', (route) => {
    const methods = allowedMethods.get(route.url) ?? new Set<string>();
    for (const method of [route.method].flat()) methods.add(method);
    allowedMethods.set(route.url, methods);
  });

  registerJsonBodyParser(app);
  registerBodyAdmission(app);
  app.setErrorHandler(errorHandler);
  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split('?')[0] ?? '';
    const methods = allowedMethods.get(path);
    if (methods) {
      const allow = [...methods].sort().join(', ');
      return sendProblem(
        reply,
        new Problem(405, 'METHOD_NOT_ALLOWED', `${request.method} is not allowed here; use ${allow}`, undefined, {
          allow,
        }),
        request,
      );
    }
    // A Sym the gateway fronts no core for.
    const sym = /^\/gw\/([0-9]+)\//.exec(path)?.[1];
    if (sym !== undefined && !core.syms.includes(Number(sym))) {
      return sendProblem(
        reply,
        new Problem(
          404,
          'NOT_FOUND',
          `No core is configured for Sym ${sym}; this service answers for Sym ${core.syms.join(', ')}`,
        ),
        request,
      );
    }
    return sendProblem(reply, new Problem(404, 'NOT_FOUND', `No resource at ${path}`), request);
  });

  // Callback hooks, not async ones: no promise per request for work that never waits.
  app.addHook('onSend', (request, reply, payload, done) => {
    answerHeaders(request, reply, options.stopping);
    done(null, payload);
  });

  for (const schema of SHARED_SCHEMAS) app.addSchema(schema);
  // Fault injection on or off, switched while serving; COREGATE_SANDBOX_FAULTS until first switched.
  const faultInjectionSwitch = new FaultInjectionSwitch(db, config.sandboxFaults);
  // One codec per release the SOAP face serves; release 3.0's (the first) also names each operation's SOAP twin.
  const codecs = KNOWN_FACTS.map((facts) =>
    createSymxCodec({ operations: CORE_OPERATIONS, schemas: SHARED_SCHEMAS, facts }),
  );
  const codec = codecs[0]!;
  await registerApiReference(app, {
    operations: OPERATIONS,
    acceptedCredentials: (operation) => acceptedCredentials(operation, config),
    problems: {
      gateway: (options.core?.kind ?? config.core) === 'symxchange',
      carriedByCore: (operation) => codec.mapping.carries(operation),
      // As the switch stands at start (the reference is made once).
      sandboxFaults: await faultInjectionSwitch.isOn(),
    },
  });

  const core =
    options.core ??
    createCore(config, {
      operations: CORE_OPERATIONS,
      schemas: SHARED_SCHEMAS,
      onCircuit: (sym, state, url) =>
        state === 'open'
          ? app.log.warn({ sym, core: url.origin }, 'the core is failing: its circuit is open, calls are held back')
          : app.log.info({ sym, core: url.origin }, 'the core answers again: its circuit is closed'),
      log: app.log,
    });
  if (!options.core) app.addHook('onClose', () => core.close());
  if (core.kind === 'symxchange') {
    const cores = config.symxchange!.urls;
    app.log.info(
      { cores: Object.fromEntries([...cores].map(([sym, url]) => [sym, url.origin])) },
      "gateway mode: every operation is answered by its Sym's SymXchange core",
    );
  }
  // Before the first call: which SymXchange release each core speaks, read from its own WSDLs.
  if (!options.core) await core.start?.();
  metrics.watchCore(core);
  // Every request is counted and logged once; every call to an operation is audited with its outcome,
  // whichever edge it came through (a write's event was committed with the write itself, see runWrite).
  const requestEnded = tracedRequestEnd(config.tracing, (request: FastifyRequest, reply: FastifyReply) => {
    metrics.requestEnded(request, reply);
    logRequest(request, reply);
    const operation = request.operation;
    if (!operation || request.auditedInTransaction) return;
    audit.record(auditEvent(request, operation, reply.statusCode, request.problemCode ?? null));
  });
  app.addHook('onResponse', (request, reply, done) => {
    try {
      requestEnded(request, reply);
    } catch (error) {
      return done(error as Error);
    }
    done();
  });
  // The sandbox's fault rules, read from the database while fault injection is on (fault-rules.ts).
  const faultRules = new FaultRules(
    new FaultRuleSet(db, app.log),
    new SimulatedFailures(config, codec.mapping),
    faultInjectionSwitch,
  );
  // A gateway's key released or answered after its call, while the database was away, is written once it is back.
  const keyWrites = new KeyWrites({
    ...KEY_WRITES_DEFAULTS,
    onEvent: (event) => {
      if (event.kind === 'waiting')
        app.log.warn({ err: event.error }, 'Idempotency-Key changes kept in memory until the database is back');
      else if (event.kind === 'written')
        app.log.info({ written: event.written }, 'kept Idempotency-Key changes written');
      else app.log.warn({ key: event.key }, 'a kept Idempotency-Key change was given up: the key waits for a takeover');
    },
  });
  app.addHook('onClose', () => keyWrites.close());
  const pipeline = new OperationPipeline({
    core,
    db,
    keyWrites,
    secrets,
    config,
    sharedSchemas: SHARED_SCHEMAS,
    authenticator,
    limiter,
    audit,
    onRateLimited: (limit) => metrics.rateLimited(limit),
    // A call the sandbox dropped has no response, hence no onResponse: it ends here.
    sandboxFaults: { isOn: () => faultInjectionSwitch.isOn(), onDropped: requestEnded },
    faultRules,
  });
  registerOperationRoutes(app, { operations: OPERATIONS, authenticator, pipeline, syms: core.syms });
  registerSoapRoutes(app, { config, codecs, authenticator, pipeline });
  const soapPaths = new Map(soapEndpoints([codec]).map((e) => [`${e.service}|${e.family}`, e.path]));
  registerOpsRoutes(app, {
    db,
    core,
    stopping: options.stopping,
    operations: OPERATIONS,
    soapOf: (operation) =>
      codec.mapping.carries(operation)
        ? {
            endpoint: soapPaths.get(`${operation.service}|${operation.family}`)!,
            action: codec.mapping.wireOperation(operation).soapAction,
          }
        : undefined,
  });
  registerMetricsRoute(app, { metrics, config, authenticator });
  registerAdminRoutes(app, {
    db,
    secrets,
    config,
    authenticator,
    limiter,
    onRateLimited: (limit) => metrics.rateLimited(limit),
    core,
    audit,
    demoCredentials: { adminPassword: options.demoAdminPassword, userPassword: options.demoUserPassword },
  });
  registerFaultRuleRoutes(app, {
    db,
    config,
    authenticator,
    limiter,
    onRateLimited: (limit) => metrics.rateLimited(limit),
    audit,
    rules: faultRules,
    injection: faultInjectionSwitch,
  });
  // The embedded database's server says where it listens, for the CLI on its data directory (cli/remote.ts).
  if (!config.databaseUrl) {
    app.addHook('onListen', async () => void announceServer(config.dataDir, listeningUrl(app, config)));
    app.addHook('onClose', async () => withdrawServer(config.dataDir));
  }
  registerMaintenance(app, { db, databaseKind: options.databaseKind, config });
  return app;
}

/**
 * The URL this app listens at, as a client on this host reaches it: a wildcard address (`0.0.0.0`, `::`) as
 * the loopback address of its family.
 */
function listeningUrl(app: FastifyInstance, config: Config): string {
  const address = app.server.address();
  if (address === null || typeof address === 'string') return `http://${config.host}:${config.port}`;
  const host = address.address === '0.0.0.0' ? '127.0.0.1' : address.address === '::' ? '::1' : address.address;
  return `http://${host.includes(':') ? `[${host}]` : host}:${address.port}`;
}

declare module 'fastify' {
  interface FastifyInstance {
    /** The audit trail writer, flushed on close; tests flush it to read what was recorded. */
    audit: AuditLog;
  }
}
