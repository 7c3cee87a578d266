/**
 * The one place where errors become responses: problems keep their status and code, Fastify's own
 * errors (validation, media type, body size, JSON syntax) get stable codes, anything else is a 500
 * whose details go to the log only.
 */
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { isConnectionFailure } from '../store/database.js';
import {
  databaseUnavailable,
  Problem,
  problemBody,
  validationFailed,
  type PropertyError,
} from '../contract/problems.js';

interface AjvError {
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

const FASTIFY_CODES: Record<string, () => Problem> = {
  FST_ERR_CTP_INVALID_MEDIA_TYPE: () => new Problem(415, 'UNSUPPORTED_MEDIA_TYPE', 'Send the body as application/json'),
  FST_ERR_CTP_BODY_TOO_LARGE: () => new Problem(413, 'PAYLOAD_TOO_LARGE', 'The body exceeds the size limit'),
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: () =>
    new Problem(400, 'MALFORMED_JSON', 'The body length does not match Content-Length'),
};

function toProblem(error: FastifyError): Problem | undefined {
  if (error instanceof Problem) return error;
  if (isConnectionFailure(error)) return databaseUnavailable();
  if (error.validation) return validationFailed(propertyErrors(error.validation as AjvError[]));
  const known = error.code ? FASTIFY_CODES[error.code] : undefined;
  if (known) return known();
  if (error.statusCode === 408 || error.code === 'FST_ERR_REQUEST_TIMEOUT') {
    return new Problem(408, 'UNAVAILABLE', 'The request took too long');
  }
  return undefined;
}

export function sendProblem(reply: FastifyReply, problem: Problem, request: FastifyRequest): FastifyReply {
  request.problemCode = problem.code;
  for (const [name, value] of Object.entries(problem.headers)) reply.header(name, value);
  return reply.code(problem.status).type('application/problem+json').send(problemBody(problem, request.url));
}

export function errorHandler(error: FastifyError, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const problem = toProblem(error);
  if (problem) return sendProblem(reply, problem, request);
  if (error.statusCode && error.statusCode >= 400 && error.statusCode < 500) {
    request.log.info({ err: error }, 'client error');
    return sendProblem(reply, new Problem(error.statusCode, 'VALIDATION_FAILED', 'The request is not valid'), request);
  }
  request.log.error({ err: error }, 'request failed');
  return sendProblem(
    reply,
    new Problem(500, 'INTERNAL', `Something went wrong; quote request id ${request.id} when reporting it`),
    request,
  );
}
