/**
 * The codec's schema violations and the element path they name. Every construct (scalars, encoding,
 * decoding, shapes, the envelope) refuses a value with `violation`; an encoder or decoder that holds a child
 * adds the child's name to the path on the way out (`within`, or `outOf` in a hot loop's catch), so the
 * path is built only when something fails.
 */
import { clip, SoapCodecError } from '../xml.js';

/** A request's value as an error quotes it: in JSON's quotes, clipped. */
export const quoted = (text: string) => JSON.stringify(clip(text));

/** A schema violation; `path` is the one element (or `@attribute`) at fault, clipped like every quoted name. */
export function violation(message: string, path?: string): SoapCodecError {
  return new SoapCodecError('SOAP_SCHEMA_VIOLATION', message, path === undefined ? undefined : clip(path));
}

/** Runs `step`, naming `name` in the path of any codec error it throws. */
export function within<T>(name: string, step: () => T): T {
  try {
    return step();
  } catch (error) {
    throw outOf(error, name);
  }
}

/** An error thrown below element `name`, with `name` added to its path (hot loops catch and call this). */
export function outOf(error: unknown, name: string): unknown {
  return error instanceof SoapCodecError ? error.within(name) : error;
}
