/**
 * The admin API (`/admin/*`), administering a running coregate as WireMock's `/__admin` or Kong's admin API
 * do: API tokens, core users, the audit trail, export, import and reset, and the demo's passwords for /docs.
 * Every call needs a bearer token with the `admin` scope (401 without one, 403 without the scope; `POST
 * /admin/reset` also takes `store:reset`), counts against the token's rate limit like any call, is audited as
 * `admin:<what>` with what it acted on, and fails as problem+json. The handlers are a line each: what they do
 * is operations/administration.ts, shared with the CLI (the demo's passwords: api-reference.ts); the
 * messages are contract/admin.ts.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest, FastifySchema, RouteOptions } from 'fastify';
import type { Readable } from 'node:stream';
import { Type } from 'typebox';
import type { Config } from '../config.js';
import {
  AuditEventInfo,
  AuditPage,
  AuditQuery,
  CreatedToken,
  DemoCredentials,
  ImportQuery,
  Imported,
  ResetAnswer,
  ResetBody,
  TokenCreateBody,
  TokenInfo,
  TokenList,
  TokenParams,
  UserAddBody,
  UserInfo,
  UserList,
  UserParams,
  UserPasswordBody,
  UserUnlocked,
  UserWithPassword,
} from '../contract/admin.js';
import { forbidden, Problem, rateLimited, validationFailed, type ProblemCode } from '../contract/problems.js';
import type { Scope } from '../contract/scopes.js';
import type { Core } from '../core/index.js';
import type { Secrets } from '../crypto/secrets.js';
import type { Db } from '../database/database.js';
import { adminAudit, adminTokens, adminUsers, importRecordFile, storeBusy } from '../operations/administration.js';
import { DEFAULT_SEED } from '../seed/load.js';
import { resetToDemo } from '../seed/reset.js';
import type { Authenticator } from '../security/authenticator.js';
import type { RateLimiter } from '../security/rate-limit.js';
import { demoDataset } from '../store/access.js';
import type { AuditEvent, AuditLog } from '../store/audit.js';
import { RecordFileError } from '../store/record-file.js';
import { exportRecords, StoreBusyError } from '../store/record-transfer.js';
import { demoCredentials } from './demo-credentials.js';
import type { RateLimit } from './metrics.js';
import { fileLines, NDJSON, spoolBody, streamLines, type LineWriter } from './ndjson.js';
import { requestTraceId } from './tracing.js';

export interface AdminRoutesOptions {
  readonly db: Db;
  readonly secrets: Secrets;
  readonly config: Config;
  readonly authenticator: Authenticator;
  readonly limiter: RateLimiter;
  /** Told of each call a rate limit refuses, for the metrics. */
  readonly onRateLimited?: (limit: RateLimit) => void;
  /** What answers: users, records and their export, import and reset are coregate's own store's. */
  readonly core: Core;
  readonly audit: AuditLog;
  /** The demo set-up's passwords, read from demo-credentials.json at start: `GET /admin/demo-credentials` checks them. */
  readonly demoCredentials?: DemoCredentials;
}

/** What the admin API's hooks need to know of a route (its `config.admin`). */
interface AdminRouteConfig {
  /** The audit trail's name of the call: `admin:token.create`. */
  readonly operation: string;
  /** Any one of them admits a token. */
  readonly scopes: readonly Scope[];
  /** Refused with 501 in gateway mode: it reads or changes coregate's own store. */
  readonly storeOnly: boolean;
  /** The body may be left out (it is then `{}`). */
  readonly optionalBody: boolean;
  /** The body is NDJSON, handed to the handler unread. */
  readonly ndjsonBody: boolean;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** What an administrative call acted on, for its audit event (`token:ci-bot`, `user:25`). */
    auditTarget?: string;
    /** A streamed answer's state: `complete` once every line was written, `cut` if it ended before. */
    streamed?: 'streaming' | 'complete' | 'cut';
  }
  interface FastifyContextConfig {
    admin?: AdminRouteConfig;
  }
}

/** The OpenAPI tag of the admin API and what it says. */
export const ADMIN_TAG = {
  name: 'admin',
  description:
    'Administer the running service (scope `admin`, given to the demo token and never by default): API tokens, ' +
    'core users (UserNumberCredentials), the audit trail, the store’s export, import and reset, and the ' +
    'demo’s passwords for /docs. The CLI calls these when a server holds its data directory or `COREGATE_URL` ' +
    'is set.',
} as const;

/** Where the OpenAPI completion finds the problems a route answers beyond those of every admin call. */
export const ADMIN_PROBLEMS_KEY = 'x-coregate-problems';
/** Where it finds a body the route reads itself (NDJSON), or that the body may be left out. */
export const ADMIN_BODY_KEY = 'x-coregate-body';

type Problems = Readonly<Partial<Record<number, readonly ProblemCode[]>>>;

/** Problems of a JSON body: not valid JSON or not valid for the call, too large, or of another media type. */
const JSON_BODY: Problems = {
  400: ['VALIDATION_FAILED', 'MALFORMED_JSON'],
  413: ['PAYLOAD_TOO_LARGE'],
  415: ['UNSUPPORTED_MEDIA_TYPE'],
};
const STORE_ONLY: Problems = { 501: ['STORE_ONLY'] };
const USER_PATH: Problems = { 400: ['VALIDATION_FAILED'], 404: ['NOT_FOUND'], ...STORE_ONLY };

/** Lines of a records file longer than this are refused rather than held in memory. */
const MAX_RECORD_LINE_BYTES = 1024 * 1024;
/** Seconds a caller refused an export is told to wait: an export of the demo's size takes about that. */
const EXPORT_RETRY_AFTER_SECONDS = 5;
const MINUTE = 60;

interface AdminRoute {
  readonly method: 'GET' | 'POST' | 'DELETE';
  readonly url: string;
  readonly operation: string;
  readonly operationId: string;
  readonly summary: string;
  readonly description?: string;
  readonly scopes?: readonly Scope[];
  readonly storeOnly?: boolean;
  readonly optionalBody?: boolean;
  readonly ndjsonBody?: boolean;
  /** The largest body, when it is not `COREGATE_BODY_LIMIT` (a declared longer one is a 413 before it is sent). */
  readonly bodyLimit?: number;
  readonly problems?: Problems;
  readonly schema: Pick<FastifySchema, 'body' | 'querystring' | 'params'> & {
    readonly response: FastifySchema['response'];
  };
  readonly handler: (request: FastifyRequest, reply: FastifyReply) => Promise<unknown>;
}

const merge = (...all: Problems[]): Problems => {
  const merged: Partial<Record<number, ProblemCode[]>> = {};
  for (const problems of all)
    for (const [status, codes] of Object.entries(problems)) {
      merged[Number(status)] = [...new Set([...(merged[Number(status)] ?? []), ...(codes ?? [])])];
    }
  return merged;
};

const strictEmpty = Type.Object({}, { additionalProperties: false });

/** A Content-Type without its parameters, in lower case: `application/x-ndjson; charset=utf-8` → `application/x-ndjson`. */
const mediaType = (contentType: string | undefined) => (contentType ?? '').split(';')[0]!.trim().toLowerCase();

export function registerAdminRoutes(app: FastifyInstance, options: AdminRoutesOptions): void {
  const { db, secrets, config, authenticator, limiter, core, audit, demoCredentials: demo = {} } = options;
  const general = { limit: config.rateLimitPerMinute, windowSeconds: MINUTE };
  const exportSlots = new ExportSlots(config.exportConcurrency, () => options.onRateLimited?.('export'));
  const sendLines = (request: FastifyRequest, reply: FastifyReply, produce: Parameters<typeof streamLines>[0]) =>
    sendExport(request, reply, produce, { slots: exportSlots, stallMs: config.exportStallMs });
  const userNumber = (request: FastifyRequest) => {
    const number = Number((request.params as { number: string }).number);
    request.auditTarget = `user:${number}`;
    return number;
  };

  const routes: AdminRoute[] = [
    {
      method: 'GET',
      url: '/admin/tokens',
      operation: 'admin:token.list',
      operationId: 'listTokens',
      summary: 'List the API tokens (never their secrets)',
      schema: { response: { 200: TokenList } },
      handler: () => adminTokens.list(db),
    },
    {
      method: 'POST',
      url: '/admin/tokens',
      operation: 'admin:token.create',
      operationId: 'createToken',
      summary: 'Create an API token: its secret is in the answer, once',
      problems: merge(JSON_BODY, { 409: ['ALREADY_EXISTS'] }),
      schema: { body: TokenCreateBody, response: { 201: CreatedToken } },
      handler: async (request, reply) => {
        const body = request.body as TokenCreateBody;
        request.auditTarget = `token:${body.name}`;
        const created = await adminTokens.create(db, body);
        reply.code(201);
        return created;
      },
    },
    {
      method: 'DELETE',
      url: '/admin/tokens/:name',
      operation: 'admin:token.revoke',
      operationId: 'revokeToken',
      summary: 'Revoke an API token',
      description: 'Calls with it are refused within `COREGATE_TOKEN_CACHE_MS` (5 s by default).',
      problems: { 400: ['VALIDATION_FAILED'], 404: ['NOT_FOUND'] },
      schema: { params: TokenParams, response: { 200: TokenInfo } },
      handler: (request) => {
        const { name } = request.params as { name: string };
        request.auditTarget = `token:${name}`;
        return adminTokens.revoke(db, name);
      },
    },
    {
      method: 'GET',
      url: '/admin/users',
      operation: 'admin:user.list',
      operationId: 'listUsers',
      summary: 'List the core users (UserNumberCredentials), with their password lockouts',
      storeOnly: true,
      problems: STORE_ONLY,
      schema: { response: { 200: UserList } },
      handler: () => adminUsers.list(db, config.lockoutSeconds),
    },
    {
      method: 'POST',
      url: '/admin/users',
      operation: 'admin:user.add',
      operationId: 'addUser',
      summary: 'Add a core user; a generated password is in the answer, once',
      storeOnly: true,
      problems: merge(JSON_BODY, STORE_ONLY, { 409: ['ALREADY_EXISTS'] }),
      schema: { body: UserAddBody, response: { 201: UserWithPassword } },
      handler: async (request, reply) => {
        const body = request.body as UserAddBody;
        request.auditTarget = `user:${body.userNumber}`;
        const added = await adminUsers.add(db, body);
        reply.code(201);
        return added;
      },
    },
    ...(['disable', 'enable'] as const).map((action): AdminRoute => ({
      method: 'POST',
      url: `/admin/users/:number/${action}`,
      operation: `admin:user.${action}`,
      operationId: `${action}User`,
      summary:
        action === 'disable'
          ? 'Disable a user: its credentials are refused and its logon sessions end'
          : 'Enable a disabled user again',
      storeOnly: true,
      optionalBody: true,
      problems: merge(JSON_BODY, USER_PATH),
      schema: { params: UserParams, body: strictEmpty, response: { 200: UserInfo } },
      handler: (request) => adminUsers.setDisabled(db, userNumber(request), action === 'disable'),
    })),
    {
      method: 'POST',
      url: '/admin/users/:number/unlock',
      operation: 'admin:user.unlock',
      operationId: 'unlockUser',
      summary: "Clear a user's password lockouts (for every caller)",
      storeOnly: true,
      optionalBody: true,
      problems: merge(JSON_BODY, USER_PATH),
      schema: { params: UserParams, body: strictEmpty, response: { 200: UserUnlocked } },
      handler: (request) => adminUsers.unlock(db, userNumber(request)),
    },
    {
      method: 'POST',
      url: '/admin/users/:number/password',
      operation: 'admin:user.password',
      operationId: 'setUserPassword',
      summary: "Set a user's password: the one given, or a generated one in the answer, once",
      storeOnly: true,
      optionalBody: true,
      problems: merge(JSON_BODY, USER_PATH),
      schema: { params: UserParams, body: UserPasswordBody, response: { 200: UserWithPassword } },
      handler: (request) =>
        adminUsers.setPassword(db, userNumber(request), (request.body as UserPasswordBody).password),
    },
    {
      method: 'GET',
      url: '/admin/demo-credentials',
      operation: 'admin:demo-credentials.read',
      operationId: 'readDemoCredentials',
      summary: "The demo set-up's passwords, while the store holds the demo dataset and they are in force",
      description:
        "What /docs puts in place of its examples' `<admin password>` and `<user password>` as it sends a call: " +
        'the passwords demo-credentials.json holds, each only while it opens this store; 404 on any other store.',
      storeOnly: true,
      problems: { 404: ['NOT_FOUND'], ...STORE_ONLY },
      schema: { response: { 200: DemoCredentials } },
      handler: () => demoCredentials(db, authenticator, demo),
    },
    {
      method: 'GET',
      url: '/admin/audit',
      operation: 'admin:audit.read',
      operationId: 'readAudit',
      summary: 'Read the audit trail: a page as JSON, or every event as NDJSON',
      description:
        'Filters: `from`/`to` (ISO times), `operation` (a name or a prefix ending in `*`), `account`, `status` ' +
        '(`403` or `4xx`), `token`. As `application/json` (the default): a page of `limit` events, oldest first ' +
        '(`order=newest`: newest first), ' +
        'with `nextCursor` and `next` for the next page. With `Accept: application/x-ndjson`: every matching ' +
        'event, one JSON object per line, streamed a page at a time as the client reads. ' +
        EXPORTS_AT_ONCE,
      problems: { 400: ['VALIDATION_FAILED', 'INVALID_PAGING_TOKEN'] },
      schema: {
        querystring: AuditQuery,
        response: {
          200: {
            description: 'The events',
            content: {
              'application/json': { schema: AuditPage },
              [NDJSON]: { schema: { ...AuditEventInfo, description: 'One event per line' } },
            },
          },
        },
      },
      handler: async (request, reply) => {
        const query = request.query as AuditQuery;
        if (!wantsNdjson(request)) return adminAudit.page(db, query);
        return sendLines(request, reply, async (write) => {
          for await (const event of adminAudit.all(db, query)) await write(JSON.stringify(event));
        });
      },
    },
    {
      method: 'GET',
      url: '/admin/export',
      operation: 'admin:export',
      operationId: 'exportRecords',
      summary: 'Export every record as NDJSON, as `coregate export` writes it',
      description:
        'A header line, then one line per record in catalog order, FM history included, then the member ' +
        'secrets, then an end line with the count of each record type: a file without it was cut off. Each ' +
        'record type is read in pages by key as the client reads, each record once, as it was when its page ' +
        'was read; a replacement of the records meanwhile (an import, a reset) cuts the export off before its ' +
        'end line. Protected values stay as stored (HMAC and ciphertext), readable only under this store’s ' +
        'secret. ' +
        EXPORTS_AT_ONCE,
      storeOnly: true,
      problems: STORE_ONLY,
      schema: {
        response: { 200: { description: 'The records file', content: { [NDJSON]: { schema: Type.String() } } } },
      },
      handler: (request, reply) => sendLines(request, reply, (write) => exportRecords(db, write)),
    },
    {
      method: 'POST',
      url: '/admin/import',
      operation: 'admin:import',
      operationId: 'importRecords',
      summary: 'Import a records file (NDJSON) in one transaction, as `coregate import`',
      description:
        'Every line is checked against the record catalog; the first bad one refuses the whole file with 400 ' +
        '`INVALID_RECORD_FILE` naming the line and column, and nothing is applied. A store that holds records ' +
        'is refused with 409 `STORE_NOT_EMPTY` unless `replace=true`. At most `COREGATE_IMPORT_LIMIT_MB`.',
      storeOnly: true,
      ndjsonBody: true,
      bodyLimit: config.importLimitBytes,
      problems: merge(STORE_ONLY, {
        400: ['VALIDATION_FAILED', 'INVALID_RECORD_FILE'],
        409: ['STORE_NOT_EMPTY'],
        413: ['PAYLOAD_TOO_LARGE'],
        415: ['UNSUPPORTED_MEDIA_TYPE'],
      }),
      schema: { querystring: ImportQuery, response: { 200: Imported } },
      handler: async (request) => {
        request.auditTarget = 'store';
        const spooled = await spoolBody(request.body as Readable, config.importLimitBytes);
        try {
          const tooLong = (line: number) => new RecordFileError(line, `is longer than ${MAX_RECORD_LINE_BYTES} bytes`);
          const lines = fileLines(spooled.file, MAX_RECORD_LINE_BYTES, tooLong);
          const replace = (request.query as { replace?: string }).replace === 'true';
          return await importRecordFile(db, secrets, lines, { replace });
        } finally {
          spooled.remove();
        }
      },
    },
    {
      method: 'POST',
      url: '/admin/reset',
      operation: 'admin:reset',
      operationId: 'resetStore',
      summary: 'Put the store back to its seeded demo dataset',
      description:
        'Every record (FM history included) and the demo member secrets as seeded, in one transaction; tokens, ' +
        'users, the administrative password and the audit trail stay. Takes `admin` or `store:reset`.',
      scopes: ['store:reset', 'admin'],
      storeOnly: true,
      optionalBody: true,
      problems: merge(JSON_BODY, STORE_ONLY, { 409: ['NOT_A_DEMO_DATASET'] }),
      schema: { body: ResetBody, response: { 200: ResetAnswer } },
      handler: async (request) => {
        request.auditTarget = 'store';
        const { accounts, seed } = request.body as ResetBody;
        if (seed !== undefined && accounts === undefined) {
          throw validationFailed([{ pointer: '/seed', detail: 'needs accounts' }]);
        }
        const dataset = accounts === undefined ? await demoDataset.get(db) : { seed: seed ?? DEFAULT_SEED, accounts };
        if (!dataset) {
          throw new Problem(
            409,
            'NOT_A_DEMO_DATASET',
            'The store does not hold a seeded demo dataset, so there is nothing to reset it to; name one ({"accounts": N}) or `coregate reset --accounts N`',
          );
        }
        try {
          const { counts, elapsedMs } = await resetToDemo(db, secrets, dataset);
          request.log.info({ dataset, elapsedMs }, 'the store was reset to its demo dataset');
          return { status: 'reset' as const, dataset, records: counts, elapsedMs };
        } catch (error) {
          throw error instanceof StoreBusyError ? storeBusy(error) : error;
        }
      },
    },
  ];

  /** Who may call: a live bearer token (401), within its rate limit (429), with the route's scope (403). */
  const admit = async (request: FastifyRequest, reply: FastifyReply) => {
    const route = request.routeOptions.config.admin;
    if (!route) return;
    await admitBearer(request, reply, { authenticator, limiter, general, onRateLimited: options.onRateLimited });
    if (!route.scopes.some((scope) => request.bearer!.scopes.includes(scope))) {
      throw forbidden(`The token lacks the ${route.scopes[0]} scope`);
    }
    if (route.storeOnly && core.kind !== 'store') {
      throw new Problem(
        501,
        'STORE_ONLY',
        `${request.method} ${request.routeOptions.url} reads or changes coregate's own store; in gateway mode the core holds the records and verifies the credentials`,
      );
    }
    // Any other body would be parsed whole, up to the records file's limit: it is refused before it is read.
    if (route.ndjsonBody && mediaType(request.headers['content-type']) !== NDJSON) {
      throw new Problem(415, 'UNSUPPORTED_MEDIA_TYPE', `Send the records file as ${NDJSON}`);
    }
  };

  app.register(async (admin) => {
    // Only the import takes NDJSON, unread; any other admin call sent it is refused like any unknown type.
    admin.addContentTypeParser(NDJSON, (request, payload, done) => {
      if (request.routeOptions.config.admin?.ndjsonBody) return done(null, payload);
      done(new Problem(415, 'UNSUPPORTED_MEDIA_TYPE', 'Send the body as application/json'), undefined);
    });
    admin.addHook('onRequest', admit);
    admin.addHook('preValidation', async (request) => {
      if (request.routeOptions.config.admin?.optionalBody && request.body === undefined) request.body = {};
    });
    // Who administered what, and who tried: in the audit trail like any operation.
    admin.addHook('onResponse', async (request, reply) => {
      const route = request.routeOptions.config.admin;
      if (!route) return;
      // A streamed answer that was cut off (its client left, or reading failed) says so.
      const cutOff = request.streamed !== undefined && request.streamed !== 'complete';
      audit.record(adminEvent(request, reply, route.operation, request.auditTarget, cutOff ? 'INCOMPLETE' : undefined));
    });
    for (const route of routes) admin.route(routeOptions(route));
  });
}

/** What the gate of an administrative call needs. */
export interface AdminGate {
  readonly authenticator: Authenticator;
  readonly limiter: RateLimiter;
  /** The token's rate limit, as for any call. */
  readonly general: { readonly limit: number; readonly windowSeconds: number };
  readonly onRateLimited?: (limit: RateLimit) => void;
}

/**
 * The gate every administrative call passes first (the admin routes', the fault rules'): a live bearer token
 * (401), within its rate limit (429); the answer is never cached. Scopes are the caller's to check.
 */
export async function admitBearer(request: FastifyRequest, reply: FastifyReply, gate: AdminGate): Promise<void> {
  request.bearer = await gate.authenticator.authenticateBearer(request.headers.authorization);
  const decision = await gate.limiter.hit(`token:${request.bearer.tokenName}`, gate.general);
  if (!decision.allowed) {
    gate.onRateLimited?.('token');
    throw rateLimited(decision.retryAfterSeconds);
  }
  reply.header('ratelimit-remaining', String(decision.remaining));
  reply.header('cache-control', 'no-store');
}

/** The audit event of an administrative call: who did `operation` to `target`, and how it ended. */
export function adminEvent(
  request: FastifyRequest,
  reply: FastifyReply,
  operation: string,
  target: string | undefined,
  code?: ProblemCode | 'INCOMPLETE',
): AuditEvent {
  return {
    requestId: request.id,
    tokenName: request.bearer?.tokenName ?? null,
    userNumber: null,
    memberAccount: null,
    operation,
    accountNumbers: [],
    collateralNumber: null,
    status: reply.statusCode,
    code: request.problemCode ?? code ?? null,
    coreLatencyMs: null,
    coreOutcome: null,
    target: target ?? null,
    traceId: requestTraceId(request),
  };
}

function routeOptions(route: AdminRoute): RouteOptions {
  const scopes = route.scopes ?? ['admin'];
  const schema: FastifySchema & Record<string, unknown> = {
    ...route.schema,
    tags: [ADMIN_TAG.name],
    operationId: route.operationId,
    summary: route.summary,
    ...(route.description ? { description: route.description } : {}),
    security: scopes.map((scope) => ({ bearerAuth: [scope] })),
    [ADMIN_PROBLEMS_KEY]: route.problems ?? {},
    [ADMIN_BODY_KEY]: {
      optional: route.optionalBody ?? false,
      ...(route.ndjsonBody
        ? {
            requestBody: {
              required: true,
              content: {
                [NDJSON]: { schema: { type: 'string', description: 'A records file, as `coregate export` writes it' } },
              },
            },
          }
        : {}),
    },
  };
  return {
    method: route.method,
    url: route.url,
    ...(route.bodyLimit ? { bodyLimit: route.bodyLimit } : {}),
    schema,
    config: {
      admin: {
        operation: route.operation,
        scopes,
        storeOnly: route.storeOnly ?? false,
        optionalBody: route.optionalBody ?? false,
        ndjsonBody: route.ndjsonBody ?? false,
      },
    },
    handler: route.handler,
  };
}

/** Whether the caller asked for NDJSON rather than a JSON page. */
const wantsNdjson = (request: FastifyRequest) => (request.headers.accept ?? '').includes(NDJSON);

/** What the reference says of every streamed export. */
const EXPORTS_AT_ONCE =
  'At most `COREGATE_EXPORT_CONCURRENCY` streamed exports (this and the other NDJSON one) run at once per ' +
  'process: another is refused with 429 `RATE_LIMITED` and `Retry-After`. A client that reads nothing for ' +
  '`COREGATE_EXPORT_STALL_MS` is cut off.';

/**
 * The streamed exports running in this process, at most `limit`, so that a crowd of them (or of clients
 * that stopped reading) cannot take the database's time from the API. The next is refused with 429 until
 * one ends, however it ends: complete, failed, cut off for a stalled client, or left by its client.
 */
class ExportSlots {
  private running = 0;

  constructor(
    private readonly limit: number,
    private readonly onRefused: () => void,
  ) {}

  /** Takes a place, or throws the 429 when every one is taken; the function returned gives it back, once. */
  take(): () => void {
    if (this.running >= this.limit) {
      this.onRefused();
      throw rateLimited(
        EXPORT_RETRY_AFTER_SECONDS,
        `${this.running} exports are running, as many as COREGATE_EXPORT_CONCURRENCY allows`,
      );
    }
    this.running += 1;
    let held = true;
    return () => {
      if (held) this.running -= 1;
      held = false;
    };
  }
}

/**
 * Answers with the lines `produce` writes, streamed, holding one of the export places until `produce` has
 * settled; a failure before the first line is answered as a problem.
 */
async function sendExport(
  request: FastifyRequest,
  reply: FastifyReply,
  produce: Parameters<typeof streamLines>[0],
  limits: { readonly slots: ExportSlots; readonly stallMs: number },
): Promise<FastifyReply> {
  const release = limits.slots.take();
  // Listened to from the start: a client gone while the first page is read stops the export too.
  const gone = new AbortController();
  reply.raw.once('close', () => gone.abort());
  const producing = async (write: LineWriter) => {
    try {
      return await produce(write);
    } finally {
      release();
    }
  };
  const { body, done } = await streamLines(producing, { stallMs: limits.stallMs, gone: gone.signal });
  request.streamed = 'streaming';
  done.then(
    () => (request.streamed = 'complete'),
    (error: unknown) => {
      request.streamed = 'cut';
      request.log.warn({ err: error }, 'a streamed answer was cut off');
    },
  );
  return reply.type(NDJSON).send(body);
}
