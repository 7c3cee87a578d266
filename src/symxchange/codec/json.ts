/**
 * JSON as the codec holds it on its side of the wire: objects, the equality a schema `default` is compared
 * with, and the one JSON type of a single-type schema alternative (json-schema.ts spreads a schema into
 * those). Shared by the scalars, the encoders, the decoders and the operation shapes.
 */
import type { JsonSchema } from '../json-schema.js';

export type JsonObject = Record<string, unknown>;

export const isObject = (value: unknown): value is JsonObject =>
  value !== null && typeof value === 'object' && !Array.isArray(value);

/** The JSON type of a single-type alternative (`json.alternatives` gives those). */
export const typeOf = (schema: JsonSchema) => schema.type as string | undefined;

/** Equal JSON values (a schema default against a value). */
export function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((item, i) => sameJson(item, b[i]));
  if (isObject(a) && isObject(b)) {
    const keys = Object.keys(a);
    return keys.length === Object.keys(b).length && keys.every((key) => sameJson(a[key], b[key]));
  }
  return false;
}
