/**
 * One generic codec between coregate's JSON shapes and SymXchange SOAP 1.1 envelopes (DESIGN, "The core
 * boundary and SymXchange"). It is driven by two descriptions only: the operation's TypeBox request and
 * response schemas (JSON names, types, nullability) and the SymXchange facts (element names and their
 * sequence order, attributes and their qualification, repeats, choices, namespaces). Nothing is written per
 * operation; where the JSON shape has no XSD counterpart the documented patterns of docs/symxchange.md are
 * applied generically (see `requestBridges`), and any JSON property still without an element is refused
 * with SOAP_SCHEMA_VIOLATION rather than dropped.
 */
import { Type, type TSchema } from 'typebox';
import {
  VERSION_ELEMENT,
  complexType,
  isComplexType,
  qualifiedName,
  symxchangeOperation,
  symxchangeOperations,
  symxchangeService,
  type SymxOperation,
  type SymxServiceName,
  type XsdAttribute,
  type XsdElement,
  type XsdGroup,
} from '../catalog/symxchange/index.js';
import { envelopeProperties } from '../contract/envelope.js';
import {
  DEFAULT_XML_LIMITS,
  SoapCodecError,
  escapeAttribute,
  escapeText,
  isXmlText,
  parseXml,
  type XmlElement,
  type XmlLimits,
} from './xml.js';

export { SoapCodecError, DEFAULT_XML_LIMITS, type SoapCodecErrorCode, type XmlLimits } from './xml.js';

export const SOAP_ENVELOPE_NS = 'http://schemas.xmlsoap.org/soap/envelope/';
const XSI_NS = 'http://www.w3.org/2001/XMLSchema-instance';
const VERSION_TYPE = 'symxcommon:Version_Type';
/** The JSON name of the `xsd:any` wildcard after `Version_1` (spec: `_value_1: null`). */
const WILDCARD_PROPERTY = '_value_1';

/** What the codec needs of an operation (src/operations' `Operation` has these). */
export interface CodecOperation {
  readonly name: string;
  readonly service: string;
  readonly family: 'P1' | 'P2';
  readonly request: Readonly<Record<string, TSchema>>;
  readonly response: TSchema;
}

/** `DeviceInformation` of a request: two required attributes, filled by the gateway (docs/symxchange.md). */
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
}

export interface DecodedRequest {
  readonly service: SymxServiceName;
  readonly operationName: string;
  readonly operation: CodecOperation;
  readonly body: Record<string, unknown>;
  readonly messageId: string;
  readonly deviceInformation?: DeviceInformation;
}

export interface SymxCodec {
  encodeRequest(
    operation: CodecOperation,
    body: Readonly<Record<string, unknown>>,
    options: { readonly messageId: string; readonly deviceInformation?: DeviceInformation },
  ): string;
  /** `family` picks between a P1 and a P2 operation of the same name (one SOAP operation serves both); P1 by default. */
  decodeRequest(xml: string, options?: { readonly family?: 'P1' | 'P2' }): DecodedRequest;
  encodeResponse(operation: CodecOperation, result: unknown, messageId: string): string;
  decodeResponse(operation: CodecOperation, xml: string): unknown;
}

// ---- JSON schemas, as TypeBox emits them ----

interface JsonSchema {
  readonly $id?: string;
  readonly $ref?: string;
  readonly type?: string | readonly string[];
  readonly properties?: Readonly<Record<string, JsonSchema>>;
  readonly required?: readonly string[];
  readonly items?: JsonSchema;
  readonly anyOf?: readonly JsonSchema[];
  readonly format?: string;
}

type JsonObject = Record<string, unknown>;

const isObject = (value: unknown): value is JsonObject =>
  value !== null && typeof value === 'object' && !Array.isArray(value);

/** Elements of a type in document order with the choice group each belongs to (base type's first). */
interface Slot {
  readonly element: XsdElement;
  readonly choice?: XsdGroup;
}

function collectSlots(group: XsdGroup, into: Slot[], wildcard: { value: boolean }): void {
  for (const particle of group.particles) {
    if (particle.kind === 'element')
      into.push(group.kind === 'choice' ? { element: particle, choice: group } : { element: particle });
    else if (particle.kind === 'any') wildcard.value = true;
    else collectSlots(particle, into, wildcard);
  }
}

interface TypeLayout {
  readonly slots: readonly Slot[];
  readonly attributes: readonly XsdAttribute[];
  readonly hasWildcard: boolean;
}

const layouts = new Map<string, TypeLayout>();

/** A complex type's elements (flattened, in sequence order), attributes and wildcard, base type first. */
function layoutOf(typeName: string): TypeLayout {
  const known = layouts.get(typeName);
  if (known) return known;
  const type = complexType(typeName);
  const base = type.base ? layoutOf(type.base) : undefined;
  const slots: Slot[] = [...(base?.slots ?? [])];
  const wildcard = { value: base?.hasWildcard ?? false };
  if (type.content) collectSlots(type.content, slots, wildcard);
  const layout = { slots, attributes: [...(base?.attributes ?? []), ...type.attributes], hasWildcard: wildcard.value };
  layouts.set(typeName, layout);
  return layout;
}

const INTEGER_TYPES = new Set(['xsd:int', 'xsd:short', 'xsd:long', 'xsd:integer', 'xsd:byte']);
const DECIMAL_TYPES = new Set(['xsd:decimal', 'xsd:double', 'xsd:float']);

/** Prefixes written on encode; decoding resolves whatever prefixes the sender chose. */
function prefixOf(alias: string, serviceAlias: string): string {
  if (alias === serviceAlias) return 'tns';
  if (alias === 'symxcommon') return 'cmn';
  return alias.replace(/[^A-Za-z0-9]/g, '');
}

/**
 * The codec for a set of operations and their shared schemas.
 * @example
 * const codec = createSymxCodec({ operations: OPERATIONS, schemas: SHARED_SCHEMAS });
 * codec.encodeRequest(findBySSN, { Credentials: { TokenCredentials: { TokenId: 't' } }, SSN: '123456789' }, { messageId: 'm1' });
 */
export function createSymxCodec(options: SymxCodecOptions): SymxCodec {
  const limits: XmlLimits = { ...DEFAULT_XML_LIMITS, ...options.limits };
  const shared = new Map<string, JsonSchema>();
  for (const schema of options.schemas) {
    const id = (schema as JsonSchema).$id;
    if (id !== undefined) shared.set(id, schema as JsonSchema);
  }

  function resolve(schema: JsonSchema): JsonSchema {
    if (schema.$ref === undefined) return schema;
    const target = shared.get(schema.$ref);
    if (!target) throw new Error(`no shared schema ${schema.$ref}`);
    return resolve(target);
  }

  /** A schema as single-type alternatives (`anyOf` and `type: [...]` spread out, `$ref`s resolved). */
  function alternatives(schema: JsonSchema): JsonSchema[] {
    const resolved = resolve(schema);
    if (resolved.anyOf) return resolved.anyOf.flatMap(alternatives);
    if (Array.isArray(resolved.type)) return (resolved.type as string[]).map((type) => ({ ...resolved, type }));
    return [resolved];
  }

  const typeOf = (schema: JsonSchema) => schema.type as string | undefined;
  const allows = (schema: JsonSchema, type: string) => alternatives(schema).some((alt) => typeOf(alt) === type);

  // ---- encoding ----

  interface EncodeContext {
    readonly serviceAlias: string;
    readonly aliases: Set<string>;
  }

  function lexical(value: unknown, xsdType: string, path: string): string {
    if (typeof value === 'boolean') {
      if (xsdType !== 'xsd:boolean') throw violation(`a boolean for ${xsdType}`, path);
      return String(value);
    }
    if (typeof value === 'number') {
      if (!Number.isFinite(value)) throw violation('a number that is not finite', path);
      if (INTEGER_TYPES.has(xsdType) && !Number.isInteger(value)) throw violation(`a fraction for ${xsdType}`, path);
      const text = Number.isInteger(value) ? BigInt(value).toString() : String(value);
      if (/e/i.test(text)) throw violation(`${text} has no ${xsdType} form`, path);
      return text;
    }
    if (typeof value === 'string') {
      if (!isXmlText(value)) throw violation('text XML cannot carry (control characters or lone surrogates)', path);
      if (xsdType === 'xsd:date' && !/^\d{4}-\d{2}-\d{2}$/.test(value)) throw violation('a date not YYYY-MM-DD', path);
      return value;
    }
    throw violation(`a ${value === null ? 'null' : typeof value} where ${xsdType} is expected`, path);
  }

  function attributeName(attribute: XsdAttribute, context: EncodeContext): string {
    if (!attribute.qualified || attribute.namespace === undefined) return attribute.name;
    context.aliases.add(attribute.namespace);
    return `${prefixOf(attribute.namespace, context.serviceAlias)}:${attribute.name}`;
  }

  /** One element holding `value` (never an array here). */
  function encodeOne(
    name: string,
    value: unknown,
    schema: JsonSchema,
    typeName: string,
    path: string,
    context: EncodeContext,
  ): string {
    if (value === null) {
      if (typeName === VERSION_TYPE) return `<${name}/>`;
      if (!allows(schema, 'null')) throw violation('null where the JSON schema has no null', path);
      context.aliases.add('xsi');
      return `<${name} xsi:nil="true"/>`;
    }
    if (isObject(value)) {
      if (!isComplexType(typeName)) throw violation(`an object where ${typeName} is expected`, path);
      const objectSchema = alternatives(schema).find((alt) => typeOf(alt) === 'object');
      if (!objectSchema) throw violation('an object where the JSON schema has none', path);
      const { attributes, content } = encodeComplex(value, objectSchema, typeName, path, context);
      return content === '' ? `<${name}${attributes}/>` : `<${name}${attributes}>${content}</${name}>`;
    }
    if (isComplexType(typeName)) throw violation(`a ${typeof value} where ${typeName} is expected`, path);
    return `<${name}>${escapeText(lexical(value, typeName, path))}</${name}>`;
  }

  function encodeElement(
    element: XsdElement,
    value: unknown,
    schema: JsonSchema,
    path: string,
    context: EncodeContext,
  ): string {
    const repeats = element.maxOccurs !== 1;
    if (Array.isArray(value)) {
      const itemSchema = alternatives(schema).find((alt) => typeOf(alt) === 'array')?.items ?? {};
      if (!repeats && value.length > 1)
        throw violation(`${value.length} entries where the XSD allows one (maxOccurs 1)`, path);
      if (typeof element.maxOccurs === 'number' && value.length > element.maxOccurs)
        throw violation(`${value.length} entries where the XSD allows ${element.maxOccurs}`, path);
      return value
        .map((item, index) => encodeOne(element.name, item, itemSchema, element.type, `${path}[${index}]`, context))
        .join('');
    }
    if (repeats && typeof value === 'boolean' && !isComplexType(element.type)) {
      // A selector of repeating entries (CorpTransferFields.Memo: entry ids to return). docs/symxchange.md:
      // `true` selects every entry id the XSD allows (1..maxOccurs), `false` sends nothing.
      if (typeof element.maxOccurs !== 'number') throw violation('`true` for an unbounded entry selector', path);
      if (!value) return '';
      return Array.from(
        { length: element.maxOccurs },
        (_, index) => `<${element.name}>${index + 1}</${element.name}>`,
      ).join('');
    }
    return encodeOne(element.name, value, schema, element.type, path, context);
  }

  function encodeComplex(
    object: JsonObject,
    schema: JsonSchema,
    typeName: string,
    path: string,
    context: EncodeContext,
  ): { attributes: string; content: string } {
    const layout = layoutOf(typeName);
    const properties = schema.properties ?? {};
    const required = new Set(schema.required ?? []);
    const used = new Set<string>();
    let attributes = '';
    for (const attribute of layout.attributes) {
      const value = object[attribute.name];
      if (value === undefined) continue;
      used.add(attribute.name);
      attributes += ` ${attributeName(attribute, context)}="${escapeAttribute(lexical(value, attribute.type, `${path}/@${attribute.name}`))}"`;
    }
    // A choice carries one alternative. The credential choices take the JSON's first non-empty kind (the
    // spec's JSON allows several; docs/symxchange.md: "the gateway forwards exactly one"); any other choice
    // given several alternatives is refused.
    const skipped = new Set<string>();
    const choices = new Set(layout.slots.flatMap((slot) => (slot.choice ? [slot.choice] : [])));
    for (const choice of choices) {
      const names = new Set(choice.particles.flatMap((p) => (p.kind === 'element' ? [p.name] : [])));
      const present = Object.keys(object).filter(
        (key) => names.has(key) && object[key] !== undefined && !(object[key] === null && required.has(key)),
      );
      if (present.length <= 1) continue;
      if (!typeName.endsWith('CredentialsChoice'))
        throw violation(`${present.join(' and ')} are alternatives of an xsd:choice: send one`, path);
      const kept =
        present.find((key) => isObject(object[key]) && Object.keys(object[key] as JsonObject).length > 0) ??
        present[0]!;
      for (const key of present) if (key !== kept) skipped.add(key);
    }
    let content = '';
    for (const { element } of layout.slots) {
      const value = object[element.name];
      if (value === undefined) continue;
      used.add(element.name);
      if (skipped.has(element.name)) continue;
      const propertySchema = properties[element.name];
      if (!propertySchema) throw violation(`JSON property ${element.name} has no schema`, `${path}/${element.name}`);
      // A required JSON null is an absent element (absent ↔ null on decoding); Version_1 is the empty marker.
      if (
        value === null &&
        required.has(element.name) &&
        element.type !== VERSION_TYPE &&
        !allows(propertySchema, 'array')
      )
        continue;
      content += encodeElement(element, value, propertySchema, `${path}/${element.name}`, context);
    }
    for (const key of Object.keys(object)) {
      if (used.has(key) || object[key] === undefined) continue;
      if (key === WILDCARD_PROPERTY && object[key] === null && layout.hasWildcard) continue;
      throw violation(`JSON property ${key} has no element or attribute in ${typeName}`, `${path}/${key}`);
    }
    return { attributes, content };
  }

  // ---- decoding ----

  type Scope = ReadonlyMap<string, string>;

  function withDeclarations(element: XmlElement, scope: Scope): Scope {
    const declarations = Object.entries(element.attributes).filter(
      ([name]) => name === 'xmlns' || name.startsWith('xmlns:'),
    );
    if (declarations.length === 0) return scope;
    const next = new Map(scope);
    for (const [name, uri] of declarations) next.set(name === 'xmlns' ? '' : name.slice(6), uri);
    return next;
  }

  /** Namespace URI and local name of a prefixed name ('' for no namespace). */
  function resolveName(name: string, scope: Scope, isAttribute: boolean, path: string): { uri: string; local: string } {
    const colon = name.indexOf(':');
    if (colon === -1) return { uri: isAttribute ? '' : (scope.get('') ?? ''), local: name };
    const uri = scope.get(name.slice(0, colon));
    if (uri === undefined) throw new SoapCodecError('XML_MALFORMED', `undeclared namespace prefix in ${name}`, path);
    return { uri, local: name.slice(colon + 1) };
  }

  const isNil = (element: XmlElement, scope: Scope, path: string) =>
    Object.entries(element.attributes).some(([name, value]) => {
      const { uri, local } = resolveName(name, scope, true, path);
      return uri === XSI_NS && local === 'nil' && (value === 'true' || value === '1');
    });

  function parseScalar(text: string, schema: JsonSchema, xsdType: string, path: string): unknown {
    const alts = alternatives(schema).filter((alt) => typeOf(alt) !== 'null');
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
    if (!alt) throw violation(`a value where the JSON schema has no scalar`, path);
    if (text === '' && typeOf(alt) !== 'string' && allows(schema, 'null')) return null;
    switch (typeOf(alt)) {
      case 'boolean':
        if (text === 'true' || text === '1') return true;
        if (text === 'false' || text === '0') return false;
        throw violation(`${JSON.stringify(text)} is not an xsd:boolean`, path);
      case 'integer':
        if (!/^[+-]?\d{1,16}$/.test(text.trim())) throw violation(`${JSON.stringify(text)} is not an integer`, path);
        return Number(text.trim());
      case 'number': {
        if (!/^[+-]?(\d+(\.\d*)?|\.\d+)$/.test(text.trim()))
          throw violation(`${JSON.stringify(text)} is not a decimal`, path);
        return Number(text.trim());
      }
      default:
        return text;
    }
  }

  function decodeOne(element: XmlElement, schema: JsonSchema, typeName: string, path: string, scope: Scope): unknown {
    const inner = withDeclarations(element, scope);
    if (isNil(element, inner, path)) {
      if (!allows(schema, 'null')) throw violation('xsi:nil where the JSON schema has no null', path);
      return null;
    }
    if (typeName === VERSION_TYPE) {
      if (!allows(schema, 'null')) throw violation('Version_1 where the JSON schema expects a value', path);
      return null;
    }
    if (isComplexType(typeName)) {
      const objectSchema = alternatives(schema).find((alt) => typeOf(alt) === 'object');
      if (!objectSchema) throw violation(`${typeName} where the JSON schema has no object`, path);
      return decodeComplex(element, objectSchema, typeName, path, inner);
    }
    if (element.children.length > 0) throw violation(`elements inside the simple ${typeName}`, path);
    return parseScalar(element.text, schema, typeName, path);
  }

  function decodeOccurrences(
    occurrences: readonly XmlElement[],
    slot: XsdElement,
    schema: JsonSchema,
    path: string,
    scope: Scope,
  ): unknown {
    const arraySchema = alternatives(schema).find((alt) => typeOf(alt) === 'array');
    const single = alternatives(schema).some((alt) => !['array', 'null'].includes(typeOf(alt) ?? ''));
    if (arraySchema && (slot.maxOccurs !== 1 || !single)) {
      if (occurrences.length === 1 && isNil(occurrences[0]!, withDeclarations(occurrences[0]!, scope), path)) {
        if (allows(schema, 'null')) return null;
      }
      return occurrences.map((occurrence, index) =>
        decodeOne(occurrence, arraySchema.items ?? {}, slot.type, `${path}[${index}]`, scope),
      );
    }
    if (occurrences.length > 1) throw violation(`${occurrences.length} occurrences where one is expected`, path);
    return decodeOne(occurrences[0]!, schema, slot.type, path, scope);
  }

  function decodeComplex(
    element: XmlElement,
    schema: JsonSchema,
    typeName: string,
    path: string,
    scope: Scope,
  ): JsonObject {
    const layout = layoutOf(typeName);
    const properties = schema.properties ?? {};
    const result: JsonObject = {};
    for (const [name, raw] of Object.entries(element.attributes)) {
      if (name === 'xmlns' || name.startsWith('xmlns:')) continue;
      const { uri, local } = resolveName(name, scope, true, path);
      if (uri === XSI_NS) continue;
      const attribute = layout.attributes.find(
        (a) =>
          a.name === local &&
          (a.qualified ? a.namespace !== undefined && qualifiedName(`${a.namespace}:x`).namespace === uri : uri === ''),
      );
      const attributePath = `${path}/@${name}`;
      if (!attribute) throw violation(`attribute ${name} is not in ${typeName}`, attributePath);
      const propertySchema = properties[local];
      if (!propertySchema) throw violation(`attribute ${name} has no JSON property`, attributePath);
      result[local] = parseScalar(raw, propertySchema, attribute.type, attributePath);
    }
    if (element.text.trim() !== '') throw violation('character data in element-only content', path);
    const groups = new Map<string, XmlElement[]>();
    let lastIndex = -1;
    for (const child of element.children) {
      const childPath = `${path}/${child.name}`;
      const { uri, local } = resolveName(child.name, withDeclarations(child, scope), false, childPath);
      if (uri !== '')
        throw violation('a namespace-qualified element where SymXchange elements are unqualified', childPath);
      const index = layout.slots.findIndex((slot) => slot.element.name === local);
      if (index === -1) throw violation(`element ${local} is not in ${typeName}`, childPath);
      if (index < lastIndex || (index === lastIndex && layout.slots[index]!.element.maxOccurs === 1))
        throw violation(`element ${local} is out of the XSD sequence order`, childPath);
      lastIndex = index;
      groups.set(local, [...(groups.get(local) ?? []), child]);
    }
    // A choice carries one alternative on the wire too (two credential kinds are refused, not merged).
    for (const choice of new Set(layout.slots.flatMap((slot) => (slot.choice ? [slot.choice] : [])))) {
      const present = choice.particles.flatMap((p) => (p.kind === 'element' && groups.has(p.name) ? [p.name] : []));
      if (present.length > 1) throw violation(`${present.join(' and ')} are alternatives of an xsd:choice`, path);
    }
    for (const [name, occurrences] of groups) {
      const slot = layout.slots.find((s) => s.element.name === name)!.element;
      const propertySchema = properties[name];
      if (!propertySchema) {
        if (name === VERSION_ELEMENT) continue; // the marker closes most types; JSON shows it only where the spec does
        throw violation(`element ${name} has no JSON property`, `${path}/${name}`);
      }
      result[name] = decodeOccurrences(occurrences, slot, propertySchema, `${path}/${name}`, scope);
    }
    for (const name of schema.required ?? []) {
      if (result[name] !== undefined) continue;
      const propertySchema = properties[name]!;
      if (allows(propertySchema, 'array')) result[name] = [];
      else if (allows(propertySchema, 'null')) result[name] = null;
      else throw violation(`required element ${name} is missing`, `${path}/${name}`);
    }
    return result;
  }

  // ---- operations, envelopes and the documented bridges ----

  function wireOperationOf(operation: CodecOperation): SymxOperation {
    const wire =
      symxchangeOperation(operation.service, operation.name) ??
      // Operations the 3.0 WSDLs lack follow their sibling's shapes (docs/symxchange.md, "Operations").
      symxchangeOperations().find((op) => op.service === operation.service && op.siblingOf.includes(operation.name));
    if (!wire)
      throw new SoapCodecError(
        'SOAP_UNKNOWN_OPERATION',
        `${operation.service}/${operation.name} has no SymXchange operation`,
      );
    return wire;
  }

  const serviceAliasOf = (wire: SymxOperation) => wire.request.element.slice(0, wire.request.element.lastIndexOf(':'));

  function objectSchemaOf(properties: Readonly<Record<string, TSchema>>): JsonSchema {
    return Type.Object(properties as Record<string, TSchema>) as unknown as JsonSchema;
  }

  /**
   * The request's JSON schema and body as the wire shapes them. Each step is a documented pattern, applied
   * wherever the facts show it, never by operation name:
   * - `MessageId` (attribute) and `DeviceInformation` come from the caller, not the JSON body;
   * - `nxAttributes` is JSON only and never forwarded (docs/symxchange.md, "Envelope and credentials");
   * - P2's `<Record>UpdatableFields` is the wire's `<Record>Fields`;
   * - a top-level JSON property the request lacks that its `SearchFilter` holds goes there (`Query`);
   * - a sibling whose JSON has no `SelectableFields` sends `IncludeAll<Record>Fields` (docs: "no field
   *   selection: send IncludeAll…Fields").
   */
  interface RequestShape {
    readonly schema: JsonSchema;
    toWire(body: Readonly<JsonObject>, messageId: string, device?: DeviceInformation): JsonObject;
    fromWire(wire: JsonObject): { body: JsonObject; messageId: string; deviceInformation?: DeviceInformation };
  }

  const requestShapes = new Map<CodecOperation, RequestShape>();

  function requestShapeOf(operation: CodecOperation, wire: SymxOperation): RequestShape {
    const known = requestShapes.get(operation);
    if (known) return known;
    const typeName = wire.request.child.type;
    const layout = layoutOf(typeName);
    const elementNames = new Set(layout.slots.map((slot) => slot.element.name));
    const jsonProperties: Record<string, TSchema> = { ...envelopeProperties, ...operation.request };
    delete jsonProperties.nxAttributes;
    const wireProperties: Record<string, TSchema> = {};
    const renames = new Map<string, string>(); // JSON name → wire name
    const intoSearchFilter: string[] = [];
    for (const [name, schema] of Object.entries(jsonProperties)) {
      const fieldsName = name.replace(/UpdatableFields$/, 'Fields');
      if (!elementNames.has(name) && fieldsName !== name && elementNames.has(fieldsName)) {
        renames.set(name, fieldsName);
        wireProperties[fieldsName] = schema;
      } else if (!elementNames.has(name) && !('SearchFilter' in jsonProperties) && searchFilterHolds(layout, name)) {
        intoSearchFilter.push(name);
      } else wireProperties[name] = schema;
    }
    if (intoSearchFilter.length > 0)
      wireProperties.SearchFilter = Type.Optional(
        Type.Object(Object.fromEntries(intoSearchFilter.map((name) => [name, Type.Optional(jsonProperties[name]!)]))),
      );
    const selectable = layout.slots.find((slot) => slot.element.name === 'SelectableFields')?.element;
    const includeAll =
      selectable && !('SelectableFields' in jsonProperties) && isComplexType(selectable.type)
        ? layoutOf(selectable.type).slots.find((slot) => slot.element.name.startsWith('IncludeAll'))?.element.name
        : undefined;
    if (includeAll) wireProperties.SelectableFields = Type.Object({ [includeAll]: Type.Boolean() });
    wireProperties.MessageId = Type.String();
    wireProperties.DeviceInformation = Type.Optional(
      Type.Object({ DeviceType: Type.String(), DeviceNumber: Type.Integer() }),
    );
    const shape: RequestShape = {
      schema: objectSchemaOf(wireProperties),
      toWire(body, messageId, device) {
        const out: JsonObject = { MessageId: messageId };
        for (const [key, value] of Object.entries(body)) {
          if (key === 'nxAttributes') continue;
          if (intoSearchFilter.includes(key)) out.SearchFilter = { ...(out.SearchFilter as JsonObject), [key]: value };
          else out[renames.get(key) ?? key] = value;
        }
        if (includeAll) out.SelectableFields = { [includeAll]: true };
        if (device) out.DeviceInformation = { ...device };
        return out;
      },
      fromWire(decoded) {
        const { MessageId, DeviceInformation, SelectableFields, SearchFilter, ...rest } = decoded;
        const body: JsonObject = {};
        for (const [key, value] of Object.entries(rest)) {
          const jsonName = [...renames].find(([, wireName]) => wireName === key)?.[0] ?? key;
          body[jsonName] = value;
        }
        if (includeAll) {
          if (SelectableFields !== undefined && (SelectableFields as JsonObject)[includeAll] !== true)
            throw violation(
              `this operation selects every field: SelectableFields must be ${includeAll}`,
              'Request/SelectableFields',
            );
        } else if (SelectableFields !== undefined) body.SelectableFields = SelectableFields;
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

  function searchFilterHolds(layout: TypeLayout, name: string): boolean {
    const filter = layout.slots.find((slot) => slot.element.name === 'SearchFilter')?.element;
    return (
      filter !== undefined &&
      isComplexType(filter.type) &&
      layoutOf(filter.type).slots.some((slot) => slot.element.name === name)
    );
  }

  /** The response's JSON schema as the wire shapes it: a JSON without `MessageId` takes the caller's. */
  function responseSchemaOf(operation: CodecOperation): { schema: JsonSchema; addsMessageId: boolean } {
    const schema = resolve(operation.response as JsonSchema);
    if (schema.properties?.MessageId) return { schema, addsMessageId: false };
    return {
      schema: { ...schema, properties: { ...schema.properties, MessageId: { type: 'string' } } },
      addsMessageId: true,
    };
  }

  function envelope(wire: SymxOperation, bodyElementName: string, childXml: string, context: EncodeContext): string {
    const serviceUri = symxchangeService(wire.service).targetNamespace;
    const declarations = [`xmlns:soapenv="${SOAP_ENVELOPE_NS}"`, `xmlns:tns="${serviceUri}"`];
    for (const alias of [...context.aliases].sort()) {
      if (alias === context.serviceAlias) continue;
      const uri = alias === 'xsi' ? XSI_NS : qualifiedName(`${alias}:x`).namespace;
      declarations.push(`xmlns:${alias === 'xsi' ? 'xsi' : prefixOf(alias, context.serviceAlias)}="${uri}"`);
    }
    return (
      `<soapenv:Envelope ${declarations.join(' ')}><soapenv:Header/><soapenv:Body>` +
      `<tns:${bodyElementName}>${childXml}</tns:${bodyElementName}></soapenv:Body></soapenv:Envelope>`
    );
  }

  /** The single element of the Body, with its scope, after checking the envelope. */
  function bodyElementOf(xml: string): { element: XmlElement; scope: Scope; uri: string; local: string } {
    const root = parseXml(xml, limits);
    const rootScope = withDeclarations(root, new Map());
    const rootName = resolveName(root.name, rootScope, false, root.name);
    if (rootName.uri !== SOAP_ENVELOPE_NS || rootName.local !== 'Envelope')
      throw new SoapCodecError('SOAP_NOT_AN_ENVELOPE', 'the root is not a SOAP 1.1 Envelope');
    const parts = root.children.map((child) => {
      const scope = withDeclarations(child, rootScope);
      return { child, scope, ...resolveName(child.name, scope, false, child.name) };
    });
    const body = parts.find((part) => part.uri === SOAP_ENVELOPE_NS && part.local === 'Body');
    if (!body || parts.some((part) => part.uri !== SOAP_ENVELOPE_NS || !['Header', 'Body'].includes(part.local)))
      throw new SoapCodecError('SOAP_NOT_AN_ENVELOPE', 'an Envelope holds an optional Header and one Body');
    if (body.child.children.length !== 1)
      throw new SoapCodecError('SOAP_NOT_AN_ENVELOPE', 'the Body holds one element');
    const element = body.child.children[0]!;
    const scope = withDeclarations(element, body.scope);
    const name = resolveName(element.name, scope, false, element.name);
    if (name.uri === SOAP_ENVELOPE_NS && name.local === 'Fault') {
      const faultString = element.children.find((child) => child.name === 'faultstring')?.text ?? '';
      throw new SoapCodecError('SOAP_FAULT', `the core answered with a SOAP Fault: ${faultString}`);
    }
    return { element, scope, ...name };
  }

  /** The wrapper's single child (`Request`, `SingleResponse`, …), unqualified. */
  function wrapperChild(
    element: XmlElement,
    scope: Scope,
    expected: string,
    path: string,
  ): { child: XmlElement; scope: Scope } {
    const children = element.children;
    if (element.text.trim() !== '') throw violation('character data in element-only content', path);
    if (children.length !== 1) throw violation(`${path} holds one ${expected}`, path);
    const child = children[0]!;
    const childScope = withDeclarations(child, scope);
    const name = resolveName(child.name, childScope, false, `${path}/${child.name}`);
    if (name.uri !== '' || name.local !== expected)
      throw violation(`expected an unqualified ${expected}`, `${path}/${child.name}`);
    return { child, scope: childScope };
  }

  return {
    encodeRequest(operation, body, { messageId, deviceInformation }) {
      const wire = wireOperationOf(operation);
      const shape = requestShapeOf(operation, wire);
      const context: EncodeContext = { serviceAlias: serviceAliasOf(wire), aliases: new Set() };
      const child = wire.request.child;
      const path = `${operation.name}/${child.name}`;
      const xml = encodeOne(
        child.name,
        shape.toWire(body, messageId, deviceInformation),
        shape.schema,
        child.type,
        path,
        context,
      );
      return envelope(wire, operation.name, xml, context);
    },

    decodeRequest(xml, { family } = {}) {
      const { element, scope, uri, local } = bodyElementOf(xml);
      const service = (['findby', 'corptransfer', 'account', 'collateral'] as const).find(
        (name) => symxchangeService(name).targetNamespace === uri,
      );
      const candidates = options.operations.filter((op) => op.service === service && op.name === local);
      const operation =
        candidates.find((op) => op.family === (family ?? 'P1')) ?? (family === undefined ? candidates[0] : undefined);
      if (!service || !operation)
        throw new SoapCodecError('SOAP_UNKNOWN_OPERATION', `no operation ${local} in namespace ${uri}`);
      const wire = wireOperationOf(operation);
      const shape = requestShapeOf(operation, wire);
      const { child, scope: childScope } = wrapperChild(element, scope, wire.request.child.name, local);
      const decoded = decodeOne(child, shape.schema, wire.request.child.type, `${local}/${child.name}`, childScope);
      return { service, operationName: operation.name, operation, ...shape.fromWire(decoded as JsonObject) };
    },

    encodeResponse(operation, result, messageId) {
      const wire = wireOperationOf(operation);
      const { schema, addsMessageId } = responseSchemaOf(operation);
      if (!isObject(result)) throw violation('a response is a JSON object', operation.name);
      const context: EncodeContext = { serviceAlias: serviceAliasOf(wire), aliases: new Set() };
      const child = wire.response.child;
      const value = addsMessageId ? { ...result, MessageId: messageId } : result;
      const xml = encodeOne(child.name, value, schema, child.type, `${operation.name}Response/${child.name}`, context);
      return envelope(wire, `${operation.name}Response`, xml, context);
    },

    decodeResponse(operation, xml) {
      const wire = wireOperationOf(operation);
      const { schema, addsMessageId } = responseSchemaOf(operation);
      const { element, scope, uri, local } = bodyElementOf(xml);
      if (uri !== symxchangeService(wire.service).targetNamespace || local !== `${operation.name}Response`)
        throw new SoapCodecError('SOAP_UNKNOWN_OPERATION', `expected ${operation.name}Response, got ${local}`);
      const { child, scope: childScope } = wrapperChild(element, scope, wire.response.child.name, local);
      const decoded = decodeOne(
        child,
        schema,
        wire.response.child.type,
        `${local}/${child.name}`,
        childScope,
      ) as JsonObject;
      if (addsMessageId) delete decoded.MessageId;
      return decoded;
    },
  };
}

function violation(message: string, path: string): SoapCodecError {
  return new SoapCodecError('SOAP_SCHEMA_VIOLATION', message, path);
}
