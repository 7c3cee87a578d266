/**
 * The OpenAPI 3.1 documents: the API's (/openapi.json) and the admin API's (/openapi-admin.json), generated
 * from the route schemas, shared schemas as components, then completed from the operation registry: the
 * servers, a tag per service, the token scopes, and per operation its required scope, a demo-data request and
 * the answer it gets, the problems it can be answered with by status range (operation-problems.ts) and the
 * headers of each answer.
 */
import type { SwaggerOptions } from '@fastify/swagger';
import type { CredentialKind } from '../contract/envelope.js';
import type { ProblemCode } from '../contract/problems.js';
import { SANDBOX_FAULT_HEADER, SANDBOX_FAULT_PROBLEMS } from '../contract/sandbox-faults.js';
import { SCOPES } from '../contract/scopes.js';
import {
  shareComponents,
  withUsedComponents,
  type SharedDocument,
  type ValueType,
} from '../contract/openapi-components.js';
import { AccountNumberSchema, TEXT_PATTERN } from '../contract/envelope.js';
import { DATE_FORM, XML_TEXT_PATTERN } from '../catalog/schemas.js';
import { operationPath, type AnyOperation, type Service } from '../operations/types.js';
import {
  PLACEHOLDER,
  problemExample,
  recordedAnswer,
  requestExample,
  EXAMPLE_USER_NUMBER,
} from './openapi-examples.js';
import { operationProblems, type ProblemsOptions } from './operation-problems.js';
import { ADMIN_BODY_KEY, ADMIN_PROBLEMS_KEY, ADMIN_TAG } from './admin-routes.js';

export interface OpenApiSettings {
  /** The operations the document describes (each at its path on the spec's Sym). */
  readonly operations: readonly AnyOperation[];
  /** The credential kinds each operation accepts under the running configuration. */
  readonly acceptedCredentials: (operation: AnyOperation) => readonly CredentialKind[];
  readonly problems: ProblemsOptions;
}

const VERSION = '0.1.0';

/** What each service's tag says (SymXchange's service names). */
const SERVICE_TAGS: Readonly<Record<Service, string>> = {
  findby:
    'FindByService: locate accounts by card, home-banking user, MICR and draft, lookup, SSN or short name. ' +
    'Nothing found is `null` or an empty list, never an error.',
  corptransfer: 'CorpTransferService: read a corporate transfer by its global sequence, with field selection.',
  account:
    'AccountService: update a share and its sub-records (analysis, check order, hold, note, transfer, name, ' +
    'tracking, …) and read them back. Rule failures of an update are reported per field in its answer.',
  collateral:
    'CollateralService: read a collateral and its holds, documents, document tracking, FM history and ' +
    'tracking records: single records, lists, pages and searches, with field selection.',
  usermanagement:
    'Sessions: `logon` trades UserNumberCredentials for a TokenId that later calls send as TokenCredentials; ' +
    "`logoff` ends the session. coregate's own: in gateway mode the core's sessions are used instead.",
};

/**
 * The credential kinds every operation of a service accepts, by service, where they all accept the same: its
 * tag says them once. A service missing here (the session calls take one kind each) has each operation say
 * its own.
 */
function sharedCredentials(settings: OpenApiSettings): ReadonlyMap<Service, readonly CredentialKind[]> {
  const byService = new Map<Service, (readonly CredentialKind[])[]>();
  for (const operation of settings.operations)
    byService.set(operation.service, [
      ...(byService.get(operation.service) ?? []),
      settings.acceptedCredentials(operation),
    ]);
  const shared = new Map<Service, readonly CredentialKind[]>();
  for (const [service, lists] of byService)
    if (new Set(lists.map((kinds) => kinds.join(', '))).size === 1) shared.set(service, lists[0]!);
  return shared;
}

/** Reusable headers of the answers (the names the server sends). */
const HEADERS = {
  'X-Request-Id': {
    description:
      "The request's id, quoted in the log and the audit trail: the `X-Request-Id` sent, when it is 1 to 64 " +
      'of `A-Z a-z 0-9 . _ -`, else a generated UUID.',
    schema: { type: 'string' },
  },
  'RateLimit-Remaining': {
    description:
      'Calls this API token may still make in the current minute (for a FindBy lookup, the lower of its ' +
      'general and lookup budgets).',
    schema: { type: 'integer', minimum: 0 },
  },
  'Retry-After': { description: 'Seconds to wait before calling again.', schema: { type: 'integer', minimum: 1 } },
  'WWW-Authenticate': {
    description: 'The scheme to authenticate with: `Bearer realm="coregate"`.',
    schema: { type: 'string' },
  },
  'Idempotent-Replayed': {
    description: '`true` when this is the stored answer to an earlier request with the same `Idempotency-Key`.',
    schema: { type: 'string', enum: ['true'] },
  },
} as const;

type HeaderName = keyof typeof HEADERS;

/** Request headers, as reusable parameters. */
const PARAMETERS = {
  RequestId: {
    name: 'X-Request-Id',
    in: 'header',
    required: false,
    description: 'Your id for the request (1 to 64 of `A-Z a-z 0-9 . _ -`), echoed in the answer and the log.',
    schema: { type: 'string', pattern: '^[A-Za-z0-9._-]{1,64}$' },
  },
  SandboxFault: {
    name: SANDBOX_FAULT_HEADER,
    in: 'header',
    required: false,
    description:
      'Sandbox fault injection, for testing a client against every documented failure: `status=503; ' +
      'code=CORE_UNAVAILABLE` answers this call with that problem, `delay=1500` waits that many milliseconds ' +
      'first, `drop` closes the connection without an answer. Only while fault injection is on (`coregate faults ' +
      'enable` or `PUT /admin/faults/injection`, while serving); otherwise the call is refused with 403 ' +
      '`SANDBOX_FAULTS_DISABLED`. Codes: ' +
      `${Object.keys(SANDBOX_FAULT_PROBLEMS).join(', ')}.`,
    schema: { type: 'string', examples: ['status=503; code=CORE_UNAVAILABLE', 'delay=1500', 'drop'] },
  },
  IdempotencyKey: {
    name: 'Idempotency-Key',
    in: 'header',
    required: false,
    description:
      'Makes a retry safe: a request with a key this token used before gets the first answer again, without ' +
      'applying the update twice (the same key with another body is 422 IDEMPOTENCY_KEY_REUSED).',
    schema: { type: 'string', pattern: '^[\\x21-\\x7e]{1,255}$' },
  },
} as const;

/** What each error status means, as the document's description lists them (each call lists its codes). */
const STATUS_DESCRIPTIONS: Readonly<Record<number, string>> = {
  400: 'The request is not valid: its body, a query or a paging token (`errors` names each property at fault)',
  401: 'No valid bearer token',
  403:
    "The token lacks the call's scope, the body credentials do not allow the call, or a fault header (or, in " +
    'the admin API, a fault rule) is refused while fault injection is off',
  404: 'No record with the key the request names; in the admin API, no token, user or fault rule of that name',
  408: "A request deadline (forced by the sandbox's fault header)",
  409:
    'An update with this Idempotency-Key is still being applied (retry it for its answer); in the admin API, it ' +
    'exists already, the store is not in a state to do it, or the fault rules are at their maximum',
  413: 'The body is larger than the limit',
  415: 'The body is not of the media type the call takes (`application/json`)',
  422: 'The Idempotency-Key was used with another request',
  429: 'Too many calls with this token; retry after `Retry-After` seconds',
  500: 'Something went wrong on our side; quote the request id',
  501: "Not available in gateway mode (coregate's own sessions, the store's admin calls), or not in the core's release",
  502: "The core refused the call or answered something that is not SymXchange (`core` holds the core's fault)",
  503: 'The database or the core cannot be reached now; retry after `Retry-After` seconds',
  504: 'The core did not answer in time',
};

/** The statuses, as the document's description lists them. */
const problemsText = () =>
  '## Problems\n\nEach call lists the statuses it can answer with and the `code`s each carries, in its `4XX` ' +
  `and \`5XX\` answers. What a status means:\n\n${Object.entries(STATUS_DESCRIPTIONS)
    .map(([status, meaning]) => `- **${status}**: ${meaning}`)
    .join('\n')}`;

/** Headers of a problem answer: the rate-limit budget is reported once the token passed (not on 401 or 429). */
function problemHeaders(status: number): HeaderName[] {
  const headers: HeaderName[] = ['X-Request-Id'];
  if (status !== 401 && status !== 429) headers.push('RateLimit-Remaining');
  if (status === 401) headers.push('WWW-Authenticate');
  if (status === 429 || status === 503) headers.push('Retry-After');
  return headers;
}

const headerRefs = (names: readonly HeaderName[]) =>
  Object.fromEntries(names.map((name) => [name, { $ref: `#/components/headers/${name}` }]));

function successDescription(operation: AnyOperation): string {
  if (operation.writes) return 'Updated (values that break a rule are not written and are listed per field)';
  if (operation.service === 'findby') return 'What the lookup found (`null` or an empty list when nothing matches)';
  if (operation.readPlan) return 'The records read, with the fields selected';
  return operation.summary;
}

/** What the scopes of the admin API allow (they name no operation of the registry). */
const ADMIN_SCOPES: Readonly<Partial<Record<(typeof SCOPES)[number], string>>> = {
  'store:reset': 'Calls `POST /admin/reset` (given only when asked for)',
  admin:
    'Calls the admin API (`/admin/*`: tokens, users, the audit trail, export, import, reset); given only when ' +
    "asked for, and never by an identity provider's JWT",
};

/** What each scope allows: the operations that need it, or what the admin API's scopes give. */
function scopeUses(operations: readonly AnyOperation[]): Record<string, string> {
  const users = (scope: string) => [
    ...new Set(operations.filter((operation) => operation.scope === scope).map((operation) => operation.name)),
  ];
  return Object.fromEntries(
    SCOPES.map((scope) => [scope, ADMIN_SCOPES[scope] ?? `Calls ${users(scope).join(', ') || 'no operation yet'}`]),
  );
}

/** The scopes, as the document's description lists them. */
const scopesText = (scopes: Record<string, string>) =>
  `## Scopes\n\nA token is created with its scopes; each operation names the one it needs in its security ` +
  `requirement. Session calls (logon, logoff) take any live token.\n\n${Object.entries(scopes)
    .map(([scope, use]) => `- \`${scope}\`: ${use}`)
    .join('\n')}`;

/**
 * The bearer scheme. Its description is short: the Authorize dialog shows it above the token field, so the
 * list of scopes (`x-scopes`) is in the document's description instead.
 */
function securityScheme(scopes: Record<string, string>) {
  return {
    type: 'http',
    scheme: 'bearer',
    description:
      'An API token: `coregate token create --name NAME --scopes SCOPE,…` (the demo token is in ' +
      '`data/demo-credentials.json`). The scopes are listed in the description of the API.',
    'x-scopes': scopes,
  };
}

/**
 * The value types the document names once instead of repeating their schema at every field. An update's date
 * is documented `format: date`; a day no calendar has is still a per-field failure of the update, not a 400
 * (spec, updateShare rule 2), so the route schemas check its form only.
 */
const VALUE_TYPES: readonly ValueType[] = [
  ...[10, 20, 40].map((length) => ({
    name: `XmlText${length}`,
    shape: { type: 'string', pattern: XML_TEXT_PATTERN },
    description: `string, at most ${length} characters`,
  })),
  { name: 'XmlText', shape: { type: 'string', pattern: XML_TEXT_PATTERN } },
  { name: 'XmlTextOrNull', shape: { type: ['string', 'null'], pattern: XML_TEXT_PATTERN } },
  { name: 'UpdateDate', shape: { type: 'string', pattern: DATE_FORM }, documents: { format: 'date' } },
  {
    name: 'UpdateDateOrNull',
    shape: { type: ['string', 'null'], pattern: DATE_FORM },
    documents: { format: 'date' },
    description: 'date',
  },
  {
    name: 'UpdateDateOrNullValue',
    shape: { type: ['string', 'null'], pattern: DATE_FORM },
    documents: { format: 'date' },
  },
  { name: 'Short', shape: { type: 'integer' }, description: 'integer, -32768 to 32767' },
  { name: 'Int', shape: { type: 'integer' }, description: 'integer, -2147483648 to 2147483647' },
  { name: 'Money', shape: { type: 'number' }, description: 'money, -9999999999999.99 to 9999999999999.99' },
  { name: 'Rate', shape: { type: 'number' }, description: 'rate, -9999999.999 to 9999999.999' },
  { name: 'PrintableText', shape: { type: 'string', minLength: 1, pattern: TEXT_PATTERN } },
  { name: 'Int32', shape: { type: 'integer', minimum: -2147483648, maximum: 2147483647 } },
  {
    name: 'AccountNumber',
    shape: { type: 'string', pattern: (AccountNumberSchema as unknown as { pattern: string }).pattern },
    description: (AccountNumberSchema as unknown as { description: string }).description,
  },
];

/**
 * The document's options for @fastify/swagger; the completion runs when the document is first asked for.
 * @example await app.register(swagger, openApiOptions(settings))
 */
export function openApiOptions(settings: OpenApiSettings): SwaggerOptions {
  const scopes = scopeUses(settings.operations);
  const credentialsOf = sharedCredentials(settings);
  return {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'coregate: Core Account Records Service',
        version: VERSION,
        // The LICENSE file's, as package.json names it.
        license: { name: 'Apache License 2.0', identifier: 'Apache-2.0' },
        description:
          'HTTP+JSON gateway to credit-union core records: FindBy lookups, corporate transfers, share updates ' +
          'and read-back, and collateral records. Every operation is a POST with a JSON body carrying ' +
          '`Credentials`, and needs `Authorization: Bearer <token>`. Errors are RFC 9457 problem details ' +
          '(`application/problem+json`) with a stable `code`; each operation lists the statuses and codes it can ' +
          'answer with.\n\n' +
          'Every request example is a request the demo dataset answers (docs/demo-data.md), and every answer ' +
          'example the answer it gets. A request example has the ' +
          `administrative password as its credentials, shown as \`${PLACEHOLDER.adminPassword}\`: replace it ` +
          'with yours. Press **Authorize** once and give the API token, then **Try it out** on any operation; ' +
          'on the demo dataset, with the demo token, /docs puts the demo’s passwords in place of the placeholders ' +
          'as it sends a call (`GET /admin/demo-credentials`). The admin API is described apart, in ' +
          '/openapi-admin.json (the top bar of /docs switches to it).\n\n' +
          `${scopesText(scopes)}\n\n${problemsText()}`,
      },
      servers: [{ url: '/', description: 'This coregate (where this document was loaded from)' }],
      tags: [
        ...[...new Set(settings.operations.map((operation) => operation.service))].map((service) => {
          const credentials = credentialsOf.get(service);
          return {
            name: service,
            description: `${SERVICE_TAGS[service]}${credentials ? ` Credentials: ${credentials.join(', ')}.` : ''}`,
          };
        }),
        { ...ADMIN_TAG },
      ],
      components: {
        securitySchemes: { bearerAuth: securityScheme(scopes) as never },
        headers: HEADERS as never,
        parameters: PARAMETERS as never,
      },
    },
    refResolver: {
      buildLocalReference: (json, _baseUri, _fragment, i) => (typeof json.$id === 'string' ? json.$id : `def-${i}`),
    },
    transformObject: (documentObject) => {
      // A copy: the route schemas that validate requests must not see the document's shared components.
      const document = structuredClone((documentObject as { openapiObject: OpenApiDocument }).openapiObject);
      completeOperations(document, settings, credentialsOf);
      shareComponents(document as unknown as SharedDocument, VALUE_TYPES);
      const { api, admin } = referenceDocuments(document, {
        ...(document.info as Json),
        title: 'coregate: admin API',
        description: `${ADMIN_TAG.description}\n\n${scopesText(scopes)}\n\n${problemsText()}`,
      });
      adminDocuments.set(api, admin);
      return api as never;
    },
  };
}

type Json = Record<string, unknown>;

interface DocumentOperation {
  description?: string;
  parameters?: Json[];
  requestBody?: { content: Record<string, Json> };
  responses: Record<string, Json>;
  security?: Record<string, string[]>[];
}

interface OpenApiDocument {
  info?: Json;
  tags?: Json[];
  paths: Record<string, Partial<Record<'get' | 'post' | 'delete', DocumentOperation & Json>>>;
  components: Json & { examples?: Record<string, Json>; responses?: Record<string, Json> };
}

/** Each operation's scope, examples, answers and their headers, from the registry. */
function completeOperations(
  document: OpenApiDocument,
  settings: OpenApiSettings,
  credentialsOf: ReadonlyMap<Service, readonly CredentialKind[]>,
): void {
  const shared: ProblemComponents = { examples: {}, responses: {}, names: new Map() };
  for (const operation of settings.operations) {
    const documented = document.paths[operationPath(operation)]?.post;
    if (!documented) continue;
    const accepted = settings.acceptedCredentials(operation);
    documented.security = [{ bearerAuth: operation.scope ? [operation.scope] : [] }];
    documented.parameters = [
      { $ref: '#/components/parameters/RequestId' },
      ...(operation.writes ? [{ $ref: '#/components/parameters/IdempotencyKey' }] : []),
      { $ref: '#/components/parameters/SandboxFault' },
    ];
    const credentials = credentialsOf.has(operation.service) ? '' : ` Credentials: ${accepted.join(', ')}.`;
    const sessions = accepted.includes('AdministrativeCredentials')
      ? ''
      : accepted.includes('TokenCredentials')
        ? ' The example ends the session whose TokenId it is given: the one `logon` answered.'
        : ` The example signs on as user ${EXAMPLE_USER_NUMBER}: the demo set-up's user (its password is in ` +
          `demo-credentials.json), or the one \`coregate user add --number ${EXAMPLE_USER_NUMBER} --name NAME\` adds.`;
    documented.description = `${documented.description ?? ''}${credentials}${sessions}`;
    const body = documented.requestBody?.content['application/json'];
    if (body) {
      // The document's description says what every example is: a call the demo dataset answers.
      body.examples = { demo: { value: requestExample(operation, accepted) } };
    }

    const success = documented.responses['200'] ?? {};
    const answer = recordedAnswer(operation);
    const successContent = (success.content as Record<string, Json> | undefined)?.['application/json'] ?? {};
    const responses: Record<string, Json> = {
      200: {
        description: successDescription(operation),
        headers: headerRefs([
          'X-Request-Id',
          'RateLimit-Remaining',
          ...(operation.writes ? (['Idempotent-Replayed'] as const) : []),
        ]),
        content: {
          'application/json': {
            ...successContent,
            ...(answer === undefined
              ? {}
              : {
                  examples: { demo: { value: answer } },
                }),
          },
        },
      },
    };
    Object.assign(responses, problemRanges(operationProblems(operation, settings.problems), '', shared));
    documented.responses = responses;
  }
  completeAdminRoutes(document, shared);
  document.components.examples = shared.examples;
  document.components.responses = shared.responses;
}

/** The problem answers' components: an example per code, an answer per range and set of statuses and codes. */
interface ProblemComponents {
  readonly examples: Record<string, Json>;
  readonly responses: Record<string, Json>;
  /** A range's answer by what it documents (its range and statuses with their codes). */
  readonly names: Map<string, string>;
}

/**
 * The problem answers of a call, one per status range (`4XX`, `5XX`): each lists its statuses with the codes
 * each carries, and its schema holds every answer to that pairing (`status` 404 has `code` RECORD_NOT_FOUND),
 * so a client or a test reads what one status can carry from the schema. A range's answer is shared by the
 * calls with the same statuses and codes (`prefix` names the admin API's apart).
 */
function problemRanges(
  problems: ReadonlyMap<number, readonly ProblemCode[]>,
  prefix: string,
  shared: ProblemComponents,
): Record<string, Json> {
  const ranges = new Map<string, [number, readonly ProblemCode[]][]>();
  for (const [status, codes] of [...problems].sort(([a], [b]) => a - b)) {
    const range = `${String(status)[0]}XX`;
    ranges.set(range, [...(ranges.get(range) ?? []), [status, codes]]);
  }
  const responses: Record<string, Json> = {};
  for (const [range, statuses] of ranges) {
    const description = statuses
      .map(([status, codes]) => `- **${status}** ${codes.map((code) => `\`${code}\``).join(', ')}`)
      .join('\n');
    const key = `${prefix}${range}\n${description}`;
    let name = shared.names.get(key);
    if (name === undefined) {
      const taken = [...shared.names.values()].filter((existing) => existing.startsWith(`${prefix}${range}-`));
      name = `${prefix}${range}-${taken.length + 1}`;
      shared.names.set(key, name);
      const codes = statuses.flatMap(([, each]) => each);
      for (const [status, each] of statuses)
        for (const code of each) shared.examples[code] ??= { summary: code, value: problemExample(status, code) };
      shared.responses[name] = {
        description: `Problem details; by status, the codes each carries:\n${description}`,
        headers: headerRefs([...new Set(statuses.flatMap(([status]) => problemHeaders(status)))]),
        content: {
          'application/problem+json': {
            schema: problemSchema(statuses),
            examples: Object.fromEntries(
              [...new Set(codes)].map((code) => [code, { $ref: `#/components/examples/${code}` }]),
            ),
          },
        },
      };
    }
    responses[range] = { $ref: `#/components/responses/${name}` };
  }
  return responses;
}

/** The problems every admin call can be answered with. */
const ADMIN_CALL_PROBLEMS: Readonly<Record<number, readonly ProblemCode[]>> = {
  401: ['UNAUTHENTICATED'],
  403: ['FORBIDDEN'],
  429: ['RATE_LIMITED'],
  500: ['INTERNAL'],
  503: ['UNAVAILABLE'],
};

/**
 * The admin API's routes (admin-routes.ts): their problems from the route's `x-coregate-problems` and those of
 * every admin call, the request id parameter, the headers of their answers, and a body the route reads itself.
 */
function completeAdminRoutes(document: OpenApiDocument, shared: ProblemComponents): void {
  for (const methods of Object.values(document.paths)) {
    for (const documented of Object.values(methods)) {
      const own = documented?.[ADMIN_PROBLEMS_KEY] as Record<string, ProblemCode[]> | undefined;
      if (!documented || !own) continue;
      delete documented[ADMIN_PROBLEMS_KEY];
      const body = documented[ADMIN_BODY_KEY] as { requestBody?: Json; optional?: boolean } | undefined;
      delete documented[ADMIN_BODY_KEY];
      if (body?.requestBody) documented.requestBody = body.requestBody as DocumentOperation['requestBody'];
      if (body?.optional && documented.requestBody) (documented.requestBody as Json).required = false;
      documented.parameters = [{ $ref: '#/components/parameters/RequestId' }, ...(documented.parameters ?? [])];
      const problems = new Map<number, ProblemCode[]>();
      for (const [status, codes] of [...Object.entries(ADMIN_CALL_PROBLEMS), ...Object.entries(own)]) {
        problems.set(Number(status), [...new Set([...(problems.get(Number(status)) ?? []), ...codes])]);
      }
      const responses: Record<string, Json> = {};
      for (const [status, response] of Object.entries(documented.responses)) {
        responses[status] = { ...response, headers: headerRefs(['X-Request-Id', 'RateLimit-Remaining']) };
      }
      Object.assign(responses, problemRanges(problems, 'admin-', shared));
      documented.responses = responses;
    }
  }
}

/** The Problem schema with the codes each status carries for one call. */
const problemSchema = (statuses: readonly [number, readonly ProblemCode[]][]) => ({
  allOf: [
    { $ref: '#/components/schemas/Problem' },
    {
      anyOf: statuses.map(([status, codes]) => ({
        properties: { status: { const: status }, code: { enum: [...codes] } },
      })),
    },
  ],
});

/** Where the admin API's paths are. */
const ADMIN_PREFIX = '/admin/';

/** The admin API's document, by the API's document it was made with (what `app.swagger()` returns). */
const adminDocuments = new WeakMap<object, Json>();

/**
 * The admin API's OpenAPI document (/openapi-admin.json), made with the API's.
 * @example adminDocument(app.swagger()).paths['/admin/tokens']
 */
export function adminDocument(apiDocument: unknown): Json {
  const admin = adminDocuments.get(apiDocument as object);
  if (!admin) throw new Error('not an OpenAPI document coregate made');
  return admin;
}

/**
 * The two documents of the reference, from the one the routes make: the API (/openapi.json), what an
 * integrator's client calls, and the admin API (/openapi-admin.json), what an operator's tools call. Each
 * holds only the components its paths use; /docs offers both, the API first.
 */
function referenceDocuments(document: OpenApiDocument, adminInfo: Json): { api: Json; admin: Json } {
  const tags = (document.tags ?? []) as { name: string }[];
  const paths = (admin: boolean) =>
    Object.fromEntries(Object.entries(document.paths).filter(([path]) => path.startsWith(ADMIN_PREFIX) === admin));
  const api = withUsedComponents({
    ...document,
    paths: paths(false),
    tags: tags.filter((tag) => tag.name !== ADMIN_TAG.name),
  } as unknown as SharedDocument);
  const admin = withUsedComponents({
    ...document,
    info: adminInfo,
    paths: paths(true),
    tags: tags.filter((tag) => tag.name === ADMIN_TAG.name),
  } as unknown as SharedDocument);
  return { api: api as unknown as Json, admin: admin as unknown as Json };
}
