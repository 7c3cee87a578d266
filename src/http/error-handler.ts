/**
 * The one place where errors become responses: problems keep their status and code, Fastify's own
 * errors (validation, media type, body size, JSON syntax) get stable codes, anything else is a 500
 * whose details go to the log only.
 */
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { DatabaseBusyError, isConnectionFailure } from '../database/database.js';
import {
  databaseBusy,
  databaseUnavailable,
  payloadTooLarge,
  Problem,
  problemBody,
  requestTimedOut,
  validationFailed,
  type PropertyError,
} from '../contract/problems.js';

export interface AjvError {
  instancePath: string;
  keyword: string;
  message?: string;
  params: Record<string, unknown>;
}

/** Ajv errors as JSON pointers into the body, one entry per property and message. */
export function propertyErrors(errors: readonly AjvError[]): PropertyError[] {
  const seen = new Set<string>();
  const result: PropertyError[] = [];
  for (const error of errors) {
    let pointer = error.instancePath;
    let detail = error.message ?? 'is not valid';
    if (error.keyword === 'required') {
      pointer += `/${String(error.params.missingProperty)}`;
      detail = 'is required';
    } else if (error.keyword === 'additionalProperties') {
      pointer += `/${String(error.params.additionalProperty)}`;
      detail = 'is not a known property';
    } else if (error.keyword === 'type' && error.params.type === 'string') {
      detail = 'must be a JSON string';
    }
    const key = `${pointer}\0${detail}`;
    if (!seen.has(key)) {
      seen.add(key);
      result.push({ pointer, detail });
    }
  }
  return result;
}

/** XML media types: a SOAP envelope sent to a JSON path (or a SOAP 1.2 one anywhere). */
const XML_MEDIA_TYPE = /^\s*(text\/xml|application\/soap\+xml|application\/xml)\b/i;

/** What a body of the wrong media type gets: the JSON API takes JSON, the SymXchange face SOAP 1.1. */
function unsupportedMediaType(request: FastifyRequest): Problem {
  const type = request.headers['content-type'] ?? '';
  if (request.url.startsWith('/SymXchange/')) {
    const soap12 = /application\/soap\+xml/i.test(type) ? ' (SOAP 1.2 is not served)' : '';
    return new Problem(
      415,
      'UNSUPPORTED_MEDIA_TYPE',
      `A SymXchange endpoint takes a SOAP 1.1 envelope as text/xml${soap12}; the JSON API is at /gw/627/…`,
    );
  }
  if (XML_MEDIA_TYPE.test(type)) {
    return new Problem(
      415,
      'UNSUPPORTED_MEDIA_TYPE',
      'This is the JSON API: send the body as application/json, or the SOAP envelope to /SymXchange/<service>',
    );
  }
  return new Problem(415, 'UNSUPPORTED_MEDIA_TYPE', 'Send the body as application/json');
}

/**
 * The 503 of a database that cannot serve a call: its connections all in use (the pool is too small for
 * the load, or queries are slow), or the database not reachable. Each sends an operator somewhere else.
 */
export function databaseProblem(error: unknown): Problem {
  return error instanceof DatabaseBusyError ? databaseBusy() : databaseUnavailable();
}

const FASTIFY_CODES: Record<string, (request: FastifyRequest) => Problem> = {
  FST_ERR_CTP_INVALID_MEDIA_TYPE: unsupportedMediaType,
  FST_ERR_CTP_BODY_TOO_LARGE: (request) => payloadTooLarge(request.routeOptions.bodyLimit),
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: () =>
    new Problem(400, 'MALFORMED_JSON', 'The body length does not match Content-Length'),
};

function toProblem(error: FastifyError, request: FastifyRequest): Problem | undefined {
  if (error instanceof Problem) return error;
  if (isConnectionFailure(error)) return databaseProblem(error);
  if (error.validation) return validationFailed(propertyErrors(error.validation as AjvError[]));
  const known = error.code ? FASTIFY_CODES[error.code] : undefined;
  if (known) return known(request);
  if (error.statusCode === 408 || error.code === 'FST_ERR_REQUEST_TIMEOUT') return requestTimedOut();
  return undefined;
}

/**
 * Notes the problem a call is answered with for its audit event, log line and span: its code, or what the
 * operator's records say in its place (a lockout), and who a refused credential names.
 */
export function recordProblem(request: FastifyRequest, problem: Problem): void {
  request.problemCode = problem.recordedAs?.code ?? problem.code;
  if (problem.recordedAs) request.refusedCredential = problem.recordedAs;
}

export function sendProblem(reply: FastifyReply, problem: Problem, request: FastifyRequest): FastifyReply {
  recordProblem(request, problem);
  for (const [name, value] of Object.entries(problem.headers)) reply.header(name, value);
  return reply.code(problem.status).type('application/problem+json').send(problemBody(problem, request.url));
}

/**
 * The problem an error is answered with: its own, a stable code for Fastify's, or a 500 whose details go to
 * the log only (under the request id).
 */
export function problemOf(error: FastifyError, request: FastifyRequest): Problem {
  const problem = toProblem(error, request);
  if (problem) return problem;
  if (error.statusCode && error.statusCode >= 400 && error.statusCode < 500) {
    request.log.info({ err: error }, 'client error');
    return new Problem(error.statusCode, 'VALIDATION_FAILED', 'The request is not valid');
  }
  request.log.error({ err: error }, 'request failed');
  return new Problem(500, 'INTERNAL', `Something went wrong; quote request id ${request.id} when reporting it`);
}

export function errorHandler(error: FastifyError, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  return sendProblem(reply, problemOf(error, request), request);
}
