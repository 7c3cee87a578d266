/**
 * Decoding: SymXchange XML to JSON values, element by element. A decoder is compiled once per element
 * declaration (or type), JSON schema and strictness, on first use, from the type's layout (layout.ts) and
 * its scalars' parsers (scalars.ts); it resolves names against the namespaces in scope (namespaces.ts). A
 * request is decoded strictly (anything the XSD or the JSON lacks is refused); a response laxly: what a
 * newer core adds is skipped and noted, and its lists are held to their bounds (answers.ts). The operation
 * shapes (shapes.ts) hold the decoder of each request's and response's top element.
 */
import { VERSION_ELEMENT, type XsdElement, type XsdGroup } from '../../catalog/symxchange/index.js';
import type { JsonSchema, JsonSchemas } from '../json-schema.js';
import type { SymxMapping } from '../mapping.js';
import { clip, isBlank, NO_ATTRIBUTES, type XmlElement } from '../xml.js';
import type { Answers } from './answers.js';
import { typeOf, type JsonObject } from './json.js';
import { VERSION_TYPE, type LayoutOf } from './layout.js';
import { isNil, localName, namespaceOf, resolveName, withDeclarations, XSI_NS, type Scope } from './namespaces.js';
import { scalarParser } from './scalars.js';
import { outOf, violation } from './violations.js';

/** Decodes all occurrences of one element into a JSON value. */
type OccurrencesDecoder = (occurrences: readonly XmlElement[], scope: Scope) => unknown;
/** Decodes an element's content (attributes and children) into a JSON value. */
export type ContentDecoder = (element: XmlElement, scope: Scope) => unknown;
/** The decoder of an element of `typeName` into values of `schema`, compiled once; `lax` for a response. */
export type ValueDecoderOf = (typeName: string, schema: JsonSchema, lax: boolean) => ContentDecoder;

/**
 * The decoders of a mapping, each compiled once per declaration, JSON schema and strictness.
 * @example compileDecoders({ mapping, json, layoutOf, answers: answers(undefined) })(typeName, schema, false)
 */
export function compileDecoders(codec: {
  readonly mapping: SymxMapping;
  readonly json: JsonSchemas;
  readonly layoutOf: LayoutOf;
  /** A response's list bounds and notes. */
  readonly answers: Answers;
}): ValueDecoderOf {
  const { mapping, json, layoutOf, answers } = codec;
  const { lists } = answers;
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
    const parse = scalarParser(json, schema, typeName);
    return (element, scope) => {
      if (isNil(element, withDeclarations(element, scope))) {
        if (!nullable) throw violation('xsi:nil where the JSON schema has no null');
        return null;
      }
      if (element.children.length > 0) throw violation(`elements inside the simple ${typeName}`);
      return parse(element.text);
    };
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
          ? mapping.facts.qualifiedName(`${attribute.namespace}:x`).namespace
          : '';
      return { attribute, uri, parse: propertySchema ? scalarParser(json, propertySchema, attribute.type) : undefined };
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
              answers.noteUnknown(typeName, `@${name}`);
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
            answers.noteUnknown(typeName, name);
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
          if (slot.list && lists && lax) answers.boundList(result, slot.name, occurrences, listFlag, page, typeName);
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

  return valueDecoder;
}
