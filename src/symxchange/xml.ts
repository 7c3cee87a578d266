/**
 * Safe XML for the SymXchange codec: a refusal of DTDs and entity declarations before any parsing, limits on
 * size, depth and element count checked by a linear scan (so a hostile document never reaches the parser's
 * recursion), fast-xml-parser without entity expansion, and the escaping of text and attribute values.
 * Only XML's five predefined entities and character references are ever decoded, by this module.
 */
import { XMLParser, XMLValidator } from 'fast-xml-parser';

/** Stable codes of what the codec refuses; the SOAP face maps them to Faults. */
export type SoapCodecErrorCode =
  | 'XML_DTD_REFUSED'
  | 'XML_TOO_LARGE'
  | 'XML_TOO_DEEP'
  | 'XML_TOO_MANY_ELEMENTS'
  | 'XML_MALFORMED'
  | 'SOAP_NOT_AN_ENVELOPE'
  | 'SOAP_UNKNOWN_OPERATION'
  | 'SOAP_SCHEMA_VIOLATION';

/**
 * What the codec throws: a stable `code`, and for schema violations the element path at fault.
 * @example new SoapCodecError('SOAP_SCHEMA_VIOLATION', 'no element for JSON property X', 'Request/X')
 */
export class SoapCodecError extends Error {
  constructor(
    readonly code: SoapCodecErrorCode,
    /** What is wrong, without the path. */
    readonly detail: string,
    /** Element path from the body's element, `/`-separated (`findBySSN/Request/SSN`), when one is at fault. */
    readonly path?: string,
  ) {
    super(path === undefined ? detail : `${detail} (at ${path})`);
    this.name = 'SoapCodecError';
  }

  /**
   * The same error one element further out: decoders and encoders throw with the path below them, and each
   * level prefixes its own name on the way up (no path is built unless something fails).
   * @example new SoapCodecError('SOAP_SCHEMA_VIOLATION', 'x', 'SSN').within('Request').path // 'Request/SSN'
   */
  within(name: string): SoapCodecError {
    return new SoapCodecError(this.code, this.detail, this.path === undefined ? name : `${name}/${this.path}`);
  }
}

export interface XmlLimits {
  /** Largest document in UTF-16 code units (about bytes for SOAP's ASCII markup). */
  readonly maxLength: number;
  readonly maxDepth: number;
  readonly maxElements: number;
}

/** Large enough for a 131-field tracking record page; small enough to refuse a flood. */
export const DEFAULT_XML_LIMITS: XmlLimits = { maxLength: 4 * 1024 * 1024, maxDepth: 32, maxElements: 100_000 };

/** A parsed element, prefixes kept as written (namespace resolution is the codec's). */
export interface XmlElement {
  readonly name: string;
  readonly attributes: Readonly<Record<string, string>>;
  readonly children: readonly XmlElement[];
  /** The element's character data, entities decoded; whitespace between child elements included. */
  readonly text: string;
}

/**
 * Refuses DTDs and entity declarations and checks the limits, without building anything: one pass over
 * the markup, skipping comments, CDATA sections and quoted attribute values.
 */
function screen(xml: string, limits: XmlLimits): void {
  if (xml.length > limits.maxLength)
    throw new SoapCodecError('XML_TOO_LARGE', `the document exceeds ${limits.maxLength} characters`);
  let depth = 0;
  let elements = 0;
  let at = xml.indexOf('<');
  while (at !== -1) {
    const next = xml[at + 1];
    if (xml.startsWith('<!--', at)) {
      const end = xml.indexOf('-->', at + 4);
      if (end === -1) throw new SoapCodecError('XML_MALFORMED', 'unterminated comment');
      at = xml.indexOf('<', end + 3);
      continue;
    }
    if (xml.startsWith('<![CDATA[', at)) {
      const end = xml.indexOf(']]>', at + 9);
      if (end === -1) throw new SoapCodecError('XML_MALFORMED', 'unterminated CDATA section');
      at = xml.indexOf('<', end + 3);
      continue;
    }
    if (next === '!') {
      // <!DOCTYPE, <!ENTITY, <!ELEMENT, …: no DTD is ever read, so no entity can be declared or expanded.
      throw new SoapCodecError('XML_DTD_REFUSED', 'document type declarations and entity declarations are refused');
    }
    if (next === '?') {
      const end = xml.indexOf('?>', at + 2);
      if (end === -1) throw new SoapCodecError('XML_MALFORMED', 'unterminated processing instruction');
      at = xml.indexOf('<', end + 2);
      continue;
    }
    // A tag: find its end outside quoted attribute values.
    let end = at + 1;
    let quote: string | undefined;
    for (; end < xml.length; end++) {
      const c = xml[end];
      if (quote) {
        if (c === quote) quote = undefined;
      } else if (c === '"' || c === "'") quote = c;
      else if (c === '>') break;
    }
    if (end >= xml.length) throw new SoapCodecError('XML_MALFORMED', 'unterminated tag');
    if (next === '/') depth--;
    else {
      elements++;
      if (elements > limits.maxElements)
        throw new SoapCodecError('XML_TOO_MANY_ELEMENTS', `the document has more than ${limits.maxElements} elements`);
      if (xml[end - 1] !== '/') {
        depth++;
        if (depth > limits.maxDepth)
          throw new SoapCodecError('XML_TOO_DEEP', `elements nest deeper than ${limits.maxDepth}`);
      }
    }
    at = xml.indexOf('<', end + 1);
  }
}

const parser = new XMLParser({
  preserveOrder: true,
  ignoreAttributes: false,
  attributeNamePrefix: '',
  parseTagValue: false,
  parseAttributeValue: false,
  // No entity of any kind is expanded by the parser (and no DTD reaches it): see decodeEntities.
  processEntities: false,
  htmlEntities: false,
  trimValues: false,
  ignoreDeclaration: true,
  ignorePiTags: true,
  cdataPropName: '#cdata',
});

const PREDEFINED: Readonly<Record<string, string>> = { lt: '<', gt: '>', amp: '&', quot: '"', apos: "'" };

/** Decodes XML's five predefined entities and character references; anything else is malformed. */
export function decodeEntities(text: string): string {
  return text.replace(/&([^;&]*);?/g, (whole, name: string) => {
    if (!whole.endsWith(';')) throw new SoapCodecError('XML_MALFORMED', 'a bare & in character data');
    const predefined = PREDEFINED[name];
    if (predefined !== undefined) return predefined;
    const reference = /^#x([0-9a-fA-F]{1,6})$/.exec(name) ?? /^#([0-9]{1,7})$/.exec(name);
    const code = reference ? Number.parseInt(reference[1]!, name.startsWith('#x') ? 16 : 10) : NaN;
    if (!Number.isInteger(code) || !isXmlChar(code))
      throw new SoapCodecError('XML_MALFORMED', `entity &${name}; is not one XML predefines`);
    return String.fromCodePoint(code);
  });
}

/** XML 1.0's Char production. */
function isXmlChar(code: number): boolean {
  return (
    code === 0x9 ||
    code === 0xa ||
    code === 0xd ||
    (code >= 0x20 && code <= 0xd7ff) ||
    (code >= 0xe000 && code <= 0xfffd) ||
    (code >= 0x10000 && code <= 0x10ffff)
  );
}

/** True when every code point of `text` may appear in an XML 1.0 document (no NUL, no lone surrogate). */
export function isXmlText(text: string): boolean {
  for (const char of text) if (!isXmlChar(char.codePointAt(0)!)) return false;
  return true;
}

/** Character data: markup characters escaped, and CR as a reference so that no parser normalises it away. */
export function escapeText(text: string): string {
  return text.replace(/[&<>\r]/g, (c) => (c === '&' ? '&amp;' : c === '<' ? '&lt;' : c === '>' ? '&gt;' : '&#13;'));
}

/** An attribute value in double quotes: also quotes and the whitespace attribute normalisation would change. */
export function escapeAttribute(text: string): string {
  return escapeText(text).replace(/["\t\n]/g, (c) => (c === '"' ? '&quot;' : c === '\t' ? '&#9;' : '&#10;'));
}

type ParsedNode = Record<string, unknown>;

function toElement(node: ParsedNode): XmlElement {
  const name = Object.keys(node).find((key) => key !== ':@')!;
  const rawAttributes = (node[':@'] ?? {}) as Record<string, string>;
  const attributes: Record<string, string> = {};
  for (const [key, value] of Object.entries(rawAttributes)) attributes[key] = decodeEntities(value);
  const children: XmlElement[] = [];
  let text = '';
  for (const child of node[name] as ParsedNode[]) {
    if ('#text' in child) text += decodeEntities(String(child['#text']));
    else if ('#cdata' in child)
      text += (child['#cdata'] as ParsedNode[]).map((part) => String(part['#text'] ?? '')).join('');
    else children.push(toElement(child));
  }
  return { name, attributes, children, text };
}

/**
 * Parses a document safely: screened first (DTD, size, depth, element count), then validated, then parsed
 * without entity expansion. Returns the root element.
 * @example parseXml('<a><b>1</b></a>').children[0]?.text // '1'
 */
export function parseXml(xml: string, limits: XmlLimits = DEFAULT_XML_LIMITS): XmlElement {
  screen(xml, limits);
  const valid = XMLValidator.validate(xml);
  if (valid !== true) throw new SoapCodecError('XML_MALFORMED', `${valid.err.msg} (line ${valid.err.line})`);
  const nodes = (parser.parse(xml) as ParsedNode[]).filter((node) => !('#text' in node));
  if (nodes.length !== 1) throw new SoapCodecError('XML_MALFORMED', 'a document has exactly one root element');
  return toElement(nodes[0]!);
}
