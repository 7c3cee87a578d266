/**
 * Shared components for an OpenAPI document: what the document would otherwise repeat is written once under
 * `components` and named by `$ref` where it was. The document stays the same contract (every schema accepts
 * what it accepted, every example is the same value); it is less than half as long, and /docs, which parses
 * and renders all of it, shows it in seconds. Only the document is rewritten: the route schemas that
 * validate requests are not these objects.
 */

type Json = Record<string, unknown>;

/** A value type the document names once (`XmlText`), and where a schema of its shape says so by `$ref`. */
export interface ValueType {
  readonly name: string;
  /** The schema of the shape, without a description: a schema with these keywords alone is this type. */
  readonly shape: Json;
  /** Keywords the component adds that the route schemas leave out (`format: date`, for the reader only). */
  readonly documents?: Json;
  readonly description?: string;
}

export interface SharedDocument {
  paths: Record<string, Record<string, Json | undefined>>;
  components: Json & { schemas?: Record<string, Json>; examples?: Record<string, Json> };
}

const SCHEMA_REF = '#/components/schemas/';

/** A schema's keywords in a stable order, so that two schemas written in another order compare equal. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  const entries = Object.entries(value as Json).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([key, member]) => `${JSON.stringify(key)}:${canonical(member)}`).join(',')}}`;
}

const withoutDescription = ({ description: _description, ...rest }: Json) => rest;

/**
 * A schema whose keywords but its description are another's, named by `$ref` with its own description. The
 * first of equal component schemas keeps its content; each later one refers to it (the share records'
 * persistent `<X>Fields` and 2022.01 `<X>UpdatableFields` objects hold the same fields, and so do the
 * tracking records of shares and collateral).
 */
function shareEqualSchemas(schemas: Record<string, Json>): void {
  const firstOfShape = new Map<string, string>();
  for (const [name, schema] of Object.entries(schemas)) {
    const shape = canonical(withoutDescription(schema));
    const first = firstOfShape.get(shape);
    if (first === undefined) firstOfShape.set(shape, name);
    else
      schemas[name] = {
        $ref: `${SCHEMA_REF}${first}`,
        ...(schema.description === undefined ? {} : { description: schema.description }),
      };
  }
}

/**
 * An object schema whose fields are all fields of a larger one's, alike (ShareName's 2022.01 updatable fields
 * are 103 of the persistent family's 136): the fields both have are written once, in `<name>Base`, and each
 * schema is that base with its own further fields; `unevaluatedProperties: false` still refuses any other
 * field, as `additionalProperties: false` did. Only for sets of at least `MIN_SHARED_FIELDS` fields, where the
 * saving pays for the indirection.
 */
function shareFieldSubsets(schemas: Record<string, Json>): void {
  const MIN_SHARED_FIELDS = 20;
  const closed = (schema: Json) =>
    schema.type === 'object' && schema.additionalProperties === false && typeof schema.properties === 'object';
  const fields = (schema: Json) => schema.properties as Record<string, Json>;
  for (const [name, subset] of Object.entries(schemas)) {
    // A schema already written as a base's extension is not a subset of another.
    if (schemas[name] !== subset || !closed(subset) || Object.keys(fields(subset)).length < MIN_SHARED_FIELDS) continue;
    const supersets = Object.entries(schemas).filter(
      ([other, superset]) =>
        other !== name &&
        closed(superset) &&
        Object.keys(fields(superset)).length > Object.keys(fields(subset)).length &&
        Object.entries(fields(subset)).every(
          ([field, schema]) =>
            fields(superset)[field] !== undefined && canonical(fields(superset)[field]) === canonical(schema),
        ),
    );
    if (supersets.length === 0) continue;
    const base = `${name}Base`;
    if (schemas[base]) throw new Error(`${base} is the name of another schema`);
    schemas[base] = { type: 'object', properties: fields(subset) };
    const extend = (schema: Json, own: Record<string, Json>): Json => {
      const { additionalProperties: _closed, properties: _fields, ...rest } = schema;
      return {
        ...rest,
        allOf: [{ $ref: `${SCHEMA_REF}${base}` }],
        ...(Object.keys(own).length > 0 ? { properties: own } : {}),
        unevaluatedProperties: false,
      };
    };
    for (const [other, superset] of supersets) {
      const own = Object.fromEntries(Object.entries(fields(superset)).filter(([field]) => !(field in fields(subset))));
      schemas[other] = extend(superset, own);
    }
    schemas[name] = extend(subset, {});
  }
}

/** Every schema of the document, in place: component schemas, and the bodies and answers of each operation. */
function replaceSchemas(document: SharedDocument, replace: (schema: Json) => Json): void {
  const walk = (node: unknown): unknown => {
    if (Array.isArray(node)) return node.map(walk);
    if (node === null || typeof node !== 'object') return node;
    const replaced = replace(node as Json);
    if (replaced !== node) return replaced;
    for (const [key, member] of Object.entries(node as Json)) {
      // Examples are values, not schemas.
      if (key !== 'examples' && key !== 'example') (node as Json)[key] = walk(member);
    }
    return node;
  };
  const schemas = document.components.schemas ?? {};
  for (const name of Object.keys(schemas)) {
    for (const [key, member] of Object.entries(schemas[name]!)) schemas[name]![key] = walk(member);
  }
  for (const methods of Object.values(document.paths)) {
    for (const operation of Object.values(methods)) {
      if (!operation) continue;
      for (const part of ['requestBody', 'responses'] as const) {
        if (operation[part] !== undefined) operation[part] = walk(operation[part]);
      }
    }
  }
}

/**
 * Each schema of a value type's shape becomes a `$ref` to the type's component: a described type's schemas
 * with its description, an undescribed type's with any description, which the `$ref` keeps beside it.
 */
function shareValueTypes(document: SharedDocument, types: readonly ValueType[]): void {
  const described = new Map(
    types
      .filter((type) => type.description !== undefined)
      .map((type) => [canonical({ ...type.shape, description: type.description }), type]),
  );
  const undescribed = new Map(
    types.filter((type) => type.description === undefined).map((type) => [canonical(type.shape), type]),
  );
  const used = new Set<ValueType>();
  replaceSchemas(document, (schema) => {
    const type = described.get(canonical(schema)) ?? undescribed.get(canonical(withoutDescription(schema)));
    if (!type) return schema;
    used.add(type);
    const description = type.description === undefined ? schema.description : undefined;
    return { $ref: `${SCHEMA_REF}${type.name}`, ...(description === undefined ? {} : { description }) };
  });
  const schemas = (document.components.schemas ??= {});
  for (const type of types) {
    if (!used.has(type)) continue;
    if (schemas[type.name]) throw new Error(`the value type ${type.name} is the name of another schema`);
    schemas[type.name] = {
      ...type.shape,
      ...type.documents,
      ...(type.description === undefined ? {} : { description: type.description }),
    };
  }
}

/**
 * An answer example that more than one operation shows (getCollateral's is getCollateralSelectFields') is
 * written once under `components/examples`, named by the first operation that shows it.
 */
function shareAnswerExamples(document: SharedDocument): void {
  const media: { operationId: string; examples: Record<string, Json> }[] = [];
  for (const methods of Object.values(document.paths)) {
    for (const operation of Object.values(methods)) {
      const responses = operation?.responses as Record<string, Json> | undefined;
      const content = responses?.['200']?.content as Record<string, Json> | undefined;
      for (const type of Object.values(content ?? {})) {
        const examples = type.examples as Record<string, Json> | undefined;
        if (examples) media.push({ operationId: String(operation!.operationId), examples });
      }
    }
  }
  const shown = new Map<string, number>();
  const key = (example: Json) => canonical(example.value);
  for (const { examples } of media) {
    for (const example of Object.values(examples)) shown.set(key(example), (shown.get(key(example)) ?? 0) + 1);
  }
  const names = new Map<string, string>();
  const components = (document.components.examples ??= {});
  for (const { operationId, examples } of media) {
    for (const [name, example] of Object.entries(examples)) {
      if (example.$ref !== undefined || (shown.get(key(example)) ?? 0) < 2) continue;
      let component = names.get(key(example));
      if (component === undefined) {
        component = `answer-${operationId}`;
        names.set(key(example), component);
        components[component] = { value: example.value };
      }
      examples[name] = { $ref: `#/components/examples/${component}` };
    }
  }
}

/**
 * A request body or a success answer that several operations have alike (an operation on both version
 * families, a search and its list) is written once under `components/requestBodies` or `components/responses`,
 * named by the first operation that has it.
 */
function shareOperationParts(document: SharedDocument): void {
  const parts = [
    {
      component: 'requestBodies',
      get: (operation: Json) => operation.requestBody as Json | undefined,
      set: (operation: Json, ref: Json) => (operation.requestBody = ref),
    },
    {
      component: 'responses',
      get: (operation: Json) => (operation.responses as Record<string, Json> | undefined)?.['200'],
      set: (operation: Json, ref: Json) => ((operation.responses as Record<string, Json>)['200'] = ref),
    },
  ] as const;
  const operations = Object.values(document.paths).flatMap((methods) =>
    Object.values(methods).filter((operation): operation is Json => operation !== undefined),
  );
  for (const part of parts) {
    const count = new Map<string, number>();
    for (const operation of operations) {
      const value = part.get(operation);
      if (value && value.$ref === undefined) count.set(canonical(value), (count.get(canonical(value)) ?? 0) + 1);
    }
    const components = ((document.components[part.component] as Record<string, Json> | undefined) ??= {});
    document.components[part.component] = components;
    const names = new Map<string, string>();
    for (const operation of operations) {
      const value = part.get(operation);
      if (!value || value.$ref !== undefined || (count.get(canonical(value)) ?? 0) < 2) continue;
      let name = names.get(canonical(value));
      if (name === undefined) {
        name = String(operation.operationId);
        names.set(canonical(value), name);
        components[name] = value;
      }
      part.set(operation, { $ref: `#/components/${part.component}/${name}` });
    }
  }
}

/**
 * An answer schema written out in more than one operation (every update of a version family answers the
 * same UpdateStatus) is written once under `components/schemas`, named by the first operation that has it;
 * answers that operations share whole are shared before (shareOperationParts).
 */
function shareAnswerSchemas(document: SharedDocument): void {
  // Below this length a schema is about as long as the reference to it.
  const SHARED_ANSWER_LENGTH = 160;
  const answers: { operationId: string; media: Json }[] = [];
  for (const methods of Object.values(document.paths)) {
    for (const operation of Object.values(methods)) {
      const content = (operation?.responses as Record<string, Json> | undefined)?.['200']?.content as
        Record<string, Json> | undefined;
      for (const media of Object.values(content ?? {})) {
        const schema = media.schema as Json | undefined;
        if (schema && schema.$ref === undefined) answers.push({ operationId: String(operation!.operationId), media });
      }
    }
  }
  const count = new Map<string, number>();
  for (const { media } of answers) count.set(canonical(media.schema), (count.get(canonical(media.schema)) ?? 0) + 1);
  const names = new Map<string, string>();
  const schemas = (document.components.schemas ??= {});
  for (const { operationId, media } of answers) {
    const shape = canonical(media.schema);
    if ((count.get(shape) ?? 0) < 2 || shape.length < SHARED_ANSWER_LENGTH) continue;
    let name = names.get(shape);
    if (name === undefined) {
      name = `answer-${operationId}`;
      names.set(shape, name);
      schemas[name] = media.schema as Json;
    }
    media.schema = { $ref: `${SCHEMA_REF}${name}` };
  }
}

/**
 * Writes once what the document repeats: equal component schemas, the value types' schemas, answer
 * schemas and examples that several operations show, and request bodies and success answers operations share.
 * @example shareComponents(document, [{ name: 'XmlText', shape: { type: 'string', pattern: '…' } }])
 */
export function shareComponents(document: SharedDocument, types: readonly ValueType[]): void {
  shareValueTypes(document, types);
  if (document.components.schemas) {
    shareEqualSchemas(document.components.schemas);
    shareFieldSubsets(document.components.schemas);
  }
  shareAnswerExamples(document);
  shareOperationParts(document);
  shareAnswerSchemas(document);
}

/**
 * The document with only the components it names: those its paths and security schemes refer to, and those
 * they refer to in turn. A copy; the document is not changed.
 * @example withUsedComponents({ ...document, paths: { '/x': document.paths['/x'] } })
 */
export function withUsedComponents<Document extends SharedDocument>(document: Document): Document {
  const used = new Set<string>();
  const components = document.components as Record<string, Record<string, unknown>>;
  const walk = (node: unknown): void => {
    if (Array.isArray(node)) node.forEach(walk);
    else if (node !== null && typeof node === 'object') {
      for (const [key, member] of Object.entries(node as Json)) {
        if (key === '$ref' && typeof member === 'string' && member.startsWith('#/components/')) {
          if (used.has(member)) continue;
          used.add(member);
          const [, , kind, name] = member.split('/');
          walk(components[kind!]?.[name!]);
        } else walk(member);
      }
    }
  };
  walk(document.paths);
  walk(components.securitySchemes);
  const kept = Object.fromEntries(
    Object.entries(components).map(([kind, members]) => [
      kind,
      kind === 'securitySchemes'
        ? members
        : Object.fromEntries(Object.entries(members).filter(([name]) => used.has(`#/components/${kind}/${name}`))),
    ]),
  );
  return { ...document, components: kept };
}
