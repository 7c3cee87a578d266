/**
 * The JSON body parser: the only accepted media type (spec: Content-Type application/json). Prototype
 * pollution payloads are rejected, and a syntax error says where the body broke.
 */
import type { FastifyInstance } from 'fastify';
import secureJson from 'secure-json-parse';
import { Problem, validationFailed } from './problems.js';

function parseJsonBody(body: string): unknown {
  if (body.length === 0) throw new Problem(400, 'MALFORMED_JSON', 'The body is empty; send a JSON object');
  try {
    return secureJson.parse(body, undefined, { protoAction: 'error', constructorAction: 'error' });
  } catch (error) {
    const message = (error as Error).message;
    if (/forbidden prototype property/.test(message)) {
      throw validationFailed([{ pointer: '', detail: 'must not contain __proto__ or constructor.prototype properties' }]);
    }
    throw new Problem(400, 'MALFORMED_JSON', `The body is not valid JSON: ${message}`);
  }
}

/** Replaces Fastify's parsers with JSON only: every other media type gets 415. */
export function registerJsonBodyParser(app: FastifyInstance): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => {
    try {
      done(null, parseJsonBody(body as string));
    } catch (error) {
      done(error as Error, undefined);
    }
  });
}
