/**
 * The JSON body parser: the only accepted media type (spec: Content-Type application/json). Prototype
 * pollution payloads are rejected, a syntax error says where the body broke, and text PostgreSQL cannot
 * store (NUL, unpaired surrogates) is refused here, once for every operation, before any SQL sees it.
 */
import type { FastifyInstance } from 'fastify';
import secureJson from 'secure-json-parse';
import { Problem, validationFailed, type PropertyError } from '../contract/problems.js';

/** Properties reported at most: a body of a thousand NULs gets a short answer, not a thousand lines. */
const MAX_REPORTED = 100;

/**
 * In the body text, what can decode to NUL or a surrogate: a `\u0000` or `\uD800`–`\uDFFF` escape.
 * A raw NUL is a JSON syntax error, and text decoded from UTF-8 has no unpaired surrogates (checked anyway).
 */
const SUSPECT_ESCAPE = /\\u(?:0000|[dD][89a-fA-F][0-9a-fA-F]{2})/;

/** No unpaired UTF-16 surrogate. */
const isWellFormed = (text: string): boolean => text.isWellFormed();

/** Why PostgreSQL could not store a text, or undefined if it can. */
function unstorableText(text: string): string | undefined {
  if (text.includes('\u0000')) return 'must not contain NUL (U+0000)';
  if (!isWellFormed(text)) return 'must not contain an unpaired UTF-16 surrogate';
  return undefined;
}

/** A JSON pointer segment (RFC 6901): `~` is `~0`, `/` is `~1`. */
const pointerSegment = (key: string): string => key.replaceAll('~', '~0').replaceAll('/', '~1');

/**
 * Every string value and object key of a parsed body that PostgreSQL could not store, as JSON pointers.
 * Iterative, so a deeply nested body cannot exhaust the stack.
 * @example unstorableProperties({ Name: 'a\u0000' }) // [{ pointer: '/Name', detail: 'must not contain NUL (U+0000)' }]
 */
export function unstorableProperties(body: unknown): PropertyError[] {
  const errors: PropertyError[] = [];
  // A stack of values still to look at, or of property names already found bad (kept in document order).
  const pending: ({ value: unknown; pointer: string } | { error: PropertyError })[] = [{ value: body, pointer: '' }];
  while (pending.length > 0 && errors.length < MAX_REPORTED) {
    const next = pending.pop()!;
    if ('error' in next) {
      errors.push(next.error);
      continue;
    }
    const { value, pointer } = next;
    if (typeof value === 'string') {
      const detail = unstorableText(value);
      if (detail) errors.push({ pointer, detail });
    } else if (Array.isArray(value)) {
      for (let index = value.length - 1; index >= 0; index -= 1) {
        pending.push({ value: value[index], pointer: `${pointer}/${index}` });
      }
    } else if (value !== null && typeof value === 'object') {
      const entries = Object.entries(value);
      for (let index = entries.length - 1; index >= 0; index -= 1) {
        const [key, child] = entries[index]!;
        const property = `${pointer}/${pointerSegment(key)}`;
        const detail = unstorableText(key);
        // A bad name is reported as the property it names; its value is not looked into.
        pending.push(
          detail
            ? { error: { pointer: property, detail: `the property name ${detail}` } }
            : { value: child, pointer: property },
        );
      }
    }
  }
  return errors;
}

function parseJsonBody(body: string): unknown {
  if (body.length === 0) throw new Problem(400, 'MALFORMED_JSON', 'The body is empty; send a JSON object');
  let parsed: unknown;
  try {
    parsed = secureJson.parse(body, undefined, { protoAction: 'error', constructorAction: 'error' });
  } catch (error) {
    const message = (error as Error).message;
    if (/forbidden prototype property/.test(message)) {
      throw validationFailed([
        { pointer: '', detail: 'must not contain __proto__ or constructor.prototype properties' },
      ]);
    }
    throw new Problem(400, 'MALFORMED_JSON', `The body is not valid JSON: ${message}`);
  }
  // Most bodies have no such escape: they skip the walk.
  if (SUSPECT_ESCAPE.test(body) || !isWellFormed(body)) {
    const errors = unstorableProperties(parsed);
    if (errors.length > 0) throw validationFailed(errors);
  }
  return parsed;
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
