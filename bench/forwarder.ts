/**
 * The hand-written forwarder: what a competent engineer writes by hand to put findBySSN, updateShareByID (P1)
 * and getCollateralSelectFields (the collateral tree) in front of a SymXchange core with Fastify, undici and
 * fast-xml-parser, to weigh the gateway against (issue 33, "The gateway's cost"). Per request it checks the
 * bearer token against the one it was given (a constant-time compare of one configured token: no token
 * table, no scopes, no cache), validates the body with a JSON schema of its own (administrative credentials
 * only; the update takes a Nickname; the collateral is always the whole tree), builds the envelope from a
 * template, sends it over a keep-alive undici pool, parses the answer with fast-xml-parser and shapes it into
 * the JSON coregate answers (field names and numeric kinds come from coregate's catalog, as the hand-written
 * anchor's column lists do, so the answers compare). It keeps no audit trail, honours no Idempotency-Key,
 * checks no answer against a contract, has no circuit breaker, rate limit or retry: those are the gateway's
 * cost to measure. A SOAP fault is 404 (no such record), 403 (credentials), 400 (another Client fault) or
 * 502; a core it cannot reach is 503, one too slow 504.
 *
 * The bench compiles it (servers.ts, `buildServers`) and runs, from node_modules/.cache/coregate-bench/:
 *   PORT=9000 FORWARDER_CORE_URL=http://127.0.0.1:8627 FORWARDER_TOKEN=<token> node forwarder.js [--workers W]
 */
import { timingSafeEqual } from 'node:crypto';
import Fastify, { type FastifyRequest } from 'fastify';
import { XMLParser } from 'fast-xml-parser';
import { Pool } from 'undici';
import { recordDef, type RecordDef } from '../src/catalog/index.js';
import { runClustered } from './cluster-main.js';

type JsonObject = Record<string, unknown>;

const SYMX = 'http://www.symxchange.generated.symitar.com';
/** The gateway's defaults (COREGATE_SYMXCHANGE_CONNECTIONS, COREGATE_SYMXCHANGE_TIMEOUT_MS), per process. */
const CORE_CONNECTIONS = 32;
const CORE_TIMEOUT_MS = 15_000;
/** What the gateway tells the core it is (DeviceInformation), so that both send the same envelope. */
const DEVICE = '<DeviceInformation DeviceType="COREGATE" DeviceNumber="0"/>';

const XML_ESCAPES: Readonly<Record<string, string>> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&apos;',
};
const escapeXml = (text: string) => text.replace(/[&<>"']/g, (char) => XML_ESCAPES[char]!);
const element = (name: string, text: string) => `<${name}>${escapeXml(text)}</${name}>`;

/** A SymXchange operation the forwarder calls: where, with which SOAPAction, and its answer's elements. */
interface CoreOperation {
  readonly name: string;
  readonly path: string;
  readonly soapAction: string;
  /** The element of the operation's answer under `<name>Response` (`PluralResponse`, `SingleResponse`…). */
  readonly answer: string;
  /** The envelope's prefix up to the request's content, with the request's MessageId. */
  opening(messageId: string): string;
  readonly closing: string;
  /** Parses the answer's envelope; each operation says which elements repeat. */
  readonly parser: XMLParser;
}

function coreOperation(
  service: { readonly kind: 'crud' | 'noncrud'; readonly name: string; readonly path: string },
  name: string,
  answer: string,
  repeating: ReadonlySet<string>,
): CoreOperation {
  const namespace = `${SYMX}/${service.kind}/${service.name}`;
  // The findby requests carry their MessageId in the common namespace, the crud ones unqualified.
  const messageIdAttribute = service.kind === 'noncrud' ? 'cmn:MessageId' : 'MessageId';
  return {
    name,
    path: service.path,
    soapAction: `"${namespace}/${name}"`,
    answer,
    opening: (messageId) =>
      `<soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/" xmlns:tns="${namespace}" ` +
      `xmlns:cmn="${SYMX}/symxcommon"><soapenv:Header/><soapenv:Body><tns:${name}>` +
      `<Request ${messageIdAttribute}="${escapeXml(messageId)}">`,
    closing: `</Request></tns:${name}></soapenv:Body></soapenv:Envelope>`,
    parser: new XMLParser({
      ignoreAttributes: true,
      removeNSPrefix: true,
      // Values stay text ("0000" is an id, not 0); the catalog says which fields are numbers.
      parseTagValue: false,
      trimValues: false,
      isArray: (tagName) => repeating.has(tagName),
    }),
  };
}

/** A record of the collateral tree as coregate answers it: every field (null when absent), every child list. */
interface RecordShape {
  readonly name: string;
  readonly fields: readonly { readonly name: string; readonly numeric: boolean }[];
  readonly children: readonly { readonly list: string; readonly shape: RecordShape }[];
}

function recordShape(record: RecordDef): RecordShape {
  return {
    name: record.name,
    fields: record.fields.map((field) => ({
      name: field.name,
      numeric: field.kind !== 'string' && field.kind !== 'date',
    })),
    children: record.children.map((child) => ({ list: child.list, shape: recordShape(recordDef(child.record)) })),
  };
}

const COLLATERAL = recordShape(recordDef('Collateral'));
const treeNames = (shape: RecordShape): string[] =>
  shape.children.flatMap((c) => [c.shape.name, ...treeNames(c.shape)]);

const FIND_BY_SSN = coreOperation(
  { kind: 'noncrud', name: 'findby', path: '/SymXchange/findby' },
  'findBySSN',
  'PluralResponse',
  new Set(['AccountNumber']),
);
const UPDATE_SHARE = coreOperation(
  { kind: 'crud', name: 'account', path: '/SymXchange/account' },
  'updateShareByID',
  'UpdateResponse',
  new Set(['PrimaryKeyField']),
);
const GET_COLLATERAL = coreOperation(
  { kind: 'crud', name: 'collateral', path: '/SymXchange/2022.01/collateral' },
  'getCollateralSelectFields',
  'SingleResponse',
  new Set(treeNames(COLLATERAL)),
);

function shaped(shape: RecordShape, record: JsonObject): JsonObject {
  const out: JsonObject = {};
  for (const { name, numeric } of shape.fields) {
    const value = record[name];
    out[name] = typeof value !== 'string' ? null : numeric ? Number(value) : value;
  }
  for (const { list, shape: child } of shape.children) {
    const listed = (record[list] ?? {}) as JsonObject;
    const entries = (listed[child.name] ?? []) as JsonObject[];
    out[list] = {
      hasReachedMaximumListSize: listed.hasReachedMaximumListSize === 'true',
      [child.name]: entries.map((entry) => shaped(child, entry)),
    };
  }
  return out;
}

/** An error Fastify answers with its statusCode. */
const failure = (statusCode: number, message: string) => Object.assign(new Error(message), { statusCode });

/** The answer of a SOAP fault: the core's problem status where it gives one (coregate's SOAP face does). */
function faultFailure(fault: JsonObject): Error {
  const code = String(fault.faultcode ?? '');
  const status = Number(((fault.detail as JsonObject | undefined)?.problem as JsonObject | undefined)?.status);
  if (code.endsWith('Client')) {
    if (status === 404) return failure(404, 'No such record');
    if (status === 401 || status === 403) return failure(403, 'The core rejected the credentials');
    return failure(400, 'The core refused the request');
  }
  return failure(502, 'The core refused the call');
}

// ---- Requests ----

const CREDENTIALS_SCHEMA = {
  type: 'object',
  required: ['AdministrativeCredentials'],
  additionalProperties: false,
  properties: {
    AdministrativeCredentials: {
      type: 'object',
      required: ['Password'],
      additionalProperties: false,
      properties: { Password: { type: 'string', minLength: 1, maxLength: 20 } },
    },
  },
} as const;

const bodySchema = (required: readonly string[], properties: JsonObject) => ({
  body: {
    type: 'object',
    required: ['Credentials', ...required],
    properties: { Credentials: CREDENTIALS_SCHEMA, ...properties },
  },
});

interface Credentials {
  readonly AdministrativeCredentials: { readonly Password: string };
}

const credentialsXml = (credentials: Credentials) =>
  `<Credentials><AdministrativeCredentials>${element('Password', credentials.AdministrativeCredentials.Password)}` +
  '</AdministrativeCredentials></Credentials>';

interface FindBySsnBody {
  readonly Credentials: Credentials;
  readonly SSN: string;
}

interface UpdateShareBody {
  readonly Credentials: Credentials;
  readonly AccountNumber: string;
  readonly ShareId: string;
  readonly ShareFields: { readonly Nickname: string };
}

interface GetCollateralBody {
  readonly Credentials: Credentials;
  readonly CollateralNumber: string;
}

// ---- The service ----

/** The bearer token the forwarder accepts: one, compared in constant time. */
function tokenCheck(token: string): (authorization: string | undefined) => boolean {
  const expected = Buffer.from(`Bearer ${token}`);
  return (authorization) => {
    const given = Buffer.from(authorization ?? '');
    return given.length === expected.length && timingSafeEqual(given, expected);
  };
}

async function serve(port: number): Promise<void> {
  const coreUrl = process.env.FORWARDER_CORE_URL;
  const token = process.env.FORWARDER_TOKEN;
  if (!coreUrl || !token) throw new Error('FORWARDER_CORE_URL and FORWARDER_TOKEN are required');
  const isAuthorized = tokenCheck(token);
  const pool = new Pool(coreUrl, {
    connections: CORE_CONNECTIONS,
    pipelining: 1,
    keepAliveTimeout: 30_000,
    headersTimeout: CORE_TIMEOUT_MS,
    bodyTimeout: CORE_TIMEOUT_MS,
  });

  /** Sends one request's content to the core; the element under `<name>Response`, or the failure to answer. */
  async function call(operation: CoreOperation, request: FastifyRequest, content: string): Promise<JsonObject> {
    let answer: string;
    try {
      const { body } = await pool.request({
        method: 'POST',
        path: operation.path,
        headers: { 'content-type': 'text/xml; charset=utf-8', soapaction: operation.soapAction },
        body: `${operation.opening(request.id)}${content}${operation.closing}`,
      });
      answer = await body.text();
    } catch (error) {
      const code = (error as { code?: string }).code ?? '';
      throw code.endsWith('_TIMEOUT')
        ? failure(504, 'The core did not answer in time')
        : failure(503, 'The core is unavailable');
    }
    const document = operation.parser.parse(answer) as JsonObject;
    const body = (document.Envelope as JsonObject | undefined)?.Body as JsonObject | undefined;
    if (body?.Fault) throw faultFailure(body.Fault as JsonObject);
    const result = (body?.[`${operation.name}Response`] as JsonObject | undefined)?.[operation.answer];
    if (!result || typeof result !== 'object') throw failure(502, `The core's answer has no ${operation.answer}`);
    return result as JsonObject;
  }

  const app = Fastify({ logger: false });
  app.get('/ready', async () => ({ status: 'ready' }));
  app.addHook('onRequest', async (request, reply) => {
    if (request.method === 'POST' && !isAuthorized(request.headers.authorization))
      return reply.code(401).send({ error: 'A valid bearer token is required' });
  });

  app.post<{ Body: FindBySsnBody }>(
    '/gw/627/persistent/findby/findBySSN',
    { schema: bodySchema(['SSN'], { SSN: { type: 'string', minLength: 9, maxLength: 9 } }) },
    async (request) => {
      const { Credentials, SSN } = request.body;
      const answer = await call(FIND_BY_SSN, request, `${element('SSN', SSN)}${DEVICE}${credentialsXml(Credentials)}`);
      return { AccountNumber: answer.AccountNumber ?? [], MessageId: 'findBySSN' };
    },
  );

  app.post<{ Body: UpdateShareBody }>(
    '/gw/627/persistent/account/updateShareByID',
    {
      schema: bodySchema(['AccountNumber', 'ShareId', 'ShareFields'], {
        AccountNumber: { type: 'string', pattern: '^[0-9]{10}$' },
        ShareId: { type: 'string', minLength: 1, maxLength: 4 },
        ShareFields: {
          type: 'object',
          required: ['Nickname'],
          additionalProperties: false,
          properties: { Nickname: { type: 'string', maxLength: 40 } },
        },
      }),
    },
    async (request) => {
      const { Credentials, AccountNumber, ShareId, ShareFields } = request.body;
      const content =
        `${element('AccountNumber', AccountNumber)}${element('ShareId', ShareId)}${credentialsXml(Credentials)}` +
        `${DEVICE}<ShareFields>${element('Nickname', ShareFields.Nickname)}</ShareFields>`;
      const status = ((await call(UPDATE_SHARE, request, content)).UpdateStatus ?? {}) as JsonObject;
      const failed = status.FailedUpdateStatus as JsonObject | undefined;
      const text = (value: unknown) => (typeof value === 'string' ? value : null);
      return {
        UpdateStatus: {
          isAllFieldsUpdateSuccess: status.isAllFieldsUpdateSuccess === 'true',
          FailedUpdateStatus: failed
            ? {
                Record: text(failed.Record),
                ErrorCode: text(failed.ErrorCode),
                ErrorMessage: text(failed.ErrorMessage),
                PrimaryKeyField: ((failed.PrimaryKeyField ?? []) as JsonObject[]).map(({ Name, Value }) => ({
                  Name: text(Name) ?? '',
                  Value: text(Value) ?? '',
                })),
              }
            : null,
          Version_1: null,
          _value_1: null,
        },
        MessageId: 'updateShareByID',
      };
    },
  );

  app.post<{ Body: GetCollateralBody }>(
    '/gw/627/2022.01/collateral/getCollateralSelectFields',
    {
      schema: bodySchema(['CollateralNumber', 'SelectableFields'], {
        CollateralNumber: { type: 'string', minLength: 1, maxLength: 10 },
        // The whole tree only: a selection of fields is more than this forwarder does.
        SelectableFields: {
          type: 'object',
          required: ['IncludeAllCollateralFields'],
          additionalProperties: false,
          properties: { IncludeAllCollateralFields: { const: true } },
        },
      }),
    },
    async (request) => {
      const { Credentials, CollateralNumber } = request.body;
      const content =
        `${element('CollateralNumber', CollateralNumber)}${credentialsXml(Credentials)}${DEVICE}` +
        '<SelectableFields><IncludeAllCollateralFields>true</IncludeAllCollateralFields></SelectableFields>';
      const answer = await call(GET_COLLATERAL, request, content);
      return { Collateral: shaped(COLLATERAL, (answer.Collateral ?? {}) as JsonObject) };
    },
  );
  await app.listen({ port, host: '127.0.0.1' });
}

runClustered(serve);
