/**
 * Safe XML for the SymXchange codec: saxes, a strict XML 1.0 parser, with every DTD refused (so no entity
 * can be declared, let alone expanded: XXE and billion laughs fail at the DOCTYPE), only XML's predefined
 * entities and character references decoded, and limits on size, depth and element count enforced as the
 * document is read. saxes builds no tree and recurses nowhere; the tree it is read into is bounded by the
 * limits. Also here: the escaping of text and attribute values.
 */
import { SaxesParser, type SaxesTagPlain } from 'saxes';

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

/** The attributes of every element that has none: one object, so that readers can skip them at once. */
export const NO_ATTRIBUTES: Readonly<Record<string, string>> = Object.freeze({});

/** A parsed element, prefixes kept as written (namespace resolution is the codec's). */
export interface XmlElement {
  readonly name: string;
  readonly attributes: Readonly<Record<string, string>>;
  /** The namespaces the element declares (`xmlns:p` → `p`, `xmlns` → ''), when it declares any. */
  readonly declarations?: ReadonlyMap<string, string>;
  readonly children: readonly XmlElement[];
  /** The element's character data, entities decoded; whitespace between child elements included. */
  readonly text: string;
}

/** What XML 1.0's Char production leaves out: C0 controls but tab, LF, CR; U+FFFE, U+FFFF; lone surrogates. */
const NOT_XML_CHAR =
  // eslint-disable-next-line no-control-regex
  /[\u0000-\u0008\u000b\u000c\u000e-\u001f\ufffe\uffff]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** True when every code point of `text` may appear in an XML 1.0 document (no NUL, no lone surrogate). */
export function isXmlText(text: string): boolean {
  return !NOT_XML_CHAR.test(text);
}

/** Character data: markup characters escaped, and CR as a reference so that no parser normalises it away. */
export function escapeText(text: string): string {
  if (!MARKUP.test(text)) return text;
  return text.replace(/[&<>\r]/g, (c) => (c === '&' ? '&amp;' : c === '<' ? '&lt;' : c === '>' ? '&gt;' : '&#13;'));
}
const MARKUP = /[&<>\r]/;

/** An attribute value in double quotes: also quotes and the whitespace attribute normalisation would change. */
export function escapeAttribute(text: string): string {
  return escapeText(text).replace(/["\t\n]/g, (c) => (c === '"' ? '&quot;' : c === '\t' ? '&#9;' : '&#10;'));
}

/**
 * Parses a document safely: strict XML 1.0 (well-formed, only XML's characters), no DTD, the limits checked
 * on the way. Returns the root element; prefixes are kept as written (namespaces are the codec's).
 * @example parseXml('<a><b>1</b></a>').children[0]?.text // '1'
 */
export function parseXml(xml: string, limits: XmlLimits = DEFAULT_XML_LIMITS): XmlElement {
  if (xml.length > limits.maxLength)
    throw new SoapCodecError('XML_TOO_LARGE', `the document exceeds ${limits.maxLength} characters`);
  interface Building {
    readonly name: string;
    readonly attributes: Readonly<Record<string, string>>;
    readonly declarations?: ReadonlyMap<string, string>;
    readonly children: XmlElement[];
    text: string;
  }
  const open: Building[] = [];
  let root: Building | undefined;
  let elements = 0;
  const parser = new SaxesParser({ xmlns: false, position: false });
  parser.on('doctype', () => {
    throw new SoapCodecError('XML_DTD_REFUSED', 'document type declarations and entity declarations are refused');
  });
  parser.on('opentag', (tag: SaxesTagPlain) => {
    elements += 1;
    if (elements > limits.maxElements)
      throw new SoapCodecError('XML_TOO_MANY_ELEMENTS', `the document has more than ${limits.maxElements} elements`);
    if (open.length >= limits.maxDepth)
      throw new SoapCodecError('XML_TOO_DEEP', `elements nest deeper than ${limits.maxDepth}`);
    let declarations: Map<string, string> | undefined;
    let attributes: Readonly<Record<string, string>> = NO_ATTRIBUTES;
    for (const name in tag.attributes) {
      attributes = tag.attributes;
      if (name === 'xmlns') (declarations ??= new Map()).set('', tag.attributes[name]!);
      else if (name.startsWith('xmlns:')) (declarations ??= new Map()).set(name.slice(6), tag.attributes[name]!);
    }
    const element: Building = declarations
      ? { name: tag.name, attributes, declarations, children: [], text: '' }
      : { name: tag.name, attributes, children: [], text: '' };
    const parent = open[open.length - 1];
    if (parent) parent.children.push(element);
    else root = element;
    open.push(element);
  });
  const addText = (text: string) => {
    const current = open[open.length - 1];
    if (current) current.text += text;
  };
  parser.on('text', addText);
  parser.on('cdata', addText);
  parser.on('closetag', () => void open.pop());
  parser.on('error', (error: Error) => {
    throw new SoapCodecError('XML_MALFORMED', error.message);
  });
  try {
    parser.write(xml).close();
  } catch (error) {
    if (error instanceof SoapCodecError) throw error;
    throw new SoapCodecError('XML_MALFORMED', (error as Error).message);
  }
  if (!root) throw new SoapCodecError('XML_MALFORMED', 'a document has exactly one root element');
  return root;
}
