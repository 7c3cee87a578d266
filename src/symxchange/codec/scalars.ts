/**
 * XSD built-in scalar types (the simple content of elements and attributes): which JSON type each takes,
 * the facets the codec enforces (integers have no fraction, `xsd:date` is YYYY-MM-DD, text is what XML can
 * carry), and the conversion between a JSON value and its text both ways. The encoders (encode.ts) write
 * `lexical`'s text; the decoders (decode.ts) compile a `scalarParser` once per element and schema.
 */
import type { JsonSchema, JsonSchemas } from '../json-schema.js';
import { isXmlText } from '../xml.js';
import { typeOf } from './json.js';
import { quoted, violation } from './violations.js';

const INTEGER_TYPES = new Set(['xsd:int', 'xsd:short', 'xsd:long', 'xsd:integer', 'xsd:byte']);
const DECIMAL_TYPES = new Set(['xsd:decimal', 'xsd:double', 'xsd:float']);

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

/**
 * The text of a JSON scalar as `xsdType` writes it (unescaped), or a violation when the value breaks a facet.
 * @example lexical(12.5, 'xsd:decimal') // '12.5'
 */
export function lexical(value: unknown, xsdType: string): string {
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
export function scalarParser(json: JsonSchemas, schema: JsonSchema, xsdType: string): (text: string) => unknown {
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
