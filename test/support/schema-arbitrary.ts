/**
 * fast-check arbitraries from the JSON schemas of the request bodies, for fuzzing every operation the
 * same way: values the schema accepts, values that break it (lengths, patterns, ranges, types, missing
 * and unknown properties), and hostile text put at any string or property name of a body.
 */
import fc from 'fast-check';

/** The JSON Schema keywords the request schemas use (TypeBox output). */
export interface JsonSchema {
  readonly $id?: string;
  readonly $ref?: string;
  readonly type?: string | readonly string[];
  readonly properties?: Readonly<Record<string, JsonSchema>>;
  readonly required?: readonly string[];
  readonly additionalProperties?: boolean | JsonSchema;
  readonly minProperties?: number;
  readonly items?: JsonSchema;
  readonly minItems?: number;
  readonly maxItems?: number;
  readonly anyOf?: readonly JsonSchema[];
  readonly minLength?: number;
  readonly maxLength?: number;
  readonly pattern?: string;
  readonly format?: string;
  readonly minimum?: number;
  readonly maximum?: number;
}

/**
 * Text that has broken services before: what PostgreSQL cannot store (NUL, unpaired and reversed
 * surrogates), control and non-characters, SQL and JSON look-alikes, LIKE wildcards, backslashes,
 * emoji and bidi marks, case-folding traps, numbers in disguise.
 */
export const HOSTILE_TEXTS: readonly string[] = [
  '\u0000',
  'ANN\u0000',
  '\ud800',
  '\udfff',
  'x\udbff',
  '\udc00\ud800',
  '\ud83d',
  '\u0001',
  '\u001f',
  '\u007f',
  '\u0085',
  '\t',
  '\r\n',
  '\ufffe',
  '\uffff',
  '\ufeff',
  "'; drop table share; --",
  "' OR '1'='1",
  '1; select pg_sleep(1)',
  '%',
  '_',
  '%_%',
  '\\',
  "\\'",
  '\\x00',
  '\\u0000',
  '$1',
  '::json',
  "E'\\x41'",
  'null',
  'NULL',
  'true',
  '[]',
  '{"a":1}',
  '{"__proto__":{"x":1}}',
  '__proto__',
  'constructor',
  'toString',
  '😀',
  '👨‍👩‍👧‍👦',
  'e\u0301',
  '\u202eRTL',
  '\u200f',
  '\u200b',
  'İ',
  'ß',
  'ﬀ',
  '１２３４',
  '٠١٢٣',
  '-0',
  '1e309',
  'NaN',
  '9'.repeat(40),
  '0000000001',
  ' ',
  '',
  "{date:'2024-02-30'}",
  'Amount > 1 OR 1 = 1',
  '<script>alert(1)</script>',
  '../../etc/passwd',
  '%00',
];

/** Any UTF-16 code unit, lone surrogates included (fast-check's own units keep surrogates paired). */
const codeUnit = fc.integer({ min: 0, max: 0xffff }).map((unit) => String.fromCharCode(unit));

/** Hostile text: the list above, random code units, very long text, or hostile text inside ordinary text. */
export const hostileText: fc.Arbitrary<string> = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom(...HOSTILE_TEXTS) },
  { weight: 2, arbitrary: fc.string({ unit: codeUnit, minLength: 1, maxLength: 8 }) },
  { weight: 1, arbitrary: fc.constantFrom(300, 2049, 70_000).map((length) => 'W'.repeat(length)) },
  {
    weight: 2,
    arbitrary: fc
      .tuple(fc.string({ maxLength: 4 }), fc.constantFrom(...HOSTILE_TEXTS), fc.string({ maxLength: 4 }))
      .map((parts) => parts.join('')),
  },
);

/** A value of the wrong JSON type, whatever the schema says. */
const anyJsonValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.constant(null),
  fc.boolean(),
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.string({ maxLength: 6 }),
  fc.constant([]),
  fc.constant({}),
  fc.array(fc.integer(), { maxLength: 3 }),
);

/**
 * How a body is generated. `valid` stays within the schema (so that requests reach the handlers and the
 * database); `wild` also breaks it everywhere.
 */
export type Mode = 'valid' | 'wild';

export interface SchemaArbitraryOptions {
  /** Shared schemas by `$id`, for `$ref`. */
  readonly schemas: ReadonlyMap<string, JsonSchema>;
  readonly mode: Mode;
  /**
   * A property whose values the caller knows better (a search query, a paging token, credentials): its
   * arbitrary, or undefined to derive one from the schema. `path` holds the property names from the root.
   */
  readonly special?: (path: readonly string[], mode: Mode) => fc.Arbitrary<unknown> | undefined;
}

/** Marks a property left out of a generated object. */
const ABSENT = Symbol('absent');

const weighted = <T>(weight: number, arbitrary: fc.Arbitrary<T>) => ({ weight, arbitrary });

function resolve(schema: JsonSchema, options: SchemaArbitraryOptions): JsonSchema {
  if (schema.$ref === undefined) return schema;
  const target = options.schemas.get(schema.$ref);
  if (!target) throw new Error(`no shared schema ${schema.$ref}`);
  return target;
}

/** Counts code points, as the schema's lengths do. */
const length = (text: string) => [...text].length;
const truncate = (text: string, max: number) => [...text].slice(0, max).join('');

function validString(schema: JsonSchema): fc.Arbitrary<string> {
  const min = schema.minLength ?? 0;
  const max = Math.min(schema.maxLength ?? 40, 64);
  if (schema.format === 'date') {
    const everyday = fc
      .date({ min: new Date('1900-01-01T00:00:00Z'), max: new Date('2100-12-31T00:00:00Z'), noInvalidDate: true })
      .map((date) => date.toISOString().slice(0, 10));
    // The format accepts any four-digit year; PostgreSQL has no year 0 (a pattern may refuse it).
    const dates = fc.oneof(
      weighted(2, everyday),
      weighted(1, fc.constantFrom('0000-01-01', '0001-01-01', '9999-12-31', '2000-02-29')),
    );
    const pattern = schema.pattern === undefined ? undefined : new RegExp(schema.pattern);
    return pattern ? dates.filter((value) => pattern.test(value)) : dates;
  }
  if (schema.pattern) {
    const pattern = new RegExp(schema.pattern);
    // Printable-text patterns (`^[^…]*$`): Unicode text too, not only the ASCII stringMatching draws.
    const printable = schema.pattern.startsWith('^[^');
    const text = printable
      ? fc.oneof(fc.stringMatching(pattern), fc.string({ unit: 'grapheme', maxLength: max }))
      : fc.stringMatching(pattern);
    return text
      .map((value) => truncate(value, max))
      .map((value) => (length(value) < min ? value.padEnd(min, 'A') : value))
      .filter((value) => pattern.test(value));
  }
  return fc.string({ unit: 'grapheme', minLength: min, maxLength: max });
}

function wildString(schema: JsonSchema): fc.Arbitrary<string> {
  const max = schema.maxLength ?? 40;
  return fc.oneof(
    weighted(4, validString(schema)),
    weighted(2, hostileText),
    weighted(1, fc.constant('A'.repeat(max + 1))),
    weighted(1, fc.constant('')),
    weighted(1, fc.string({ unit: 'binary', maxLength: 12 })),
    weighted(1, fc.constantFrom('2024-02-30', '0000-01-01', '10000-01-01', '2024-1-1', '1985-02-03T00:00:00Z')),
  );
}

function integerArbitrary(schema: JsonSchema, mode: Mode): fc.Arbitrary<number> {
  const min = Math.max(schema.minimum ?? -(2 ** 31), Number.MIN_SAFE_INTEGER);
  const max = Math.min(schema.maximum ?? 2 ** 31 - 1, Number.MAX_SAFE_INTEGER);
  const valid = fc.oneof(
    fc.integer({ min, max }),
    fc.constantFrom(min, max),
    fc.integer({ min: Math.max(min, 0), max: Math.min(max, 30) }),
  );
  if (mode === 'valid') return valid;
  return fc.oneof(
    weighted(4, valid),
    weighted(1, fc.constantFrom(min - 1, max + 1, 2 ** 31, -(2 ** 31) - 1, 2 ** 53, -(2 ** 53), 1e300, 1.5, -0)),
  );
}

function numberArbitrary(schema: JsonSchema, mode: Mode): fc.Arbitrary<number> {
  const min = schema.minimum ?? -1e15;
  const max = schema.maximum ?? 1e15;
  const cents = fc
    .integer({ min: Math.ceil(Math.max(min, -1e13) * 100), max: Math.floor(Math.min(max, 1e13) * 100) })
    .map((c) => c / 100);
  const valid = fc.oneof(
    cents,
    fc.integer({ min: Math.ceil(Math.max(min, -1e6)), max: Math.floor(Math.min(max, 1e6)) }),
  );
  if (mode === 'valid') return valid;
  return fc.oneof(
    weighted(4, valid),
    weighted(1, fc.double({ noNaN: true, noDefaultInfinity: true })),
    weighted(
      1,
      fc.constantFrom(1e308, -1e308, 5e-324, 0.1 + 0.2, 1.005, 9999999999999.99, 10000000000000.01, 1e21, -0),
    ),
  );
}

function objectArbitrary(
  schema: JsonSchema,
  path: readonly string[],
  options: SchemaArbitraryOptions,
): fc.Arbitrary<unknown> {
  const { mode } = options;
  const properties = Object.entries(schema.properties ?? {});
  const required = new Set(schema.required ?? []);
  const optionalCount = properties.filter(([name]) => !required.has(name)).length;
  // A few optional properties per object, so a record's hundred update fields do not all come at once.
  const absentWeight = Math.max(1, Math.round(optionalCount / 4));
  const entries = properties.map(([name, propertySchema]) => {
    const value = valueArbitrary(propertySchema, [...path, name], options);
    const absent = required.has(name) ? (mode === 'wild' ? 1 : 0) : absentWeight;
    const presentWeight = required.has(name) ? 12 : 1;
    const present = value.map((v) => [name, v] as const);
    return absent === 0 ? present : fc.oneof(weighted(absent, fc.constant(ABSENT)), weighted(presentWeight, present));
  });
  const extraKey =
    mode === 'wild' ? fc.oneof(fc.string({ maxLength: 8 }), hostileText) : fc.string({ minLength: 1, maxLength: 8 });
  const extras =
    typeof schema.additionalProperties === 'object'
      ? fc.dictionary(extraKey, valueArbitrary(schema.additionalProperties, [...path, '*'], options), { maxKeys: 3 })
      : mode === 'wild'
        ? fc.oneof(weighted(4, fc.constant({})), weighted(1, fc.dictionary(extraKey, anyJsonValue, { maxKeys: 2 })))
        : fc.constant({});
  return fc.tuple(fc.tuple(...entries), extras).map(([chosen, extra]) => {
    const object: Record<string, unknown> = { ...extra };
    for (const entry of chosen) if (entry !== ABSENT) object[entry[0]] = entry[1];
    return object;
  });
}

function typedArbitrary(
  type: string,
  schema: JsonSchema,
  path: readonly string[],
  options: SchemaArbitraryOptions,
): fc.Arbitrary<unknown> {
  const { mode } = options;
  switch (type) {
    case 'object':
      return objectArbitrary(schema, path, options);
    case 'array': {
      const items = schema.items ? valueArbitrary(schema.items, [...path, '0'], options) : anyJsonValue;
      const maxItems = schema.maxItems ?? 4;
      const minItems = schema.minItems ?? 0;
      const array = fc.array(items, { minLength: minItems, maxLength: Math.max(minItems, Math.min(maxItems, 4)) });
      return mode === 'valid'
        ? array
        : fc.oneof(
            weighted(5, array),
            weighted(1, fc.array(items, { minLength: maxItems + 1, maxLength: maxItems + 2 })),
          );
    }
    case 'string':
      return mode === 'valid' ? validString(schema) : wildString(schema);
    case 'integer':
      return integerArbitrary(schema, mode);
    case 'number':
      return numberArbitrary(schema, mode);
    case 'boolean':
      return fc.boolean();
    case 'null':
      return fc.constant(null);
    default:
      return anyJsonValue;
  }
}

/**
 * Values of a JSON schema: within it in `valid` mode, breaking it anywhere in `wild` mode.
 * @example fc.sample(valueArbitrary({ type: 'string', pattern: '^[0-9]{10}$' }, [], { schemas: new Map(), mode: 'valid' }), 1)
 */
export function valueArbitrary(
  schema: JsonSchema,
  path: readonly string[],
  options: SchemaArbitraryOptions,
): fc.Arbitrary<unknown> {
  const special = options.special?.(path, options.mode);
  if (special) return special;
  const resolved = resolve(schema, options);
  const alternatives = resolved.anyOf
    ? resolved.anyOf.map((member) => valueArbitrary(member, path, options))
    : [resolved.type ?? 'any'].flat().map((type) => typedArbitrary(type, resolved, path, options));
  const value = alternatives.length === 1 ? alternatives[0]! : fc.oneof(...alternatives);
  return options.mode === 'valid' ? value : fc.oneof(weighted(10, value), weighted(1, anyJsonValue));
}

/** Where hostile text goes in a body: the n-th string value or property name, in document order. */
interface Slot {
  readonly container: Record<string, unknown> | unknown[];
  readonly key: string | number;
  readonly kind: 'value' | 'name';
}

function slotsOf(body: unknown): Slot[] {
  const slots: Slot[] = [];
  const pending: unknown[] = [body];
  while (pending.length > 0) {
    const value = pending.pop();
    if (Array.isArray(value)) {
      value.forEach((item, index) => {
        if (typeof item === 'string') slots.push({ container: value, key: index, kind: 'value' });
        else pending.push(item);
      });
    } else if (value !== null && typeof value === 'object') {
      for (const [key, item] of Object.entries(value)) {
        slots.push({ container: value as Record<string, unknown>, key, kind: 'name' });
        if (typeof item === 'string') slots.push({ container: value as Record<string, unknown>, key, kind: 'value' });
        else pending.push(item);
      }
    }
  }
  return slots;
}

/**
 * A copy of `body` with `text` at one of its string values or property names (picked by `choice`), or
 * inside it when `splice` is set (`A<text>B`).
 */
export function withHostileText(body: unknown, choice: number, text: string, splice: boolean): unknown {
  const copy = structuredClone(body);
  const slots = slotsOf(copy);
  const slot = slots[choice % Math.max(1, slots.length)];
  if (!slot) {
    if (copy === null || typeof copy !== 'object' || Array.isArray(copy)) return text;
    return Object.defineProperty(copy, text, { value: text, enumerable: true, configurable: true, writable: true });
  }
  const old =
    slot.kind === 'value' ? String((slot.container as Record<string | number, unknown>)[slot.key]) : String(slot.key);
  const replacement = splice ? `${old.slice(0, 1)}${text}${old.slice(1)}` : text;
  if (slot.kind === 'value') {
    (slot.container as Record<string | number, unknown>)[slot.key] = replacement;
  } else {
    const object = slot.container as Record<string, unknown>;
    const value = object[slot.key as string];
    delete object[slot.key as string];
    // An own property even when named __proto__, so that it reaches the JSON text.
    Object.defineProperty(object, replacement, { value, enumerable: true, configurable: true, writable: true });
  }
  return copy;
}
