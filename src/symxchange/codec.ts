/**
 * One generic codec between coregate's JSON shapes and SymXchange SOAP 1.1 envelopes (DESIGN, "The core
 * boundary and SymXchange"). It is driven by two descriptions only: each operation's TypeBox request and
 * response schemas (JSON names, types, nullability) and the SymXchange mapping (mapping.ts: element names
 * and their sequence order, attributes and their qualification, repeats, choices, namespaces). Nothing is
 * written per operation. Encoders and decoders are compiled once per operation and type, so a call walks
 * its value, not its schemas; an element path is built only when something fails.
 *
 * The few places where coregate's JSON and the wire differ by design are documented patterns applied
 * wherever the mapping shows them (docs/decisions.md, "SymXchange"):
 * - the request's `MessageId` attribute and `DeviceInformation` come from the caller, and `nxAttributes` is
 *   JSON only; request attributes the JSON does not carry (`BranchId`, `ProcessorUser`) are accepted and not
 *   passed on;
 * - a response's `MessageId` attribute echoes the request's, while the JSON's `MessageId` is the operation's
 *   name (spec);
 * - P2's `<Record>UpdatableFields` is the wire's `<Record>Fields`, and a top-level JSON property the
 *   request lacks that its `SearchFilter` holds travels there (the paged searches' `Query`);
 * - a value equal to its schema's `default` is an absent element, and an absent element its default
 *   (`FailedUpdateStatus`: null, [] or the empty failure, per family);
 * - findByLookup answers `Result` or `AccountNumber` (an `xsd:choice`); the JSON carries both;
 * - in a response, an element the XSD declares but the JSON does not carry, content of the `xsd:any` after
 *   `Version_1`, and an element or attribute the XSD does not declare (a newer core's) are skipped, the last
 *   noted (a core may answer more than coregate asks for); in a request each is refused;
 * - in a response, a list of records longer than the list maximum is cut to it, and says so in its
 *   `hasReachedMaximumListSize` where it has one (spec: lists stop at the maximum); a page longer than the page
 *   maximum is refused (cutting it would skip the records the next page does not repeat).
 * Any JSON property without an element is refused with SOAP_SCHEMA_VIOLATION, never dropped.
 */
import { Type, type TSchema } from 'typebox';
import {
  qualifiedName,
  symxchangeService,
  VERSION_ELEMENT,
  type SymxServiceName,
  type XsdAttribute,
  type XsdElement,
  type XsdGroup,
} from '../catalog/symxchange/index.js';
import { envelopeProperties } from '../contract/envelope.js';
import { jsonSchemas, type JsonSchema } from './json-schema.js';
import { readFault, SOAP_ENVELOPE_NS, SoapFaultError, statusError } from './faults.js';
import {
  createSymxMapping,
  type CodecOperation,
  type Family,
  type SymxMapping,
  type WireOperation,
} from './mapping.js';
import {
  DEFAULT_XML_LIMITS,
  SoapCodecError,
  clip,
  escapeAttribute,
  escapeText,
  isBlank,
  isPlainText,
  isXmlText,
  NO_ATTRIBUTES,
  parseXml,
  type XmlElement,
  type XmlLimits,
} from './xml.js';

export { SoapCodecError, DEFAULT_XML_LIMITS, type SoapCodecErrorCode, type XmlLimits } from './xml.js';
export type { CodecOperation, WireOperation } from './mapping.js';
export { SOAP_ENVELOPE_NS } from './faults.js';
export { SoapFaultError, type Fault } from './faults.js';

export const XSI_NS = 'http://www.w3.org/2001/XMLSchema-instance';
const SYMXCOMMON_NS = qualifiedName('symxcommon:x').namespace;
const VERSION_TYPE = 'symxcommon:Version_Type';
/** The JSON name of the `xsd:any` wildcard after `Version_1` (spec: `_value_1: null`). */
const WILDCARD_PROPERTY = '_value_1';

/** `DeviceInformation` of a request: two required attributes, filled by the gateway from its settings. */
export interface DeviceInformation {
  readonly DeviceType: string;
  readonly DeviceNumber: number;
}

export interface SymxCodecOptions {
  /** The operations the codec serves (logon/logoff have no SymXchange operation and are refused). */
  readonly operations: readonly CodecOperation[];
  /** Shared schemas the operations' `$ref`s name, by `$id`. */
  readonly schemas: readonly TSchema[];
  readonly limits?: Partial<XmlLimits>;
  /** How long a response's lists may be (gateway mode); unbounded without. */
  readonly answerLists?: AnswerLists;
}

/** The bounds of a response's lists of records (the XSD's unbounded elements). */
export interface AnswerLists {
  /** A list longer than this is cut to it (spec: lists stop at the maximum). */
  readonly listMaximum: number;
  /** A page (an answer with a `Token`) longer than this is refused. */
  readonly pageMaximum: number;
}

/** What decoding a response passed over: for the log, never for the caller. */
export interface AnswerNotes {
  /** Elements and attributes the XSD does not declare, skipped, as `Type/name` (at most 20). */
  readonly unknown: readonly string[];
  /** Lists cut to the list maximum where the answer has no `hasReachedMaximumListSize` to say so, as `Type/name`. */
  readonly cut: readonly string[];
}

/** A SOAP endpoint: a service on one of coregate's path families. */
export interface Endpoint {
  readonly service: SymxServiceName;
  readonly family: Family;
}

export interface DecodedRequest {
  readonly operation: CodecOperation;
  readonly wire: WireOperation;
  /** The JSON body, as the JSON API takes it. */
  readonly body: Record<string, unknown>;
  readonly messageId: string;
  readonly deviceInformation?: DeviceInformation;
}

export interface DecodedResponse {
  /** The JSON answer, as the JSON API gives it (its `MessageId` is the operation's name). */
  readonly result: Record<string, unknown>;
  /** The response's `MessageId` attribute: the request's, echoed. */
  readonly messageId: string | undefined;
  /** What was skipped or cut, when anything was. */
  readonly notes?: AnswerNotes;
}

export interface SymxCodec {
  readonly mapping: SymxMapping;
  encodeRequest(
    operation: CodecOperation,
    body: Readonly<Record<string, unknown>>,
    options: { readonly messageId: string; readonly deviceInformation?: DeviceInformation },
  ): string;
  /** A request sent to an endpoint: which of the endpoint's operations, and its JSON body. */
  decodeRequest(xml: string, endpoint: Endpoint): DecodedRequest;
  encodeResponse(operation: CodecOperation, result: Readonly<Record<string, unknown>>, messageId: string): string;
  /** A response envelope, as text or as the tree an `XmlStreamReader` read. */
  decodeResponse(operation: CodecOperation, xml: string | XmlElement): DecodedResponse;
}

type JsonObject = Record<string, unknown>;

const isObject = (value: unknown): value is JsonObject =>
  value !== null && typeof value === 'object' && !Array.isArray(value);

const INTEGER_TYPES = new Set(['xsd:int', 'xsd:short', 'xsd:long', 'xsd:integer', 'xsd:byte']);
const DECIMAL_TYPES = new Set(['xsd:decimal', 'xsd:double', 'xsd:float']);

/** Equal JSON values (a schema default against a value). */
function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((item, i) => sameJson(item, b[i]));
  if (isObject(a) && isObject(b)) {
    const keys = Object.keys(a);
    return keys.length === Object.keys(b).length && keys.every((key) => sameJson(a[key], b[key]));
  }
  return false;
}

/**
 * A number in plain decimal notation, as `xsd:decimal` and the integer types write it: never an exponent.
 * @example plainDecimal(1e21) // '1000000000000000000000'
 * @example plainDecimal(1.5e-7) // '0.00000015'
 */
export function plainDecimal(value: number): string {
  const text = String(value);
  if (!text.includes('e')) return text;
  if (Number.isInteger(value)) return BigInt(value).toString();
  const match = /^(-?)(\d+)(?:\.(\d+))?e([+-]\d+)$/.exec(text);
  if (!match) return text;
  const [, sign, whole, fraction = '', exponentText] = match;
  const digits = whole! + fraction;
  const point = whole!.length + Number(exponentText);
  const plain =
    point <= 0
      ? `0.${'0'.repeat(-point)}${digits}`
      : point >= digits.length
        ? digits + '0'.repeat(point - digits.length)
        : `${digits.slice(0, point)}.${digits.slice(point)}`;
  return `${sign}${plain.replace(/^0+(?=\d)/, '')}`;
}

/** A request's value as an error quotes it: in JSON's quotes, clipped. */
const quoted = (text: string) => JSON.stringify(clip(text));

/** A schema violation; `path` is the one element (or `@attribute`) at fault, clipped like every quoted name. */
function violation(message: string, path?: string): SoapCodecError {
  return new SoapCodecError('SOAP_SCHEMA_VIOLATION', message, path === undefined ? undefined : clip(path));
}

/** Runs `step`, naming `name` in the path of any codec error it throws. */
function within<T>(name: string, step: () => T): T {
  try {
    return step();
  } catch (error) {
    throw outOf(error, name);
  }
}

/** An error thrown below element `name`, with `name` added to its path (hot loops catch and call this). */
function outOf(error: unknown, name: string): unknown {
  return error instanceof SoapCodecError ? error.within(name) : error;
}

/** Elements of a type in document order with the choice group each belongs to (base type's first). */
interface Slot {
  readonly element: XsdElement;
  readonly choice?: XsdGroup;
}

interface TypeLayout {
  readonly slots: readonly Slot[];
  readonly attributes: readonly XsdAttribute[];
  readonly hasWildcard: boolean;
  readonly choices: readonly XsdGroup[];
}

type Scope = ReadonlyMap<string, string>;
const NO_SCOPE: Scope = new Map();

/** The local part of a prefixed name. */
const localName = (name: string) => name.slice(name.indexOf(':') + 1);

/** Encodes a value into an element's XML (the element included), or '' for nothing. */
type ElementEncoder = (value: unknown) => string;
/** Decodes all occurrences of one element into a JSON value. */
type OccurrencesDecoder = (occurrences: readonly XmlElement[], scope: Scope) => unknown;
/** Decodes an element's content (attributes and children) into a JSON value. */
type ContentDecoder = (element: XmlElement, scope: Scope) => unknown;

/** Adds the namespace declarations an element carries to its parent's scope. */
function withDeclarations(element: XmlElement, scope: Scope): Scope {
  if (!element.declarations) return scope;
  const next = new Map(scope);
  for (const [prefix, uri] of element.declarations) next.set(prefix, uri);
  return next;
}

/** The namespace URI of a prefixed name ('' for no namespace). */
function namespaceOf(name: string, scope: Scope, isAttribute: boolean): string {
  const colon = name.indexOf(':');
  if (colon === -1) return isAttribute ? '' : (scope.get('') ?? '');
  const uri = scope.get(name.slice(0, colon));
  if (uri === undefined) throw new SoapCodecError('XML_MALFORMED', `undeclared namespace prefix in ${clip(name)}`);
  return uri;
}

/** Namespace URI and local name of a prefixed name. */
function resolveName(name: string, scope: Scope, isAttribute: boolean): { uri: string; local: string } {
  return { uri: namespaceOf(name, scope, isAttribute), local: localName(name) };
}

function isNil(element: XmlElement, scope: Scope): boolean {
  if (element.attributes === NO_ATTRIBUTES) return false;
  for (const name in element.attributes) {
    if (!name.endsWith(':nil')) continue;
    const value = element.attributes[name];
    if (namespaceOf(name, scope, true) === XSI_NS && (value === 'true' || value === '1')) return true;
  }
  return false;
}

/** An entry of the SOAP Header, with the namespaces in scope at it. */
interface HeaderEntry {
  readonly entry: XmlElement;
  readonly scope: Scope;
}

/** SOAP 1.1's actor for "the first SOAP application that processes the message", this node (4.2.2). */
const NEXT_ACTOR = 'http://schemas.xmlsoap.org/soap/actor/next';
/** Mandatory header entries a MustUnderstand Fault names at most. */
const NAMED_HEADERS = 3;

/** The value of a SOAP envelope attribute (`soapenv:mustUnderstand`, `soapenv:actor`) on a header entry. */
function envelopeAttribute(entry: XmlElement, scope: Scope, local: string): string | undefined {
  if (entry.attributes === NO_ATTRIBUTES) return undefined;
  for (const name in entry.attributes)
    // Only the qualified attribute is SOAP's: an unqualified `mustUnderstand` is the entry's own.
    if (name.endsWith(`:${local}`) && namespaceOf(name, scope, true) === SOAP_ENVELOPE_NS)
      return entry.attributes[name]!.trim();
  return undefined;
}

/**
 * SOAP 1.1, 4.2.3: a header entry for this node (no actor, or the "next" actor) marked mustUnderstand="1"
 * that the receiver does not understand refuses the message with a MustUnderstand Fault. coregate
 * understands no header entry, so every mandatory one refuses the call (named, clipped); the others are
 * ignored. mustUnderstand is "1" or "0", nothing else (SOAP 1.1's schema).
 */
function refuseMandatoryHeaders(headers: readonly HeaderEntry[]): void {
  const mandatory: string[] = [];
  for (const { entry, scope } of headers) {
    const mustUnderstand = envelopeAttribute(entry, scope, 'mustUnderstand');
    if (mustUnderstand === undefined || mustUnderstand === '0') continue;
    if (mustUnderstand !== '1')
      throw violation(
        `mustUnderstand is "1" or "0" in SOAP 1.1, not ${quoted(mustUnderstand)} (header entry ${clip(entry.name)})`,
      );
    const actor = envelopeAttribute(entry, scope, 'actor');
    if (actor !== undefined && actor !== NEXT_ACTOR) continue;
    const uri = namespaceOf(entry.name, scope, false);
    mandatory.push(`${clip(entry.name)} (${uri ? `namespace ${clip(uri)}` : 'no namespace'})`);
  }
  if (mandatory.length === 0) return;
  const named = mandatory.slice(0, NAMED_HEADERS).join(', ');
  const more = mandatory.length > NAMED_HEADERS ? ` and ${mandatory.length - NAMED_HEADERS} more` : '';
  throw new SoapCodecError(
    'SOAP_MUST_UNDERSTAND',
    `the header ${mandatory.length === 1 ? 'entry' : 'entries'} ${named}${more} must be understood, and coregate understands no SOAP header`,
  );
}

/**
 * The codec for a set of operations and their shared schemas.
 * @example
 * const codec = createSymxCodec({ operations: OPERATIONS, schemas: SHARED_SCHEMAS });
 * codec.encodeRequest(findBySSN, { Credentials: { TokenCredentials: { TokenId: 't' } }, SSN: '123456789' }, { messageId: 'm1' });
 */
export function createSymxCodec(options: SymxCodecOptions): SymxCodec {
  const limits: XmlLimits = { ...DEFAULT_XML_LIMITS, ...options.limits };
  const mapping = createSymxMapping(options.operations, options.schemas);
  const json = jsonSchemas(options.schemas);
  const typeOf = (schema: JsonSchema) => schema.type as string | undefined;

  // ---- layouts ----

  const layouts = new Map<string, TypeLayout>();
  function layoutOf(typeName: string): TypeLayout {
    const known = layouts.get(typeName);
    if (known) return known;
    const type = mapping.complexType(typeName);
    const base = type.base ? layoutOf(type.base) : undefined;
    const slots: Slot[] = [...(base?.slots ?? [])];
    let hasWildcard = base?.hasWildcard ?? false;
    const collect = (group: XsdGroup) => {
      for (const particle of group.particles) {
        if (particle.kind === 'element')
          slots.push(group.kind === 'choice' ? { element: particle, choice: group } : { element: particle });
        else if (particle.kind === 'any') hasWildcard = true;
        else collect(particle);
      }
    };
    if (type.content) collect(type.content);
    const layout: TypeLayout = {
      slots,
      attributes: [...(base?.attributes ?? []), ...type.attributes],
      hasWildcard,
      choices: [...new Set(slots.flatMap((slot) => (slot.choice ? [slot.choice] : [])))],
    };
    layouts.set(typeName, layout);
    return layout;
  }

  // ---- scalars ----

  function lexical(value: unknown, xsdType: string): string {
    if (typeof value === 'boolean') {
      if (xsdType !== 'xsd:boolean') throw violation(`a boolean for ${xsdType}`);
      return value ? 'true' : 'false';
    }
    if (typeof value === 'number') {
      if (!Number.isFinite(value)) throw violation('a number that is not finite');
      if (INTEGER_TYPES.has(xsdType) && !Number.isInteger(value)) throw violation(`a fraction for ${xsdType}`);
      return plainDecimal(value);
    }
    if (typeof value === 'string') {
      if (!isXmlText(value)) throw violation('text XML cannot carry (control characters or lone surrogates)');
      if (xsdType === 'xsd:date' && !/^\d{4}-\d{2}-\d{2}$/.test(value)) throw violation('a date not YYYY-MM-DD');
      return value;
    }
    throw violation(`a ${value === null ? 'null' : typeof value} where ${xsdType} is expected`);
  }

  /** Parses an element's text as the JSON type its schema takes for `xsdType`. */
  function scalarParser(schema: JsonSchema, xsdType: string): (text: string) => unknown {
    const alts = json.alternatives(schema).filter((alt) => typeOf(alt) !== 'null');
    const wanted =
      xsdType === 'xsd:boolean'
        ? 'boolean'
        : INTEGER_TYPES.has(xsdType)
          ? 'integer'
          : DECIMAL_TYPES.has(xsdType)
            ? 'number'
            : 'string';
    const alt =
      alts.find((a) => typeOf(a) === wanted) ??
      alts.find((a) => wanted === 'integer' && typeOf(a) === 'number') ??
      alts.find((a) => ['string', 'integer', 'number', 'boolean'].includes(typeOf(a) ?? ''));
    if (!alt)
      return () => {
        throw violation('a value where the JSON schema has no scalar');
      };
    const nullable = json.allows(schema, 'null');
    const kind = typeOf(alt);
    return (text) => {
      if (text === '' && kind !== 'string' && nullable) return null;
      const trimmed = text.trim();
      switch (kind) {
        case 'boolean':
          if (trimmed === 'true' || trimmed === '1') return true;
          if (trimmed === 'false' || trimmed === '0') return false;
          throw violation(`${quoted(text)} is not an xsd:boolean`);
        case 'integer':
          if (!/^[+-]?\d{1,16}$/.test(trimmed)) throw violation(`${quoted(text)} is not an integer`);
          return Number(trimmed);
        case 'number':
          if (!/^[+-]?(\d+(\.\d*)?|\.\d+)$/.test(trimmed)) throw violation(`${quoted(text)} is not a decimal`);
          return Number(trimmed);
        default:
          // A date may carry a time zone (`2024-01-02Z`, `2024-01-02-05:00`); the JSON's dates have none.
          if (xsdType === 'xsd:date') return trimmed.replace(/(Z|[+-]\d{2}:\d{2})$/, '');
          return text;
      }
    };
  }

  // ---- encoders ----

  const prefixOf = (alias: string): string => (alias === 'symxcommon' ? 'cmn' : 'tns');

  const attributeName = (attribute: XsdAttribute): string =>
    attribute.qualified && attribute.namespace !== undefined
      ? `${prefixOf(attribute.namespace)}:${attribute.name}`
      : attribute.name;

  const elementEncoders = new Map<string, Map<JsonSchema, ElementEncoder>>();

  /** The encoder of an element declared by `element` holding values of `schema`. */
  function elementEncoder(element: XsdElement, schema: JsonSchema): ElementEncoder {
    const key = `${element.name}|${element.type}|${element.maxOccurs}`;
    let bySchema = elementEncoders.get(key);
    if (!bySchema) elementEncoders.set(key, (bySchema = new Map()));
    const known = bySchema.get(schema);
    if (known) return known;
    // Compiled on first use, so a recursive type refers to itself through the cache.
    let compiled: ElementEncoder | undefined;
    const encoder: ElementEncoder = (value) => (compiled ??= compileElementEncoder(element, schema))(value);
    bySchema.set(schema, encoder);
    return encoder;
  }

  function compileElementEncoder(element: XsdElement, schema: JsonSchema): ElementEncoder {
    const { name, type } = element;
    const complex = mapping.isComplexType(type);
    const repeats = element.maxOccurs !== 1;
    const maxOccurs = typeof element.maxOccurs === 'number' ? element.maxOccurs : Infinity;
    const nullable = json.allows(schema, 'null');
    const objectSchema = json.objectOf(schema);
    const itemSchema = json.alternatives(schema).find((alt) => typeOf(alt) === 'array')?.items ?? {};
    const content = complex && objectSchema ? contentEncoder(objectSchema, type) : undefined;
    const open = `<${name}>`;
    const close = `</${name}>`;

    const one = (value: unknown): string => {
      if (value === null) {
        if (type === VERSION_TYPE) return `<${name}/>`;
        if (!nullable) throw violation('null where the JSON schema has no null');
        // No value: xsi:nil where the XSD allows it, otherwise no element (as a core's JAXB writes it; a
        // reader takes the absent element back as null).
        if (element.nillable) return `<${name} xsi:nil="true"/>`;
        if (element.minOccurs === 0) return '';
        throw violation('null for an element the XSD requires and does not let be nil');
      }
      if (isObject(value)) {
        if (!content) throw violation(`an object where ${type} is expected`);
        return content(name, value);
      }
      if (complex) throw violation(`a ${typeof value} where ${type} is expected`);
      // Most text needs neither escaping nor a check (one scan says so); the rest takes the full path.
      if (typeof value === 'string' && type !== 'xsd:date' && isPlainText(value)) return open + value + close;
      return open + escapeText(lexical(value, type)) + close;
    };
    const item = itemSchema === schema ? one : elementEncoder({ ...element, maxOccurs: 1 }, itemSchema);

    return (value) => {
      if (Array.isArray(value)) {
        if (!repeats && value.length > 1) throw violation(`${value.length} entries where the XSD allows one`, name);
        if (value.length > maxOccurs)
          throw violation(`${value.length} entries where the XSD allows ${element.maxOccurs}`, name);
        let xml = '';
        for (let i = 0; i < value.length; i++) {
          try {
            xml += item(value[i]);
          } catch (error) {
            throw outOf(error, `${name}[${i}]`);
          }
        }
        return xml;
      }
      if (repeats && typeof value === 'boolean' && !complex) {
        // A selector of repeating entries (CorpTransferFields.Memo: entry ids to return): `true` selects
        // every entry id the XSD allows (1..maxOccurs), `false` sends nothing.
        if (maxOccurs === Infinity) throw violation('`true` for an unbounded entry selector', name);
        let xml = '';
        if (value) for (let id = 1; id <= maxOccurs; id++) xml += `<${name}>${id}</${name}>`;
        return xml;
      }
      try {
        return one(value);
      } catch (error) {
        throw outOf(error, name);
      }
    };
  }

  /** The encoder of an element of a complex type (its attributes and content) from a JSON object. */
  function contentEncoder(schema: JsonSchema, typeName: string): (name: string, object: JsonObject) => string {
    const layout = layoutOf(typeName);
    const properties = schema.properties ?? {};
    const required = new Set(schema.required ?? []);
    const attributes = layout.attributes.map((attribute) => ({
      attribute,
      written: attributeName(attribute),
    }));
    const slots = layout.slots.map(({ element, choice }) => {
      const propertySchema = properties[element.name];
      return {
        name: element.name,
        choice,
        encode: propertySchema ? elementEncoder(element, propertySchema) : undefined,
        // A required JSON null is an absent element (absent ↔ null on decoding); Version_1 is the empty marker.
        nullIsAbsent:
          propertySchema !== undefined &&
          required.has(element.name) &&
          element.type !== VERSION_TYPE &&
          !json.allows(propertySchema, 'array'),
        hasDefault: propertySchema !== undefined && 'default' in json.resolve(propertySchema),
        defaultValue: propertySchema ? json.resolve(propertySchema).default : undefined,
      };
    });
    const known = new Set([...layout.attributes.map((a) => a.name), ...layout.slots.map((s) => s.element.name)]);
    const choiceNames = layout.choices.map(
      (choice) => new Set(choice.particles.flatMap((p) => (p.kind === 'element' ? [p.name] : []))),
    );
    const credentials = typeName.endsWith('CredentialsChoice');

    /** Refuses a JSON property without an element or attribute (only looked for when the counts differ). */
    const checkProperties = (object: JsonObject) => {
      for (const key in object) {
        if (object[key] === undefined || known.has(key)) continue;
        if (key === WILDCARD_PROPERTY && object[key] === null && layout.hasWildcard) continue;
        throw violation(`JSON property ${key} has no element or attribute in ${typeName}`, key);
      }
    };

    return (name, object) => {
      // A choice carries one alternative. The spec shows credential objects as empty objects, which count as
      // absent; two given alternatives are refused (the caller picks which one the core should get).
      let skipped: Set<string> | undefined;
      for (const names of choiceNames) {
        const present = Object.keys(object).filter(
          (key) =>
            names.has(key) &&
            object[key] !== undefined &&
            object[key] !== null &&
            !(credentials && isObject(object[key]) && Object.keys(object[key] as JsonObject).length === 0),
        );
        if (present.length > 1) throw violation(`${present.join(' and ')} are alternatives of an xsd:choice: send one`);
        for (const key of names) if (!present.includes(key)) (skipped ??= new Set()).add(key);
      }
      let written = '';
      let used = 0;
      for (const { attribute, written: attributeWritten } of attributes) {
        const value = object[attribute.name];
        if (value === undefined) continue;
        used += 1;
        const text = within(`@${attribute.name}`, () => lexical(value, attribute.type));
        written += ` ${attributeWritten}="${escapeAttribute(text)}"`;
      }
      let body = '';
      for (const slot of slots) {
        const value = object[slot.name];
        if (value === undefined) continue;
        used += 1;
        if (skipped?.has(slot.name)) continue;
        if (!slot.encode) throw violation(`JSON property ${slot.name} has no schema`, slot.name);
        if (value === null && slot.nullIsAbsent) continue;
        if (slot.hasDefault && sameJson(value, slot.defaultValue)) continue;
        body += slot.encode(value);
      }
      // Every property with a value was an element or an attribute, unless the counts say otherwise.
      let properties = 0;
      for (const key in object) if (object[key] !== undefined) properties += 1;
      if (properties !== used) checkProperties(object);
      return body === '' ? `<${name}${written}/>` : `<${name}${written}>${body}</${name}>`;
    };
  }

  // ---- decoders ----

  const occurrenceDecoders = new Map<string, Map<JsonSchema, OccurrencesDecoder>>();

  function occurrencesDecoder(element: XsdElement, schema: JsonSchema, lax: boolean): OccurrencesDecoder {
    const key = `${element.name}|${element.type}|${element.maxOccurs}|${lax}`;
    let bySchema = occurrenceDecoders.get(key);
    if (!bySchema) occurrenceDecoders.set(key, (bySchema = new Map()));
    const known = bySchema.get(schema);
    if (known) return known;
    let compiled: OccurrencesDecoder | undefined;
    const decoder: OccurrencesDecoder = (occurrences, scope) =>
      (compiled ??= compileOccurrencesDecoder(element, schema, lax))(occurrences, scope);
    bySchema.set(schema, decoder);
    return decoder;
  }

  function compileOccurrencesDecoder(element: XsdElement, schema: JsonSchema, lax: boolean): OccurrencesDecoder {
    const arraySchema = json.alternatives(schema).find((alt) => typeOf(alt) === 'array');
    const single = json.alternatives(schema).some((alt) => !['array', 'null'].includes(typeOf(alt) ?? ''));
    const nullable = json.allows(schema, 'null');
    const one = valueDecoder(element.type, schema, lax);
    if (arraySchema && (element.maxOccurs !== 1 || !single)) {
      const item = valueDecoder(element.type, arraySchema.items ?? {}, lax);
      return (occurrences, scope) => {
        if (occurrences.length === 1 && nullable && isNil(occurrences[0]!, withDeclarations(occurrences[0]!, scope)))
          return null;
        const values: unknown[] = [];
        for (let i = 0; i < occurrences.length; i++) {
          try {
            values.push(item(occurrences[i]!, scope));
          } catch (error) {
            throw outOf(error, `${element.name}[${i}]`);
          }
        }
        return values;
      };
    }
    return (occurrences, scope) => {
      if (occurrences.length > 1)
        throw violation(`${occurrences.length} occurrences where one is expected`, element.name);
      try {
        return one(occurrences[0]!, scope);
      } catch (error) {
        throw outOf(error, element.name);
      }
    };
  }

  function valueDecoder(typeName: string, schema: JsonSchema, lax: boolean): ContentDecoder {
    const nullable = json.allows(schema, 'null');
    if (typeName === VERSION_TYPE) {
      return () => {
        if (!nullable) throw violation('Version_1 where the JSON schema expects a value');
        return null;
      };
    }
    if (mapping.isComplexType(typeName)) {
      const objectSchema = json.objectOf(schema);
      if (!objectSchema)
        return () => {
          throw violation(`${typeName} where the JSON schema has no object`);
        };
      let content: ContentDecoder | undefined;
      return (element, scope) => {
        const inner = withDeclarations(element, scope);
        if (isNil(element, inner)) {
          if (!nullable) throw violation('xsi:nil where the JSON schema has no null');
          return null;
        }
        return (content ??= contentDecoder(objectSchema, typeName, lax))(element, inner);
      };
    }
    const parse = scalarParser(schema, typeName);
    return (element, scope) => {
      if (isNil(element, withDeclarations(element, scope))) {
        if (!nullable) throw violation('xsi:nil where the JSON schema has no null');
        return null;
      }
      if (element.children.length > 0) throw violation(`elements inside the simple ${typeName}`);
      return parse(element.text);
    };
  }

  const lists = options.answerLists;
  /** The notes of the response being decoded (decoding is synchronous: one at a time). */
  let notes: { unknown: string[]; cut: string[] } | undefined;
  const NOTED_UNKNOWN = 20;

  function noteUnknown(typeName: string, name: string): void {
    if (notes && notes.unknown.length < NOTED_UNKNOWN) notes.unknown.push(`${typeName}/${clip(name)}`);
  }

  /**
   * A response's list of records held to `answerLists`: cut to the list maximum (setting the object's
   * `hasReachedMaximumListSize` where it has one, noted otherwise), or refused when it is a page.
   */
  function boundList(
    result: JsonObject,
    name: string,
    occurrences: XmlElement[],
    listFlag: boolean,
    page: boolean,
    typeName: string,
  ): void {
    if (page) {
      if (occurrences.length > lists!.pageMaximum)
        throw violation(`a page of more than ${lists!.pageMaximum} records, more than coregate asks for`, name);
      return;
    }
    if (occurrences.length <= lists!.listMaximum) return;
    occurrences.length = lists!.listMaximum;
    if (listFlag) result.hasReachedMaximumListSize = true;
    else notes?.cut.push(`${typeName}/${name}`);
  }

  function contentDecoder(schema: JsonSchema, typeName: string, lax: boolean): ContentDecoder {
    const layout = layoutOf(typeName);
    const properties = schema.properties ?? {};
    /**
     * Each slot by name: its position among the slots, and how its occurrences decode. A slot that occurs
     * once (most) decodes as it is met; a repeated one collects its occurrences first.
     */
    interface SlotDecoder {
      readonly index: number;
      readonly name: string;
      readonly once: boolean;
      readonly decode?: OccurrencesDecoder;
      readonly choice?: XsdGroup;
      /** A list of records (the XSD's unbounded element), bounded in a response by `answerLists`. */
      readonly list: boolean;
    }
    const slots = new Map<string, SlotDecoder>(
      layout.slots.map(({ element, choice }, index) => {
        const propertySchema = properties[element.name];
        const decode = propertySchema ? occurrencesDecoder(element, propertySchema, lax) : undefined;
        const once = element.maxOccurs === 1;
        return [
          element.name,
          { index, name: element.name, once, decode, choice, list: element.maxOccurs === 'unbounded' },
        ];
      }),
    );
    // A response's object with a list: whether it can say the list was cut, or is a page that must not be.
    const listFlag = lax && 'hasReachedMaximumListSize' in properties;
    const page = lax && 'Token' in properties;
    const versionIndex = slots.get(VERSION_ELEMENT)?.index;
    const attributeParsers = layout.attributes.map((attribute) => {
      const propertySchema = properties[attribute.name];
      const uri =
        attribute.qualified && attribute.namespace !== undefined
          ? qualifiedName(`${attribute.namespace}:x`).namespace
          : '';
      return { attribute, uri, parse: propertySchema ? scalarParser(propertySchema, attribute.type) : undefined };
    });
    const missing = (schema.required ?? []).map((name) => {
      const propertySchema = json.resolve(properties[name]!);
      return {
        name,
        hasDefault: 'default' in propertySchema,
        defaultValue: propertySchema.default,
        array: json.allows(properties[name]!, 'array'),
        nullable: json.allows(properties[name]!, 'null'),
      };
    });
    const single: XmlElement[] = [];

    return (element, scope) => {
      const result: JsonObject = {};
      if (element.attributes !== NO_ATTRIBUTES)
        for (const name in element.attributes) {
          const uri = namespaceOf(name, scope, true);
          if (uri === XSI_NS) continue;
          const local = localName(name);
          // An attribute the XSD qualifies (findby's cmn:MessageId) is also taken unqualified, as SOAP
          // toolkits write attributes given by name.
          const declared =
            attributeParsers.find((a) => a.attribute.name === local && a.uri === uri) ??
            (uri === '' ? attributeParsers.find((a) => a.attribute.name === local) : undefined);
          if (!declared) {
            if (lax) {
              noteUnknown(typeName, `@${name}`);
              continue;
            }
            throw violation(`attribute ${clip(name)} is not in ${typeName}`, `@${name}`);
          }
          // An attribute the JSON does not carry (BranchId, ProcessorUser) is accepted and not passed on.
          if (declared.parse)
            try {
              result[local] = declared.parse(element.attributes[name]!);
            } catch (error) {
              throw outOf(error, `@${name}`);
            }
        }
      if (!isBlank(element.text)) throw violation('character data in element-only content');
      // Elements are read in any order, as a non-validating (JAXB) core reads them: SOAP toolkits write a
      // request's elements in the order the caller gave them. coregate writes the XSD's order.
      let repeated: Map<SlotDecoder, XmlElement[]> | undefined;
      let chosen: Map<XsdGroup, string> | undefined;
      let pastVersion = false;
      for (const child of element.children) {
        const name = child.name;
        const colon = name.indexOf(':');
        const slot = colon === -1 && !scope.get('') && !child.declarations?.get('') ? slots.get(name) : undefined;
        if (slot === undefined) {
          const { uri, local } = resolveName(name, withDeclarations(child, scope), false);
          // What follows Version_1 is the xsd:any wildcard's: extensions of a newer core, skipped.
          if (pastVersion && layout.hasWildcard) continue;
          // A newer core may add elements the XSD coregate knows does not declare: skipped, and noted.
          if (lax) {
            noteUnknown(typeName, name);
            continue;
          }
          if (uri !== '')
            throw violation('a namespace-qualified element where SymXchange elements are unqualified', name);
          throw violation(`element ${clip(local)} is not in ${typeName}`, name);
        }
        if (slot.index === versionIndex) pastVersion = true;
        // A choice carries one alternative on the wire too (two credential kinds are refused, not merged).
        if (slot.choice) {
          const other = (chosen ??= new Map()).get(slot.choice);
          if (other !== undefined && other !== slot.name)
            throw violation(`${other} and ${slot.name} are alternatives of an xsd:choice`);
          chosen.set(slot.choice, slot.name);
        }
        if (!slot.decode) {
          if (slot.name !== VERSION_ELEMENT && !lax) throw violation(`element ${slot.name} has no JSON property`, name);
          continue;
        }
        if (slot.once) {
          if (result[slot.name] !== undefined) throw violation('2 occurrences where one is expected', slot.name);
          single[0] = child;
          result[slot.name] = slot.decode(single, scope);
        } else {
          const occurrences = (repeated ??= new Map()).get(slot);
          if (occurrences) occurrences.push(child);
          else {
            repeated.set(slot, [child]);
            // Its place among the properties is where it first occurs (the request's order, as sent).
            result[slot.name] = undefined;
          }
        }
      }
      if (repeated)
        for (const [slot, occurrences] of repeated) {
          if (slot.list && lists && lax) boundList(result, slot.name, occurrences, listFlag, page, typeName);
          result[slot.name] = slot.decode!(occurrences, scope);
        }
      for (const property of missing) {
        if (result[property.name] !== undefined) continue;
        if (property.hasDefault) result[property.name] = property.defaultValue;
        else if (property.array) result[property.name] = [];
        else if (property.nullable) result[property.name] = null;
        else throw violation(`required element ${property.name} is missing`, property.name);
      }
      return result;
    };
  }

  // ---- the envelope ----

  /**
   * The Envelope's declarations: SOAP's, the service's and symxcommon's, and XML Schema instance only when
   * the content uses it (an `xsi:nil`; text that names it only adds the declaration).
   */
  const namespaces = (wire: WireOperation, childXml: string) =>
    `xmlns:soapenv="${SOAP_ENVELOPE_NS}" xmlns:tns="${symxchangeService(wire.service).targetNamespace}" ` +
    `xmlns:cmn="${SYMXCOMMON_NS}"${childXml.includes('xsi:') ? ` xmlns:xsi="${XSI_NS}"` : ''}`;

  const envelope = (wire: WireOperation, bodyElement: string, childXml: string) =>
    `<soapenv:Envelope ${namespaces(wire, childXml)}><soapenv:Header/><soapenv:Body>` +
    `<tns:${bodyElement}>${childXml}</tns:${bodyElement}></soapenv:Body></soapenv:Envelope>`;

  /** The single element of the Body, with its scope, after checking the envelope; the Header's entries too. */
  function bodyElementOf(xml: string | XmlElement): {
    element: XmlElement;
    scope: Scope;
    uri: string;
    local: string;
    headers: readonly HeaderEntry[];
  } {
    const root = typeof xml === 'string' ? parseXml(xml, limits) : xml;
    const rootScope = withDeclarations(root, NO_SCOPE);
    if (namespaceOf(root.name, rootScope, false) !== SOAP_ENVELOPE_NS || localName(root.name) !== 'Envelope')
      throw new SoapCodecError('SOAP_NOT_AN_ENVELOPE', 'the root is not a SOAP 1.1 Envelope');
    let body: { readonly child: XmlElement; readonly scope: Scope } | undefined;
    const headers: HeaderEntry[] = [];
    for (const child of root.children) {
      const childScope = withDeclarations(child, rootScope);
      const local = localName(child.name);
      if (namespaceOf(child.name, childScope, false) !== SOAP_ENVELOPE_NS || (local !== 'Header' && local !== 'Body'))
        throw new SoapCodecError('SOAP_NOT_AN_ENVELOPE', 'an Envelope holds an optional Header and one Body');
      if (local === 'Body') body ??= { child, scope: childScope };
      else for (const entry of child.children) headers.push({ entry, scope: withDeclarations(entry, childScope) });
    }
    if (!body) throw new SoapCodecError('SOAP_NOT_AN_ENVELOPE', 'an Envelope holds an optional Header and one Body');
    if (body.child.children.length !== 1)
      throw new SoapCodecError('SOAP_NOT_AN_ENVELOPE', 'the Body holds one element');
    const element = body.child.children[0]!;
    const scope = withDeclarations(element, body.scope);
    const name = resolveName(element.name, scope, false);
    return { element, scope, ...name, headers };
  }

  /** The wrapper's single child (`Request`, `SingleResponse`, …), unqualified. */
  function wrapperChild(element: XmlElement, scope: Scope, expected: string): { child: XmlElement; scope: Scope } {
    if (!isBlank(element.text)) throw violation('character data in element-only content');
    if (element.children.length !== 1) throw violation(`the body element holds one ${expected}`);
    const child = element.children[0]!;
    const childScope = withDeclarations(child, scope);
    const name = resolveName(child.name, childScope, false);
    if (name.uri !== '' || name.local !== expected) throw violation(`expected an unqualified ${expected}`, child.name);
    return { child, scope: childScope };
  }

  // ---- requests and responses as the wire shapes them ----

  interface RequestShape {
    readonly wire: WireOperation;
    readonly encode: ElementEncoder;
    readonly decode: ContentDecoder;
    toWire(body: Readonly<JsonObject>, messageId: string, device?: DeviceInformation): JsonObject;
    fromWire(decoded: JsonObject): { body: JsonObject; messageId: string; deviceInformation?: DeviceInformation };
  }

  const requestShapes = new Map<CodecOperation, RequestShape>();

  function requestShapeOf(operation: CodecOperation): RequestShape {
    const known = requestShapes.get(operation);
    if (known) return known;
    const wire = mapping.wireOperation(operation);
    const layout = layoutOf(wire.request.child.type);
    const elementNames = new Set(layout.slots.map((slot) => slot.element.name));
    const jsonProperties: Record<string, TSchema> = { ...envelopeProperties, ...operation.request };
    delete jsonProperties.nxAttributes;
    const wireProperties: Record<string, TSchema> = {};
    const renames = new Map<string, string>(); // JSON name → wire name
    const intoSearchFilter: string[] = [];
    const filterType = layout.slots.find((slot) => slot.element.name === 'SearchFilter')?.element.type;
    const filterHolds = (name: string) =>
      filterType !== undefined && layoutOf(filterType).slots.some((slot) => slot.element.name === name);
    for (const [name, schema] of Object.entries(jsonProperties)) {
      const fieldsName = name.replace(/UpdatableFields$/, 'Fields');
      if (!elementNames.has(name) && fieldsName !== name && elementNames.has(fieldsName)) {
        renames.set(name, fieldsName);
        wireProperties[fieldsName] = schema;
      } else if (!elementNames.has(name) && !('SearchFilter' in jsonProperties) && filterHolds(name)) {
        intoSearchFilter.push(name);
      } else wireProperties[name] = schema;
    }
    if (intoSearchFilter.length > 0)
      wireProperties.SearchFilter = Type.Optional(
        Type.Object(Object.fromEntries(intoSearchFilter.map((name) => [name, Type.Optional(jsonProperties[name]!)]))),
      );
    wireProperties.MessageId = Type.String();
    wireProperties.DeviceInformation = Type.Optional(
      Type.Object({ DeviceType: Type.String(), DeviceNumber: Type.Integer() }),
    );
    const schema = Type.Object(wireProperties) as unknown as JsonSchema;
    const fromWireName = new Map([...renames].map(([jsonName, wireName]) => [wireName, jsonName]));
    const shape: RequestShape = {
      wire,
      encode: elementEncoder({ ...wire.request.child, kind: 'element', nillable: false }, schema),
      decode: valueDecoder(wire.request.child.type, schema, false),
      toWire(body, messageId, device) {
        const out: JsonObject = { MessageId: messageId };
        for (const key in body) {
          const value = body[key];
          if (key === 'nxAttributes' || value === undefined) continue;
          if (intoSearchFilter.includes(key)) out.SearchFilter = { ...(out.SearchFilter as JsonObject), [key]: value };
          else out[renames.get(key) ?? key] = value;
        }
        if (device) out.DeviceInformation = { ...device };
        return out;
      },
      fromWire(decoded) {
        const { MessageId, DeviceInformation, SearchFilter } = decoded;
        const body: JsonObject = {};
        for (const key in decoded)
          if (key !== 'MessageId' && key !== 'DeviceInformation' && key !== 'SearchFilter')
            body[fromWireName.get(key) ?? key] = decoded[key];
        if (intoSearchFilter.length > 0) Object.assign(body, SearchFilter as JsonObject | undefined);
        else if (SearchFilter !== undefined) body.SearchFilter = SearchFilter;
        return {
          body,
          messageId: MessageId as string,
          ...(DeviceInformation === undefined ? {} : { deviceInformation: DeviceInformation as DeviceInformation }),
        };
      },
    };
    requestShapes.set(operation, shape);
    return shape;
  }

  interface ResponseShape {
    readonly wire: WireOperation;
    readonly encode: ElementEncoder;
    readonly decode: ContentDecoder;
    toWire(result: Readonly<JsonObject>, messageId: string): JsonObject;
    fromWire(decoded: JsonObject): DecodedResponse;
  }

  const responseShapes = new Map<CodecOperation, ResponseShape>();

  /**
   * findByLookup's `Result` or `AccountNumber` (docs/decisions.md): a found lookup is sent as its Result (the
   * JSON's AccountNumber repeats Result's), and a core's bare AccountNumber becomes a Result naming only the
   * account (IdType NONE), as coregate answers for a lookup without a share.
   */
  function lookupChoice(layout: TypeLayout) {
    const choice = layout.choices.find((group) => {
      const names = group.particles.map((p) => (p.kind === 'element' ? p.name : ''));
      return names.includes('Result') && names.includes('AccountNumber');
    });
    if (!choice) return undefined;
    return {
      toWire: (result: JsonObject): JsonObject =>
        isObject(result.Result) ? { ...result, AccountNumber: undefined } : { ...result, Result: undefined },
      fromWire: (result: JsonObject): JsonObject => {
        if (isObject(result.Result)) return { ...result, AccountNumber: result.Result.AccountNumber ?? null };
        if (typeof result.AccountNumber === 'string')
          return { ...result, Result: { AccountNumber: result.AccountNumber, IdType: 'NONE', Id: null } };
        return { ...result, Result: null, AccountNumber: null };
      },
    };
  }

  function responseShapeOf(operation: CodecOperation): ResponseShape {
    const known = responseShapes.get(operation);
    if (known) return known;
    const wire = mapping.wireOperation(operation);
    const layout = layoutOf(wire.response.child.type);
    const jsonSchema = json.resolve(operation.response as JsonSchema);
    const jsonHasMessageId = jsonSchema.properties?.MessageId !== undefined;
    const wireHasMessageId = layout.attributes.some((a) => a.name === 'MessageId');
    const schema: JsonSchema = {
      ...jsonSchema,
      properties: { ...jsonSchema.properties, MessageId: { type: 'string' } },
      required: (jsonSchema.required ?? []).filter((name) => name !== 'MessageId'),
    };
    const choice = lookupChoice(layout);
    const shape: ResponseShape = {
      wire,
      encode: elementEncoder({ ...wire.response.child, kind: 'element', nillable: false }, schema),
      decode: valueDecoder(wire.response.child.type, schema, true),
      toWire(result, messageId) {
        const out = choice ? choice.toWire({ ...result }) : { ...result };
        out.MessageId = wireHasMessageId ? messageId : undefined;
        return out;
      },
      fromWire(decoded) {
        const { MessageId, ...rest } = decoded;
        const result = choice ? choice.fromWire(rest) : rest;
        if (jsonHasMessageId) result.MessageId = operation.name;
        return { result, messageId: MessageId as string | undefined };
      },
    };
    responseShapes.set(operation, shape);
    return shape;
  }

  const endpointOperations = new Map<string, Map<string, CodecOperation>>();
  function endpointOperation(endpoint: Endpoint, local: string): CodecOperation | undefined {
    const key = `${endpoint.service}|${endpoint.family}`;
    let byName = endpointOperations.get(key);
    if (!byName) {
      byName = new Map(
        mapping
          .endpoint(endpoint.service, endpoint.family)
          .map(({ operation, wire }) => [
            wire.request.element.slice(wire.request.element.lastIndexOf(':') + 1),
            operation,
          ]),
      );
      endpointOperations.set(key, byName);
    }
    return byName.get(local);
  }

  return {
    mapping,

    encodeRequest(operation, body, { messageId, deviceInformation }) {
      const shape = requestShapeOf(operation);
      const xml = within(operation.name, () => shape.encode(shape.toWire(body, messageId, deviceInformation)));
      return envelope(shape.wire, operation.name, xml);
    },

    decodeRequest(xml, endpoint) {
      const { element, scope, uri, local, headers } = bodyElementOf(xml);
      // SOAP 1.1 processes the headers before the body: a mandatory one refuses the call, whatever it asks.
      refuseMandatoryHeaders(headers);
      const operation =
        uri === symxchangeService(endpoint.service).targetNamespace ? endpointOperation(endpoint, local) : undefined;
      if (!operation)
        throw new SoapCodecError(
          'SOAP_UNKNOWN_OPERATION',
          `this endpoint serves no operation ${clip(local)} in namespace ${uri ? clip(uri) : '(none)'}`,
        );
      const shape = requestShapeOf(operation);
      const decoded = within(local, () => {
        const { child, scope: childScope } = wrapperChild(element, scope, shape.wire.request.child.name);
        return within(child.name, () => shape.decode(child, childScope)) as JsonObject;
      });
      return { operation, wire: shape.wire, ...shape.fromWire(decoded) };
    },

    encodeResponse(operation, result, messageId) {
      const shape = responseShapeOf(operation);
      if (!isObject(result)) throw violation('a response is a JSON object', `${operation.name}Response`);
      const xml = within(`${operation.name}Response`, () => shape.encode(shape.toWire(result, messageId)));
      return envelope(shape.wire, `${operation.name}Response`, xml);
    },

    decodeResponse(operation, xml) {
      const shape = responseShapeOf(operation);
      const { element, scope, uri, local } = bodyElementOf(xml);
      let found: AnswerNotes | undefined;
      if (uri === SOAP_ENVELOPE_NS && local === 'Fault') throw new SoapFaultError(readFault(element));
      const expected = `${operation.name}Response`;
      if (uri !== symxchangeService(shape.wire.service).targetNamespace || local !== expected)
        throw new SoapCodecError('SOAP_UNKNOWN_OPERATION', `expected ${expected}, got ${local}`);
      const decoded = within(local, () => {
        const { child, scope: childScope } = wrapperChild(element, scope, shape.wire.response.child.name);
        const error = statusError(child);
        if (error) throw new SoapFaultError(error);
        notes = { unknown: [], cut: [] };
        try {
          return within(child.name, () => shape.decode(child, childScope)) as JsonObject;
        } finally {
          const noted = notes;
          notes = undefined;
          if (noted.unknown.length > 0 || noted.cut.length > 0) found = noted;
        }
      });
      return { ...shape.fromWire(decoded), ...(found ? { notes: found } : {}) };
    },
  };
}
