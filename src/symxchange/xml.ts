/**
 * Safe XML for the SymXchange codec: saxes, a strict XML 1.0 parser, with every DTD refused (so no entity
 * can be declared, let alone expanded: XXE and billion laughs fail at the DOCTYPE), only XML's predefined
 * entities and character references decoded, and limits on size, depth and element count enforced as the
 * document is read. saxes builds no tree and recurses nowhere; the tree it is read into is bounded by the
 * limits. Also here: the strict UTF-8 decoding of a document's bytes, the escaping of text and attribute
 * values, and the clipping of request-derived text that errors quote.
 */
import { SaxesParser, type SaxesTagPlain } from 'saxes';

/** Stable codes of what the codec refuses; the SOAP face maps them to Faults. */
export type SoapCodecErrorCode =
  | 'XML_DTD_REFUSED'
  | 'XML_TOO_LARGE'
  | 'XML_TOO_DEEP'
  | 'XML_TOO_MANY_ELEMENTS'
  | 'XML_NAME_TOO_LONG'
  | 'XML_MALFORMED'
  | 'XML_ENCODING_REFUSED'
  | 'XML_INVALID_UTF8'
  | 'SOAP_NOT_AN_ENVELOPE'
  | 'SOAP_MUST_UNDERSTAND'
  | 'SOAP_UNKNOWN_OPERATION'
  | 'SOAP_SCHEMA_VIOLATION';

/** How much of a request-derived text (a name, a value, a namespace) an error quotes. */
const QUOTED_LENGTH = 64;

/**
 * Request-derived text as an error quotes it: at most `max` characters, an ellipsis marking a cut, so that a
 * 200 KB name cannot make a 200 KB Fault.
 * @example clip('x'.repeat(500), 8) // 'xxxxxxxx…'
 */
export function clip(text: string, max = QUOTED_LENGTH): string {
  if (text.length <= max) return text;
  // Never end on the first half of a surrogate pair.
  const end = /[\ud800-\udbff]/.test(text[max - 1]!) ? max - 1 : max;
  return `${text.slice(0, end)}…`;
}

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
    const element = clip(name);
    return new SoapCodecError(this.code, this.detail, this.path === undefined ? element : `${element}/${this.path}`);
  }
}

export interface XmlLimits {
  /** Largest document in UTF-16 code units (about bytes for SOAP's ASCII markup). */
  readonly maxLength: number;
  readonly maxDepth: number;
  readonly maxElements: number;
  /** Longest element or attribute name (prefix included). */
  readonly maxNameLength: number;
}

/**
 * Large enough for a 131-field tracking record page; small enough to refuse a flood. SymXchange's longest
 * names have about 60 characters; 1,024 leaves room for any toolkit's prefixes.
 */
export const DEFAULT_XML_LIMITS: XmlLimits = {
  maxLength: 4 * 1024 * 1024,
  maxDepth: 32,
  maxElements: 100_000,
  maxNameLength: 1024,
};

/** The attributes of every element that has none: one object, so that readers can skip them at once. */
export const NO_ATTRIBUTES: Readonly<Record<string, string>> = Object.freeze({});

/** A parsed element, prefixes kept as written (namespace resolution is the codec's). */
export interface XmlElement {
  readonly name: string;
  /** The attributes but namespace declarations (`NO_ATTRIBUTES` when there are none). */
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

/** What text needs a second look for: markup, CR, and every character `isXmlText` would refuse. */
// eslint-disable-next-line no-control-regex
const NOT_PLAIN = /[&<>\r\u0000-\u0008\u000b\u000c\u000e-\u001f\ufffe\uffff\ud800-\udfff]/;

/** True when text can be written as character data as it is: XML text with nothing to escape. */
export function isPlainText(text: string): boolean {
  return !NOT_PLAIN.test(text);
}

/** Character data: markup characters escaped, and CR as a reference so that no parser normalises it away. */
export function escapeText(text: string): string {
  if (!MARKUP.test(text)) return text;
  return text.replace(/[&<>\r]/g, (c) => (c === '&' ? '&amp;' : c === '<' ? '&lt;' : c === '>' ? '&gt;' : '&#13;'));
}
const MARKUP = /[&<>\r]/;
const ATTRIBUTE_MARKUP = /[&<>\r"\t\n]/;

/** An attribute value in double quotes: also quotes and the whitespace attribute normalisation would change. */
export function escapeAttribute(text: string): string {
  if (!ATTRIBUTE_MARKUP.test(text)) return text;
  return escapeText(text).replace(/["\t\n]/g, (c) => (c === '"' ? '&quot;' : c === '\t' ? '&#9;' : '&#10;'));
}

/** An element while its document is read: its children and text still growing. */
interface OpenElement {
  readonly name: string;
  readonly attributes: Readonly<Record<string, string>>;
  readonly declarations?: ReadonlyMap<string, string>;
  readonly children: XmlElement[];
  text: string;
}

/** A new element as both readers build it (one shape with declarations, one without). */
function openElement(
  name: string,
  attributes: Readonly<Record<string, string>> | undefined,
  declarations: ReadonlyMap<string, string> | undefined,
): OpenElement {
  return declarations
    ? { name, attributes: attributes ?? NO_ATTRIBUTES, declarations, children: [], text: '' }
    : { name, attributes: attributes ?? NO_ATTRIBUTES, children: [], text: '' };
}

/**
 * The limits both readers enforce at each start tag, in this order: `elements` so far, `depth` of the open
 * elements, then the length of `tooLong`, the first of the tag's names (its own, then its attributes')
 * longer than the limit, if any.
 */
function checkLimits(elements: number, depth: number, tooLong: string | undefined, limits: XmlLimits): void {
  if (elements > limits.maxElements)
    throw new SoapCodecError('XML_TOO_MANY_ELEMENTS', `the document has more than ${limits.maxElements} elements`);
  if (depth >= limits.maxDepth)
    throw new SoapCodecError('XML_TOO_DEEP', `elements nest deeper than ${limits.maxDepth}`);
  if (tooLong !== undefined)
    throw new SoapCodecError(
      'XML_NAME_TOO_LONG',
      `the name ${clip(tooLong)} is longer than ${limits.maxNameLength} characters`,
    );
}

// ---- the document's bytes ----

/** Charset labels of UTF-8, the one encoding read (docs/decisions.md, "SymXchange"). */
const UTF8_LABELS: ReadonlySet<string> = new Set(['utf-8', 'utf8']);
/** Strict: a byte sequence that is not UTF-8 throws instead of becoming U+FFFD; a leading BOM is skipped. */
const UTF8 = new TextDecoder('utf-8', { fatal: true });
/** The encoding an XML declaration names (XML 1.0, 2.8 and 4.3.3: it follows the version). */
const DECLARED_ENCODING =
  /^<\?xml[ \t\r\n]+version[ \t\r\n]*=[ \t\r\n]*(["'])[^"']*\1[ \t\r\n]+encoding[ \t\r\n]*=[ \t\r\n]*(["'])([^"']*)\2/;

/** The encoding the XML declaration at the start of `text` names, if it names one. */
function declaredEncoding(text: string): string | undefined {
  if (!text.startsWith('<?xml')) return undefined;
  const end = text.indexOf('?>');
  return DECLARED_ENCODING.exec(end === -1 ? text : text.slice(0, end))?.[3];
}

/** Where the first byte sequence that is not UTF-8 starts (on the failure path only: a binary search). */
function invalidUtf8Offset(bytes: Uint8Array): number {
  // A prefix decodes while it holds no bad sequence; a sequence it cuts short is held back, not refused.
  const decodes = (length: number) => {
    try {
      new TextDecoder('utf-8', { fatal: true }).decode(bytes.subarray(0, length), { stream: true });
      return true;
    } catch {
      return false;
    }
  };
  let [good, bad] = [0, bytes.length];
  while (bad - good > 1) {
    const middle = (good + bad) >>> 1;
    if (decodes(middle)) good = middle;
    else bad = middle;
  }
  // The byte at `at` broke a sequence: one it began, or one begun up to 3 bytes before and not yet complete.
  const at = bad - 1;
  for (let lead = at - 1; lead >= Math.max(0, at - 3); lead--) {
    const byte = bytes[lead]!;
    if ((byte & 0xc0) === 0x80) continue;
    const length = byte >= 0xf0 ? 4 : byte >= 0xe0 ? 3 : byte >= 0xc0 ? 2 : 1;
    return length > at - lead ? lead : at;
  }
  return at;
}

/**
 * A document's text from its bytes, read strictly as UTF-8: the Content-Type's `charset` (when given) and the
 * XML declaration's encoding (when it names one) must both name UTF-8, a UTF-8 byte order mark is skipped,
 * and bytes that are not UTF-8 are refused (XML_ENCODING_REFUSED, XML_INVALID_UTF8), never replaced.
 * @example decodeXmlBytes(new TextEncoder().encode('<a>é</a>'), 'utf-8') // '<a>é</a>'
 */
export function decodeXmlBytes(bytes: Uint8Array, charset?: string): string {
  const refused = (what: string) =>
    new SoapCodecError('XML_ENCODING_REFUSED', `${what}; coregate reads UTF-8 only (charset=utf-8)`);
  if (charset !== undefined && !UTF8_LABELS.has(charset.toLowerCase()))
    throw refused(`the Content-Type charset is ${clip(charset)}`);
  // A UTF-16 byte order mark, or the NUL bytes of `<` in UTF-16 or UTF-32 (XML 1.0, Appendix F).
  if ((bytes[0] === 0xfe && bytes[1] === 0xff) || (bytes[0] === 0xff && bytes[1] === 0xfe))
    throw refused('the body is UTF-16 (its byte order mark says so)');
  if (bytes.length >= 2 && (bytes[0] === 0 || bytes[1] === 0)) throw refused('the body is UTF-16 or UTF-32');
  const says = (encoding: string) =>
    `the XML declaration says encoding="${clip(encoding)}"${charset === undefined ? '' : ` and the Content-Type charset=${clip(charset)}`}`;
  let text: string;
  try {
    text = UTF8.decode(bytes);
  } catch {
    // A declaration of another encoding explains the bad bytes better than their offset does.
    const bom = bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf ? 3 : 0;
    const head = String.fromCharCode(...bytes.subarray(bom, bom + 1024));
    const encoding = declaredEncoding(head);
    if (encoding !== undefined && encoding.toLowerCase() !== 'utf-8') throw refused(says(encoding));
    throw new SoapCodecError(
      'XML_INVALID_UTF8',
      `the body is not UTF-8: the byte sequence at offset ${invalidUtf8Offset(bytes)} is not a character`,
    );
  }
  const encoding = declaredEncoding(text);
  if (encoding !== undefined && encoding.toLowerCase() !== 'utf-8') throw refused(says(encoding));
  return text;
}

/**
 * Parses a document safely: strict XML 1.0 (well-formed, only XML's characters), no DTD, the limits checked
 * on the way. Returns the root element; prefixes are kept as written (namespaces are the codec's).
 * A document in the plain shape SOAP toolkits write is read by `scanXml`; any other goes to saxes, which
 * also gives every refusal its message.
 * @example parseXml('<a><b>1</b></a>').children[0]?.text // '1'
 */
export function parseXml(xml: string, limits: XmlLimits = DEFAULT_XML_LIMITS): XmlElement {
  if (xml.length > limits.maxLength)
    throw new SoapCodecError('XML_TOO_LARGE', `the document exceeds ${limits.maxLength} characters`);
  return scanXml(xml, limits) ?? parseXmlWithSaxes(xml, limits);
}

/**
 * The strict, complete reading of a document (saxes): every construct, every error named. `parseXml` uses
 * it for what the scanner leaves; the scanner's tests compare the two.
 */
export function parseXmlWithSaxes(xml: string, limits: XmlLimits = DEFAULT_XML_LIMITS): XmlElement {
  const open: OpenElement[] = [];
  let root: OpenElement | undefined;
  let elements = 0;
  const parser = new SaxesParser({ xmlns: false, position: false });
  parser.on('doctype', () => {
    throw new SoapCodecError('XML_DTD_REFUSED', 'document type declarations and entity declarations are refused');
  });
  parser.on('opentag', (tag: SaxesTagPlain) => {
    elements += 1;
    let tooLong = tag.name.length > limits.maxNameLength ? tag.name : undefined;
    let declarations: Map<string, string> | undefined;
    let attributes: Record<string, string> | undefined;
    for (const name in tag.attributes) {
      if (name.length > limits.maxNameLength) tooLong ??= name;
      const value = tag.attributes[name]!;
      if (name === 'xmlns' || name.startsWith('xmlns:')) (declarations ??= new Map()).set(name.slice(6), value);
      else (attributes ??= Object.create(null) as Record<string, string>)[name] = value;
    }
    checkLimits(elements, open.length, tooLong, limits);
    const element = openElement(tag.name, attributes, declarations);
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
  // saxes's messages may quote the document (`duplicate attribute: <name>`).
  parser.on('error', (error: Error) => {
    throw new SoapCodecError('XML_MALFORMED', clip(error.message, 2 * QUOTED_LENGTH));
  });
  try {
    parser.write(xml).close();
  } catch (error) {
    if (error instanceof SoapCodecError) throw error;
    throw new SoapCodecError('XML_MALFORMED', clip((error as Error).message, 2 * QUOTED_LENGTH));
  }
  if (!root) throw new SoapCodecError('XML_MALFORMED', 'a document has exactly one root element');
  return root;
}

// ---- the plain-document scanner ----

const TAB = 9;
const LINE_FEED = 10;
const CARRIAGE_RETURN = 13;
const SPACE = 32;
const BANG = 33;
const QUOTE = 34;
const HASH = 35;
const APOSTROPHE = 39;
const SLASH = 47;
const LESS = 60;
const EQUALS = 61;
const GREATER = 62;
const LOWER_X = 120;

const isSpace = (c: number) => c === SPACE || c === LINE_FEED || c === TAB || c === CARRIAGE_RETURN;

/** True when text is empty or XML whitespace (space, tab, CR, LF), without trimming a copy. */
export function isBlank(text: string): boolean {
  for (let i = 0; i < text.length; i++) if (!isSpace(text.charCodeAt(i))) return false;
  return true;
}

/** ASCII name characters: 1 may start a name, 2 may only continue one (`-`, `.`, digits). */
const NAME_CHAR = new Uint8Array(128);
for (let c = 0; c < 128; c++) {
  const ch = String.fromCharCode(c);
  if (/[A-Za-z_:]/.test(ch)) NAME_CHAR[c] = 1;
  else if (/[-.0-9]/.test(ch)) NAME_CHAR[c] = 2;
}

/** The end of the ASCII name starting at `start` (`start` itself when none starts there). */
function nameEnd(xml: string, start: number): number {
  if (NAME_CHAR[xml.charCodeAt(start)] !== 1) return start;
  let i = start + 1;
  while (NAME_CHAR[xml.charCodeAt(i)]! > 0) i++;
  return i;
}

/** An XML declaration of version 1.0, as far as the scanner reads one. */
const XML_DECLARATION =
  /^<\?xml[ \t\n\r]+version[ \t\n\r]*=[ \t\n\r]*(?:"1\.0"|'1\.0')(?:[ \t\n\r]+encoding[ \t\n\r]*=[ \t\n\r]*(?:"[A-Za-z][A-Za-z0-9._-]*"|'[A-Za-z][A-Za-z0-9._-]*'))?(?:[ \t\n\r]+standalone[ \t\n\r]*=[ \t\n\r]*(?:"(?:yes|no)"|'(?:yes|no)'))?[ \t\n\r]*\?>/;

const PREDEFINED: ReadonlyMap<string, string> = new Map([
  ['lt', '<'],
  ['gt', '>'],
  ['amp', '&'],
  ['apos', "'"],
  ['quot', '"'],
]);

/** True for a code point XML 1.0's Char production allows. */
const isXmlCodePoint = (c: number) =>
  c === TAB ||
  c === LINE_FEED ||
  c === CARRIAGE_RETURN ||
  (c >= 0x20 && c <= 0xd7ff) ||
  (c >= 0xe000 && c <= 0xfffd) ||
  (c >= 0x10000 && c <= 0x10ffff);

/**
 * Character data or an attribute value with its references decoded: XML's five predefined entities and
 * character references; undefined for anything else (another entity, a bad reference), left to saxes.
 */
function decodeReferences(raw: string): string | undefined {
  let out = '';
  let from = 0;
  for (let amp = raw.indexOf('&'); amp !== -1; amp = raw.indexOf('&', from)) {
    const semicolon = raw.indexOf(';', amp + 1);
    if (semicolon === -1) return undefined;
    const name = raw.slice(amp + 1, semicolon);
    let decoded: string | undefined;
    if (name.charCodeAt(0) === HASH) {
      const hex = name.charCodeAt(1) === LOWER_X;
      const digits = name.slice(hex ? 2 : 1);
      if (!(hex ? /^[0-9a-fA-F]{1,6}$/ : /^[0-9]{1,7}$/).test(digits)) return undefined;
      const code = parseInt(digits, hex ? 16 : 10);
      if (!isXmlCodePoint(code)) return undefined;
      decoded = String.fromCodePoint(code);
    } else {
      decoded = PREDEFINED.get(name);
      if (decoded === undefined) return undefined;
    }
    out += raw.slice(from, amp) + decoded;
    from = semicolon + 1;
  }
  return from === 0 ? raw : out + raw.slice(from);
}

/** Character data as it stands between markup: undefined where saxes must judge (see `scanXml`). */
function textOf(raw: string): string | undefined {
  if (raw.indexOf('\r') !== -1 || raw.indexOf(']]>') !== -1) return undefined;
  return raw.indexOf('&') === -1 ? raw : decodeReferences(raw);
}

/** Where the comment at `i` ends, or -1 when no well-formed comment starts there. */
function commentEnd(xml: string, i: number): number {
  if (!xml.startsWith('<!--', i)) return -1;
  const end = xml.indexOf('-->', i + 4);
  if (end === -1) return -1;
  const comment = xml.slice(i + 4, end);
  return comment.includes('--') || comment.endsWith('-') ? -1 : end + 3;
}

/** Whitespace and comments from `i`: where they end, or -1 at a comment that is not well-formed. */
function skipMisc(xml: string, i: number): number {
  for (;;) {
    while (isSpace(xml.charCodeAt(i))) i++;
    if (!xml.startsWith('<!--', i)) return i;
    i = commentEnd(xml, i);
    if (i === -1) return -1;
  }
}

/**
 * The fast reading of a plain document: an optional XML 1.0 declaration, comments, elements with ASCII
 * names, attributes in either quotes, character data with XML's predefined entities and character
 * references. Everything it accepts is well-formed XML 1.0 and reads as saxes reads it (a property test
 * compares the two); at anything else (a DTD, CDATA, a processing instruction, a non-ASCII name, a raw CR or
 * whitespace to normalise in an attribute, any error) it answers undefined and the document goes to saxes.
 * The limits are enforced here as there.
 * @example scanXml('<a x="1">t</a>')?.attributes.x // '1'
 */
export function scanXml(xml: string, limits: XmlLimits = DEFAULT_XML_LIMITS): XmlElement | undefined {
  if (!isXmlText(xml)) return undefined;
  let i = 0;
  if (xml.startsWith('<?xml')) {
    const declaration = XML_DECLARATION.exec(xml);
    if (!declaration) return undefined;
    i = declaration[0].length;
  }
  i = skipMisc(xml, i);
  if (i === -1 || xml.charCodeAt(i) !== LESS) return undefined;
  const open: OpenElement[] = [];
  let root: OpenElement | undefined;
  let elements = 0;
  while (!root || open.length > 0) {
    const current = open[open.length - 1];
    const c = xml.charCodeAt(i);
    if (c !== LESS) {
      if (!current) return undefined;
      const next = xml.indexOf('<', i);
      if (next === -1) return undefined;
      const text = textOf(xml.slice(i, next));
      if (text === undefined) return undefined;
      current.text += text;
      i = next;
      continue;
    }
    const after = xml.charCodeAt(i + 1);
    if (after === SLASH) {
      // An end tag: the name of the innermost open element, optional whitespace, `>`.
      if (!current || !xml.startsWith(current.name, i + 2)) return undefined;
      let j = i + 2 + current.name.length;
      while (isSpace(xml.charCodeAt(j))) j++;
      if (xml.charCodeAt(j) !== GREATER) return undefined;
      open.pop();
      i = j + 1;
      continue;
    }
    if (after === BANG) {
      // A comment inside the root (the whitespace after it is the element's text); before the root,
      // comments were skipped, so this is a DTD or CDATA: saxes's.
      const end = commentEnd(xml, i);
      if (end === -1 || !current) return undefined;
      i = end;
      continue;
    }
    // A start tag: a name, attributes each after whitespace, then `>` or `/>`.
    const nameStop = nameEnd(xml, i + 1);
    if (nameStop === i + 1) return undefined;
    const name = xml.slice(i + 1, nameStop);
    let attributes: Record<string, string> | undefined;
    let declarations: Map<string, string> | undefined;
    // Judged once the whole tag is read, as saxes does: a tag broken further on is saxes's to refuse.
    let tooLong = name.length > limits.maxNameLength ? name : undefined;
    let j = nameStop;
    let empty = false;
    for (;;) {
      const spaced = isSpace(xml.charCodeAt(j));
      while (isSpace(xml.charCodeAt(j))) j++;
      const d = xml.charCodeAt(j);
      if (d === GREATER) {
        j += 1;
        break;
      }
      if (d === SLASH) {
        if (xml.charCodeAt(j + 1) !== GREATER) return undefined;
        j += 2;
        empty = true;
        break;
      }
      if (!spaced) return undefined;
      const attributeStop = nameEnd(xml, j);
      if (attributeStop === j) return undefined;
      const attribute = xml.slice(j, attributeStop);
      if (attribute.length > limits.maxNameLength) tooLong ??= attribute;
      j = attributeStop;
      while (isSpace(xml.charCodeAt(j))) j++;
      if (xml.charCodeAt(j) !== EQUALS) return undefined;
      j++;
      while (isSpace(xml.charCodeAt(j))) j++;
      const quote = xml.charCodeAt(j);
      if (quote !== QUOTE && quote !== APOSTROPHE) return undefined;
      const close = xml.indexOf(quote === QUOTE ? '"' : "'", j + 1);
      if (close === -1) return undefined;
      const raw = xml.slice(j + 1, close);
      // `<` is never allowed; whitespace other than spaces would be normalised: saxes's to judge and do.
      if (/[<\t\n\r]/.test(raw)) return undefined;
      const value = raw.indexOf('&') === -1 ? raw : decodeReferences(raw);
      if (value === undefined) return undefined;
      if (attribute === 'xmlns' || attribute.startsWith('xmlns:')) {
        const prefix = attribute.slice(6);
        declarations ??= new Map();
        if (declarations.has(prefix) || attribute === 'xmlns:') return undefined;
        declarations.set(prefix, value);
      } else {
        // A plain object (saxes's have no prototype): a name the prototype has, or a repeated one, is saxes's.
        attributes ??= {};
        if (attributes[attribute] !== undefined || attribute === '__proto__') return undefined;
        attributes[attribute] = value;
      }
      j = close + 1;
    }
    elements += 1;
    checkLimits(elements, open.length, tooLong, limits);
    const element = openElement(name, attributes, declarations);
    if (current) current.children.push(element);
    else root = element;
    if (!empty) open.push(element);
    i = j;
  }
  // After the root: only whitespace and comments.
  return skipMisc(xml, i) === xml.length ? root : undefined;
}

// ---- a document read as it arrives ----

/** The children of every element that has none, once it is read: one array, not one per leaf. */
const NO_CHILDREN: readonly XmlElement[] = Object.freeze([]);

export interface XmlStreamOptions {
  /**
   * At most this many children of one name are kept under one element; the others are still read and
   * checked, then dropped. Whoever decodes a list cuts it to its maximum: the one more kept says it was longer.
   */
  readonly maxRepeats?: number;
}

/**
 * A document read piece by piece as it arrives (a core's answer), with saxes and the refusals and limits of
 * `parseXmlWithSaxes`: a large answer costs the event loop one piece at a time, and memory only what is kept
 * (`maxElements` counts the elements kept; `maxLength` counts all the text written).
 * @example
 * const reader = new XmlStreamReader(DEFAULT_XML_LIMITS, { maxRepeats: 2 });
 * reader.write('<a><b/><b/>');
 * reader.write('<b/></a>');
 * reader.close().children.length // 2
 */
export class XmlStreamReader {
  readonly #limits: XmlLimits;
  readonly #maxRepeats: number;
  readonly #parser = new SaxesParser({ xmlns: false, position: false });
  readonly #open: { element: OpenElement; repeats?: Map<string, number> }[] = [];
  /** Names as first read: a list of 1,000 records holds each field's name once. */
  readonly #names = new Map<string, string>();
  #root: OpenElement | undefined;
  #elements = 0;
  #length = 0;
  /** Depth inside a dropped element (0: keeping). */
  #dropping = 0;

  constructor(limits: XmlLimits = DEFAULT_XML_LIMITS, options: XmlStreamOptions = {}) {
    this.#limits = limits;
    this.#maxRepeats = options.maxRepeats ?? Infinity;
    const parser = this.#parser;
    parser.on('doctype', () => {
      throw new SoapCodecError('XML_DTD_REFUSED', 'document type declarations and entity declarations are refused');
    });
    parser.on('opentag', (tag: SaxesTagPlain) => this.#opened(tag));
    parser.on('closetag', () => this.#closed());
    parser.on('text', (text: string) => this.#addText(text));
    parser.on('cdata', (text: string) => this.#addText(text));
    parser.on('error', (error: Error) => {
      throw new SoapCodecError('XML_MALFORMED', clip(error.message, 128));
    });
  }

  /** Reads the next piece of the document; throws a SoapCodecError at the first refusal. */
  write(text: string): void {
    this.#length += text.length;
    if (this.#length > this.#limits.maxLength)
      throw new SoapCodecError('XML_TOO_LARGE', `the document exceeds ${this.#limits.maxLength} characters`);
    this.#run(() => this.#parser.write(text));
  }

  /** The document's root, once all of it was written. */
  close(): XmlElement {
    this.#run(() => this.#parser.close());
    if (!this.#root) throw new SoapCodecError('XML_MALFORMED', 'a document has exactly one root element');
    return this.#root;
  }

  #run(step: () => void): void {
    try {
      step();
    } catch (error) {
      if (error instanceof SoapCodecError) throw error;
      throw new SoapCodecError('XML_MALFORMED', clip((error as Error).message, 128));
    }
  }

  #opened(tag: SaxesTagPlain): void {
    const limits = this.#limits;
    let tooLong = tag.name.length > limits.maxNameLength ? tag.name : undefined;
    for (const name in tag.attributes) if (name.length > limits.maxNameLength) tooLong ??= name;
    const parent = this.#open[this.#open.length - 1];
    // Inside a dropped element, or a child past the repeats kept of its name: read and checked, not kept.
    let drop = this.#dropping > 0;
    if (!drop && parent) {
      const repeats = (parent.repeats ??= new Map<string, number>());
      const seen = (repeats.get(tag.name) ?? 0) + 1;
      repeats.set(tag.name, seen);
      drop = seen > this.#maxRepeats;
    }
    if (drop) {
      checkLimits(this.#elements, this.#open.length + this.#dropping, tooLong, limits);
      this.#dropping += 1;
      return;
    }
    this.#elements += 1;
    checkLimits(this.#elements, this.#open.length, tooLong, limits);
    let declarations: Map<string, string> | undefined;
    let attributes: Record<string, string> | undefined;
    for (const name in tag.attributes) {
      const value = tag.attributes[name]!;
      if (name === 'xmlns' || name.startsWith('xmlns:')) (declarations ??= new Map()).set(name.slice(6), value);
      else (attributes ??= Object.create(null) as Record<string, string>)[name] = value;
    }
    let name = this.#names.get(tag.name);
    if (name === undefined) this.#names.set(tag.name, (name = tag.name));
    const element = openElement(name, attributes, declarations);
    if (parent) parent.element.children.push(element);
    else this.#root = element;
    this.#open.push({ element });
  }

  #closed(): void {
    if (this.#dropping > 0) {
      this.#dropping -= 1;
      return;
    }
    const closed = this.#open.pop();
    if (closed && closed.element.children.length === 0)
      (closed.element as { children: readonly XmlElement[] }).children = NO_CHILDREN;
  }

  #addText(text: string): void {
    if (this.#dropping > 0) return;
    const current = this.#open[this.#open.length - 1];
    if (current) current.element.text += text;
  }
}
