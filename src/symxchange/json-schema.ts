/**
 * Reading coregate's JSON schemas (TypeBox output) the way the SymXchange mapping and codec need: `$ref`s
 * resolved against the shared schemas, `anyOf` and type lists spread into single-type alternatives.
 */
import type { TSchema } from 'typebox';

/** A JSON schema as TypeBox emits it, read-only. */
export interface JsonSchema {
  readonly $id?: string;
  readonly $ref?: string;
  readonly type?: string | readonly string[];
  readonly properties?: Readonly<Record<string, JsonSchema>>;
  readonly required?: readonly string[];
  readonly items?: JsonSchema;
  readonly anyOf?: readonly JsonSchema[];
  readonly format?: string;
  /** The value an absent element stands for (`FailedUpdateStatus` per family). */
  readonly default?: unknown;
}

export interface JsonSchemas {
  /** The schema a `$ref` names (recursively), or the schema itself. */
  resolve(schema: JsonSchema): JsonSchema;
  /** Single-type alternatives: `anyOf` and `type: [...]` spread out, `$ref`s resolved. */
  alternatives(schema: JsonSchema): JsonSchema[];
  /** True when some alternative has this JSON type. */
  allows(schema: JsonSchema, type: string): boolean;
  /** The object alternative of a schema, if any. */
  objectOf(schema: JsonSchema): JsonSchema | undefined;
}

/**
 * Helpers over a set of shared schemas (`$id` → schema).
 * @example jsonSchemas(SHARED_SCHEMAS).resolve({ $ref: 'Credentials' }).$id // 'Credentials'
 */
export function jsonSchemas(shared: readonly TSchema[]): JsonSchemas {
  const byId = new Map<string, JsonSchema>();
  for (const schema of shared as readonly JsonSchema[]) if (schema.$id !== undefined) byId.set(schema.$id, schema);

  const resolve = (schema: JsonSchema): JsonSchema => {
    if (schema.$ref === undefined) return schema;
    const target = byId.get(schema.$ref);
    if (!target) throw new Error(`no shared schema ${schema.$ref}`);
    return resolve(target);
  };
  const alternatives = (schema: JsonSchema): JsonSchema[] => {
    const resolved = resolve(schema);
    if (resolved.anyOf) return resolved.anyOf.flatMap(alternatives);
    if (Array.isArray(resolved.type)) return (resolved.type as string[]).map((type) => ({ ...resolved, type }));
    return [resolved];
  };
  return {
    resolve,
    alternatives,
    allows: (schema, type) => alternatives(schema).some((alt) => alt.type === type),
    objectOf: (schema) => alternatives(schema).find((alt) => alt.type === 'object'),
  };
}
