/**
 * The SymXchange SOAP face: coregate's operations served as the core's SOAP 1.1 endpoints, in each release's
 * dialect where its installations serve it (release 3.0 at `POST /SymXchange/<service>`, the 2022.01 family
 * under `/SymXchange/2022.01/<service>`, 2020.00 at `/SymXchange/2020.00/<service>`), with the WSDL it
 * generates at `GET <endpoint>?wsdl`. A call is decoded into the operation's JSON body and passes the same
 * policy as the JSON API (operation-pipeline.ts): the bearer token and its scopes (or, with
 * `COREGATE_SOAP_AUTH=credentials`, the body `Credentials` alone), rate limits, validation, credentials,
 * member confinement, the audit trail and `Idempotency-Key`. A refusal is a SOAP 1.1 Fault (faults.ts) with
 * HTTP 500, or 401 with `WWW-Authenticate` for a missing or bad bearer token.
 */
import { isIPv6 } from 'node:net';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { SymxServiceName } from '../catalog/symxchange/index.js';
import type { Config } from '../config.js';
import { Problem, problemBody, validationFailed } from '../contract/problems.js';
import { SCOPES } from '../contract/scopes.js';
import type { AnyOperation, RequestBody } from '../operations/types.js';
import type { Authenticator } from '../security/authenticator.js';
import { SoapCodecError, type Endpoint, type SymxCodec } from '../symxchange/codec.js';
import { faultEnvelope, type SoapFaultCode } from '../symxchange/faults.js';
import { wsdlDocument } from '../symxchange/wsdl.js';
import { clip, decodeXmlBytes, escapeAttribute } from '../symxchange/xml.js';
import { problemOf, recordProblem, sendProblem } from './error-handler.js';
import { BROKEN_ANSWER_CODE, BrokenAnswerError } from './fault-rules.js';
import { auditEvent, type OperationPipeline } from './operation-pipeline.js';

export interface SoapRoutesOptions {
  readonly config: Config;
  /** One codec per release served: release 3.0's first. */
  readonly codecs: readonly SymxCodec[];
  readonly authenticator: Authenticator;
  readonly pipeline: OperationPipeline;
}

/** A SOAP endpoint coregate serves, its path, and the codec of its release. */
export interface SoapEndpoint extends Endpoint {
  readonly path: string;
  readonly codec: SymxCodec;
}

const SERVICES: readonly SymxServiceName[] = ['findby', 'corptransfer', 'account', 'collateral'];
export const SOAP_CONTENT_TYPE = 'text/xml; charset=utf-8';

/**
 * The endpoints. Release 3.0 (the first codec): `/SymXchange/<service>` for the persistent family,
 * `/SymXchange/2022.01/<service>` for the 2022.01 one; a service only the 2022.01 family has (collateral) is
 * also at the core's own address. Any other release: each service it has at its installations' endpoint path
 * (`/SymXchange/2020.00/account`), answered by the 2022.01 family where the service has it (its update objects
 * hold the record less its read-only fields and its failures repeat, as those releases' do), else the
 * persistent one (findby).
 * @example soapEndpoints([codec]).map((e) => e.path) // ['/SymXchange/findby', …, '/SymXchange/2022.01/collateral']
 */
export function soapEndpoints(codecs: readonly SymxCodec[]): SoapEndpoint[] {
  const [primary, ...others] = codecs;
  const own = SERVICES.flatMap((service): SoapEndpoint[] => {
    if (!primary) return [];
    const p1 = primary.mapping.endpoint(service, 'P1').length > 0;
    const p2 = primary.mapping.endpoint(service, 'P2').length > 0;
    const codec = primary;
    return [
      ...(p1 ? [{ service, family: 'P1' as const, path: `/SymXchange/${service}`, codec }] : []),
      ...(p2 && !p1 ? [{ service, family: 'P2' as const, path: `/SymXchange/${service}`, codec }] : []),
      ...(p2 ? [{ service, family: 'P2' as const, path: `/SymXchange/2022.01/${service}`, codec }] : []),
    ];
  });
  const released = others.flatMap((codec) =>
    SERVICES.flatMap((service): SoapEndpoint[] => {
      const family = (['P2', 'P1'] as const).find((f) => codec.mapping.endpoint(service, f).length > 0);
      return family ? [{ service, family, path: codec.mapping.service(service).endpointPath, codec }] : [];
    }),
  );
  const taken = new Set(own.map((endpoint) => endpoint.path));
  for (const endpoint of released)
    if (taken.has(endpoint.path)) throw new Error(`two releases are served at ${endpoint.path}`);
  return [...own, ...released];
}

/** A WSDL document with its endpoint address left open: the address in, the document out. */
type WsdlTemplate = (address: string) => string;

const ADDRESS_PLACEHOLDER = 'urn:coregate:endpoint-address';

function wsdlTemplate(endpoint: SoapEndpoint): WsdlTemplate {
  const document = wsdlDocument(endpoint.codec.mapping, endpoint, ADDRESS_PLACEHOLDER);
  const at = document.indexOf(ADDRESS_PLACEHOLDER);
  const before = document.slice(0, at);
  const after = document.slice(at + ADDRESS_PLACEHOLDER.length);
  return (address) => `${before}${escapeAttribute(address)}${after}`;
}

/** `COREGATE_PUBLIC_URL` without its trailing slash: the endpoints' paths follow it. */
const publicBase = (url: URL) => `${url.origin}${url.pathname.replace(/\/+$/, '')}`;

/**
 * The listener's own address as this request reached it (the socket's local address and port), never the
 * client's `Host` header: a client cannot make coregate write another host into a WSDL it serves.
 */
function listenerBase(request: FastifyRequest): string {
  const socket = request.raw.socket;
  const local = (socket.localAddress ?? '127.0.0.1').replace(/^::ffff:(?=[0-9.]+$)/, '');
  const host = isIPv6(local) ? `[${local}]` : local;
  const secure = (socket as { encrypted?: boolean }).encrypted === true;
  return `${secure ? 'https' : 'http'}://${host}:${socket.localPort ?? 80}`;
}

/** Codec errors are the caller's: a 400 naming what is wrong (and where, for a schema violation). */
function codecProblem(error: SoapCodecError): Problem {
  const status = error.code === 'SOAP_UNKNOWN_OPERATION' ? 404 : 400;
  const code = status === 404 ? 'NOT_FOUND' : 'VALIDATION_FAILED';
  return new Problem(
    status,
    code,
    `${error.code}: ${error.message}`,
    error.path ? [{ pointer: `/${error.path}`, detail: error.detail }] : undefined,
  );
}

function sendFault(
  reply: FastifyReply,
  request: FastifyRequest,
  problem: Problem,
  faultCode?: SoapFaultCode,
): FastifyReply {
  recordProblem(request, problem);
  for (const [name, value] of Object.entries(problem.headers)) reply.header(name, value);
  // SOAP 1.1 over HTTP: a Fault is a 500; a missing or bad bearer token stays an HTTP challenge.
  return reply
    .code(problem.status === 401 ? 401 : 500)
    .type(SOAP_CONTENT_TYPE)
    .send(faultEnvelope(problemBody(problem, request.url), faultCode));
}

/** The charset parameter of a Content-Type, unquoted, when it has one. */
function charsetOf(contentType: string | undefined): string | undefined {
  const match = /;\s*charset\s*=\s*(?:"([^"]*)"|([^;\s]*))/i.exec(contentType ?? '');
  return match ? (match[1] ?? match[2]) : undefined;
}

/** The SOAPAction header without its quotes; an empty one leaves the intent to the body (SOAP 1.1, 6.1.1). */
function soapActionOf(request: FastifyRequest): string | undefined {
  const header = request.headers.soapaction;
  if (typeof header !== 'string') return undefined;
  const action = header.trim();
  return action.length >= 2 && action.startsWith('"') && action.endsWith('"') ? action.slice(1, -1) : action;
}

export function registerSoapRoutes(app: FastifyInstance, options: SoapRoutesOptions): void {
  const { config, codecs, authenticator, pipeline } = options;
  const endpoints = soapEndpoints(codecs);
  // One WSDL per endpoint, generated at its first request around a placeholder address; each request gets
  // it with its address put in. Nothing is kept per Host header or per client (a WSDL is about 290 KB).
  const wsdls = new Map<SoapEndpoint, WsdlTemplate>();

  app.log.info(
    config.soapAuth === 'credentials'
      ? 'SymXchange SOAP calls are accepted on their body Credentials alone (COREGATE_SOAP_AUTH=credentials), as a core on a private network takes them'
      : 'SymXchange SOAP calls need a bearer token like the JSON API (COREGATE_SOAP_AUTH=token)',
  );

  void app.register(async (soap) => {
    // Only SOAP 1.1 envelopes here: any other media type is a 415 naming the right one. The body is read as
    // bytes and decoded strictly as UTF-8, the charset and the XML declaration agreeing (decodeXmlBytes).
    soap.removeAllContentTypeParsers();
    soap.addContentTypeParser('text/xml', { parseAs: 'buffer' }, (request, body, done) => {
      try {
        done(null, decodeXmlBytes(body as Buffer, charsetOf(request.headers['content-type'])));
      } catch (error) {
        done(error as SoapCodecError, undefined);
      }
    });
    soap.setErrorHandler((error: FastifyError, request, reply) => {
      // A fault rule's broken answer (a cut-off envelope, a page that is not XML), sent as a broken core sends it.
      if (error instanceof BrokenAnswerError) {
        request.problemCode = BROKEN_ANSWER_CODE;
        return reply.code(200).type(error.answer.contentType).send(error.answer.body);
      }
      const codecError = error instanceof SoapCodecError ? error : undefined;
      const problem = codecError ? codecProblem(codecError) : problemOf(error, request);
      // What is not a SOAP call (another media type, a GET without ?wsdl) is answered as the JSON API answers.
      if (problem.code === 'UNSUPPORTED_MEDIA_TYPE' || request.method !== 'POST')
        return sendProblem(reply, problem, request);
      // SOAP 1.1, 4.2.3: a mandatory header not understood has a fault code of its own; a fault rule may name
      // the class of its Fault.
      return sendFault(
        reply,
        request,
        problem,
        codecError?.code === 'SOAP_MUST_UNDERSTAND' ? 'MustUnderstand' : request.soapFaultClass,
      );
    });

    for (const endpoint of endpoints) {
      const { codec } = endpoint;
      soap.get(endpoint.path, { schema: { hide: true } }, async (request, reply) => {
        const query = request.query as Record<string, unknown>;
        if (!('wsdl' in query) && !('WSDL' in query))
          throw new Problem(404, 'NOT_FOUND', `POST SOAP envelopes here; GET ${endpoint.path}?wsdl for the WSDL`);
        let template = wsdls.get(endpoint);
        if (!template) wsdls.set(endpoint, (template = wsdlTemplate(endpoint)));
        const address = `${config.publicUrl ? publicBase(config.publicUrl) : listenerBase(request)}${endpoint.path}`;
        // Without a public URL the address depends on the interface the request came in on: no shared cache.
        const caching = config.publicUrl ? 'public, max-age=300' : 'private, max-age=300';
        return reply.type(SOAP_CONTENT_TYPE).header('cache-control', caching).send(template(address));
      });

      const actions = new Map(
        codec.mapping
          .endpoint(endpoint.service, endpoint.family)
          .map(({ operation, wire }) => [wire.soapAction, operation as AnyOperation]),
      );
      soap.post(
        endpoint.path,
        {
          schema: { hide: true },
          // Who calls, before the body is read (as on the JSON API): the bearer token, or (credentials mode)
          // the body's Credentials.
          onRequest: async (request) => {
            request.bearer =
              config.soapAuth === 'token'
                ? await authenticator.authenticateBearer(request.headers.authorization)
                : { tokenName: `soap@${request.ip}`, scopes: SCOPES };
          },
          // A call refused before its envelope named an operation (token, media type, size, encoding, XML, a
          // mandatory header, an operation not served here) is audited under the operation its SOAPAction
          // names, or the endpoint; app.ts audits every call that reached its operation.
          onResponse: async (request, reply) => {
            if (request.operation) return;
            const named = actions.get(soapActionOf(request) ?? '') ?? `soap:${endpoint.path}`;
            app.audit.record(auditEvent(request, named, reply.statusCode, request.problemCode ?? null));
          },
        },
        async (request, reply) => {
          const decoded = codec.decodeRequest(request.body as string, endpoint);
          const operation = decoded.operation as AnyOperation;
          request.operation = operation;
          const action = soapActionOf(request);
          if (action === undefined || (action !== '' && action !== decoded.wire.soapAction)) {
            throw validationFailed([
              {
                pointer: '',
                detail: `the SOAPAction header must be "${decoded.wire.soapAction}" for ${operation.name}${action ? `, not "${clip(action)}"` : ''}`,
              },
            ]);
          }
          await pipeline.admit(request, reply, operation);
          pipeline.validate(request, operation, decoded.body);
          const result = await pipeline.answer(request, reply, operation, decoded.body as RequestBody<never>, 'soap');
          // The sandbox dropped the connection (X-Coregate-Fault: drop, or a fault rule): there is no one to answer.
          if (reply.sent) return reply;
          return reply
            .type(SOAP_CONTENT_TYPE)
            .send(codec.encodeResponse(operation, result as Record<string, unknown>, decoded.messageId));
        },
      );
    }
  });
}
