/**
 * Encoding: JSON values to SymXchange XML, element by element. An element's encoder is compiled once per
 * declaration and JSON schema, on first use (so a recursive type reaches itself through the cache), from
 * the type's layout (layout.ts) and its scalars' text (scalars.ts); a call then walks the value, not the
 * schemas. The operation shapes (shapes.ts) hold the encoder of each request's and response's top element.
 */
import { VERSION_ELEMENT, type XsdAttribute, type XsdElement } from '../../catalog/symxchange/index.js';
import type { JsonSchema, JsonSchemas } from '../json-schema.js';
import type { SymxMapping } from '../mapping.js';
import { escapeAttribute, escapeText, isPlainText } from '../xml.js';
import { isObject, sameJson, typeOf, type JsonObject } from './json.js';
import { VERSION_TYPE, WILDCARD_PROPERTY, type LayoutOf } from './layout.js';
import { lexical } from './scalars.js';
import { outOf, violation, within } from './violations.js';

/** Encodes a value into an element's XML (the element included), or '' for nothing. */
export type ElementEncoder = (value: unknown) => string;

/** The encoder of an element declared by `element` holding values of `schema`, compiled once. */
export type ElementEncoderOf = (element: XsdElement, schema: JsonSchema) => ElementEncoder;

/** The prefix the envelope (envelope.ts) declares for a namespace alias. */
const prefixOf = (alias: string): string => (alias === 'symxcommon' ? 'cmn' : 'tns');

const attributeName = (attribute: XsdAttribute): string =>
  attribute.qualified && attribute.namespace !== undefined
    ? `${prefixOf(attribute.namespace)}:${attribute.name}`
    : attribute.name;

/**
 * The element encoders of a mapping, each compiled once per element declaration and JSON schema.
 * @example compileEncoders({ mapping, json, layoutOf })(wire.request.child, schema)({ MessageId: 'm1' })
 */
export function compileEncoders(codec: {
  readonly mapping: SymxMapping;
  readonly json: JsonSchemas;
  readonly layoutOf: LayoutOf;
}): ElementEncoderOf {
  const { mapping, json, layoutOf } = codec;
  const elementEncoders = new Map<string, Map<JsonSchema, ElementEncoder>>();
  // coregate's JSON was built from 3.0's elements: there, a property without an element is a bug, refused. A
  // release without some of them (2020.00's ShareName has no Headquarters) has nowhere to write the field: an
  // answer leaves it out, and a gateway's selection of it is not sent (its answer is then null). A share update's
  // fields it cannot carry never reach here: they are failures of their own (share-update.ts, coreRequest).
  const writesWhatItHas = !mapping.native;

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

  /** Whether a JSON object has no property (without making a list of them). */
  function hasNoProperties(object: JsonObject): boolean {
    for (const _key in object) return false;
    return true;
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
    /** An alternative of a choice not given: no value, null, or (credentials) an empty object. */
    const absentAlternative = (value: unknown) =>
      value === undefined || value === null || (credentials && isObject(value) && hasNoProperties(value as JsonObject));

    /** Refuses a JSON property without an element or attribute (only looked for when the counts differ). */
    const checkProperties = (object: JsonObject) => {
      for (const key in object) {
        if (object[key] === undefined || known.has(key) || writesWhatItHas) continue;
        if (key === WILDCARD_PROPERTY && object[key] === null && layout.hasWildcard) continue;
        // The spec's JSON carries the version marker and its wildcard as nulls; a release without them (2020.00
        // has no Version_1) has nothing to write for them.
        if (
          (key === VERSION_ELEMENT || key === WILDCARD_PROPERTY) &&
          object[key] === null &&
          !known.has(VERSION_ELEMENT)
        )
          continue;
        throw violation(`JSON property ${key} has no element or attribute in ${typeName}`, key);
      }
    };

    return (name, object) => {
      // A choice carries one alternative. The spec shows credential objects as empty objects, which count as
      // absent; two given alternatives are refused (the caller picks which one the core should get).
      for (const names of choiceNames) {
        let present = 0;
        for (const key of names) if (!absentAlternative(object[key])) present += 1;
        if (present > 1) {
          const given = [...names].filter((key) => !absentAlternative(object[key]));
          throw violation(`${given.join(' and ')} are alternatives of an xsd:choice: send one`);
        }
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
        if (slot.choice && absentAlternative(value)) continue;
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

  return elementEncoder;
}
