/**
 * The SOAP face reads plain envelopes with its own scanner (`scanXml`) and leaves every other document to
 * saxes. The scanner must never accept what saxes refuses, never read a document differently, and enforce
 * the same limits; these properties compare the two on generated documents, well-formed and broken. Below
 * them, how a document's bytes become its text: UTF-8 only, strictly.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import {
  decodeXmlBytes,
  DEFAULT_XML_LIMITS,
  parseXml,
  parseXmlWithSaxes,
  scanXml,
  SoapCodecError,
  type XmlElement,
  type XmlLimits,
} from '../src/symxchange/xml.js';

/** Small limits, so that generated documents meet them: names like `tns:findBySSN` (13) are one too long. */
const LIMITS: XmlLimits = { maxLength: 100_000, maxDepth: 6, maxElements: 40, maxNameLength: 12 };

/** A tree as plain data: attributes without their prototype, declarations as entries. */
function plain(element: XmlElement): unknown {
  return {
    name: element.name,
    attributes: { ...element.attributes },
    declarations: element.declarations ? [...element.declarations] : undefined,
    text: element.text,
    children: element.children.map(plain),
  };
}

type Outcome = { readonly tree: unknown } | { readonly code: string };

function outcome(read: () => XmlElement | undefined): Outcome | undefined {
  try {
    const tree = read();
    return tree && { tree: plain(tree) };
  } catch (error) {
    if (error instanceof SoapCodecError) return { code: error.code };
    throw error;
  }
}

/** What the scanner did with a document, checked against saxes; true when the scanner read it itself. */
function agrees(xml: string): boolean {
  const scanned = outcome(() => scanXml(xml, LIMITS));
  if (scanned === undefined) return false;
  assert.deepEqual(
    scanned,
    outcome(() => parseXmlWithSaxes(xml, LIMITS)),
    `for ${JSON.stringify(xml)}`,
  );
  return true;
}

// ---- documents ----

const name = fc.oneof(
  fc.constantFrom('a', 'Request', 'SSN', 'soapenv:Body', 'tns:findBySSN', 'x-y.z', '_1', 'a:b:c'),
  fc.constantFrom('é', 'naïve', '1a', '-a', 'a b', ''),
);
const plainName = fc.constantFrom(
  'a',
  'Request',
  'SSN',
  'soapenv:Body',
  'cmn:MessageId',
  'x-y.z',
  '_1',
  'xmlns',
  'xmlns:p',
);
const piece = fc.oneof(
  { weight: 6, arbitrary: fc.string({ unit: fc.constantFrom('a', 'Z', '0', ' ', '.', '-', 'é', '€', '😀') }) },
  fc.constantFrom('&lt;', '&gt;', '&amp;', '&apos;', '&quot;', '&#65;', '&#x41;', '&#x1F600;', '&#13;', '&#9;'),
  fc.constantFrom('&bogus;', '&#0;', '&#xD800;', '&#X41;', '&#;', '&amp', '&', '<', '>', ']]>', ']]', '"', "'"),
  fc.constantFrom('\r', '\r\n', '\n', '\t', '\u0001', '\ufffe', '\ud800', '\u00a0', '\u2028'),
  fc.constantFrom('<![CDATA[x<y]]>', '<!-- c -->', '<!-- a--b -->', '<!---->', '<!-- c--->', '<?pi x?>'),
);
const text = fc.array(piece, { maxLength: 4 }).map((parts) => parts.join(''));
const plainText = fc.string({ unit: fc.constantFrom('a', '1', ' ', '\n', '\t', 'é', '&amp;', '&#x41;', '>') });
const quote = fc.constantFrom('"', "'");
const space = fc.constantFrom(' ', '  ', '\n', '\t', '\r\n');

interface Node {
  readonly name: string;
  readonly attributes: readonly (readonly [string, string, string, string])[];
  readonly children: readonly (Node | string)[];
  readonly close: 'match' | 'empty' | 'other';
}

const node = (depth: number): fc.Arbitrary<Node> =>
  fc.record({
    name,
    attributes: fc.array(fc.tuple(name, text, quote, space), { maxLength: 3 }),
    children: depth === 0 ? fc.constant([]) : fc.array(fc.oneof(node(depth - 1), text), { maxLength: 4 }),
    close: fc.constantFrom('match' as const, 'match' as const, 'match' as const, 'empty' as const, 'other' as const),
  });

function write(n: Node | string): string {
  if (typeof n === 'string') return n;
  const attributes = n.attributes
    .map(
      ([attribute, value, q, s]) => `${s}${attribute}=${q}${value.replaceAll(q, q === '"' ? '&quot;' : '&apos;')}${q}`,
    )
    .join('');
  if (n.close === 'empty' && n.children.length === 0) return `<${n.name}${attributes}/>`;
  const end = n.close === 'other' ? `${n.name}x` : n.name;
  return `<${n.name}${attributes}>${n.children.map(write).join('')}</${end}>`;
}

const prolog = fc.constantFrom(
  '',
  '<?xml version="1.0"?>',
  '<?xml version="1.0" encoding="UTF-8"?>\n',
  "<?xml version='1.0' encoding='utf-8' standalone='yes'?>",
  '<?xml  version = "1.0"  ?>',
  '<?xml version="1.1"?>',
  '<?xml encoding="UTF-8"?>',
  '<?xml version="1.0" standalone="maybe"?>',
  '<!DOCTYPE a>',
  '<!DOCTYPE a [<!ENTITY e "x">]>',
  '\ufeff',
  '<!-- before -->\n',
  ' ',
  'x',
);
const epilog = fc.constantFrom('', '\n', '<!-- after -->', '<!-- a -- b -->', '<a/>', 'x', '<?pi?>', '\r\n');

const documents = fc.tuple(prolog, node(3), epilog).map(([before, root, after]) => `${before}${write(root)}${after}`);

/** Documents in the plain shape: the scanner must read every one of them itself. */
const plainNode = (depth: number): fc.Arbitrary<Node> =>
  fc.record({
    name: plainName,
    attributes: fc
      .uniqueArray(fc.tuple(plainName, plainText, quote, space), { maxLength: 3, selector: ([attribute]) => attribute })
      .map((attributes) => attributes.map(([a, v, q, s]) => [a, v.replace(/[\t\n]/g, ' '), q, s] as const)),
    children:
      depth === 0
        ? fc.constant([])
        : fc.array(fc.oneof(plainNode(depth - 1), plainText), { maxLength: 3 }).map((children) =>
            // Adjacent texts are one text; keep them apart so that the document says what was generated.
            children.filter((child, i) => typeof child !== 'string' || typeof children[i - 1] !== 'string'),
          ),
    close: fc.constantFrom('match' as const, 'empty' as const),
  });

/** Single-character edits at random places: where a scanner's shortcut would go wrong. */
const mutated = fc
  .tuple(
    documents,
    fc.array(
      fc.tuple(
        fc.nat(),
        fc.constantFrom('<', '>', '/', '&', ';', '"', "'", '=', ' ', '!', '-', '?', ':', '#', '\r', ''),
      ),
      { minLength: 1, maxLength: 3 },
    ),
  )
  .map(([xml, edits]) =>
    edits.reduce((doc, [at, char]) => {
      const i = doc.length === 0 ? 0 : at % doc.length;
      return doc.slice(0, i) + char + doc.slice(i + (char === '' ? 1 : 0));
    }, xml),
  );

describe('the plain-document scanner reads as saxes reads, or leaves the document to saxes', () => {
  test('generated documents, well-formed or not: the same tree or the same refusal', () => {
    fc.assert(
      fc.property(documents, (xml) => void agrees(xml)),
      { numRuns: 3000 },
    );
  });

  test('documents with single-character edits: the same tree or the same refusal', () => {
    fc.assert(
      fc.property(mutated, (xml) => void agrees(xml)),
      { numRuns: 3000 },
    );
  });

  test('a document in the plain shape SOAP toolkits write is read by the scanner itself', () => {
    fc.assert(
      fc.property(
        fc.tuple(fc.constantFrom('', '<?xml version="1.0" encoding="UTF-8"?>\n'), plainNode(4)),
        ([before, root]) => assert.ok(agrees(`${before}${write(root)}`), 'the scanner left a plain document to saxes'),
      ),
      { numRuns: 1000 },
    );
  });

  test('a DTD, CDATA, a processing instruction or a non-ASCII name go to saxes', () => {
    for (const xml of [
      '<!DOCTYPE a [<!ENTITY x SYSTEM "file:///etc/passwd">]><a>&x;</a>',
      '<a><![CDATA[<b>]]></a>',
      '<a><?pi?></a>',
      '<é/>',
      '<a x="1\n2"/>',
      '<a>\r\n</a>',
      '<a>&nbsp;</a>',
    ])
      assert.equal(scanXml(xml, LIMITS), undefined, xml);
  });

  test('the limits are the same: depth and element count refused with their codes', () => {
    assert.throws(() => scanXml(`${'<a>'.repeat(7)}${'</a>'.repeat(7)}`, LIMITS), { code: 'XML_TOO_DEEP' });
    assert.throws(() => scanXml(`<a>${'<b/>'.repeat(40)}</a>`, LIMITS), { code: 'XML_TOO_MANY_ELEMENTS' });
    assert.ok(scanXml(`${'<a>'.repeat(6)}${'</a>'.repeat(6)}`, LIMITS));
  });

  test('an element or attribute name over the limit is refused by both readers, the error quoting a clipped name', () => {
    const long = 'n'.repeat(200_000);
    for (const xml of [
      `<${long}/>`,
      `<a ${long}="1"/>`,
      `<a xmlns:${long}="urn:x"/>`,
      `<a><![CDATA[x]]><${long}/></a>`,
    ]) {
      // parseXml: the scanner, or saxes where it leaves the document (CDATA).
      for (const read of [() => parseXml(xml), () => parseXmlWithSaxes(xml)]) {
        assert.throws(read, (error: SoapCodecError) => {
          assert.equal(error.code, 'XML_NAME_TOO_LONG');
          assert.ok(error.message.length < 200, `${error.message.length} characters`);
          return true;
        });
      }
    }
    assert.ok(scanXml(`<${'n'.repeat(DEFAULT_XML_LIMITS.maxNameLength)}/>`), 'a name at the limit is read');
  });

  test("saxes's own messages are clipped where they quote the document", () => {
    const long = 'n'.repeat(200_000);
    assert.throws(
      () => parseXmlWithSaxes(`<a ${long}="1" ${long}="2"/>`, { ...DEFAULT_XML_LIMITS, maxNameLength: Infinity }),
      (error: SoapCodecError) => error.code === 'XML_MALFORMED' && error.message.length < 200,
    );
  });
});

describe('a document is read from its bytes as UTF-8 only', () => {
  const bytes = (text: string) => new TextEncoder().encode(text);
  const refusedWith = (code: string, read: () => unknown) =>
    assert.throws(read, (error: SoapCodecError) => error.code === code);

  test('UTF-8, with or without a byte order mark, charset utf-8 or none, decodes to its text', () => {
    const xml = '<?xml version="1.0" encoding="UTF-8"?><a>Zoë € 😀</a>';
    assert.equal(decodeXmlBytes(bytes(xml), 'utf-8'), xml);
    assert.equal(decodeXmlBytes(bytes(xml), 'UTF-8'), xml);
    assert.equal(decodeXmlBytes(bytes(`\ufeff${xml}`)), xml, 'the byte order mark is skipped');
  });

  test('bytes that are not UTF-8 are refused with the offset, never replaced', () => {
    const latin1 = Uint8Array.from([...bytes('<a>Zo'), 0xeb, ...bytes('</a>')]);
    assert.throws(
      () => decodeXmlBytes(latin1, 'utf-8'),
      (error: SoapCodecError) => error.code === 'XML_INVALID_UTF8' && /offset 5\b/.test(error.message),
    );
    const overlong = Uint8Array.from([...bytes('<a>'), 0xc0, 0xaf, ...bytes('</a>')]);
    refusedWith('XML_INVALID_UTF8', () => decodeXmlBytes(overlong));
  });

  test('another charset, another declared encoding, or UTF-16 is refused', () => {
    refusedWith('XML_ENCODING_REFUSED', () => decodeXmlBytes(bytes('<a/>'), 'iso-8859-1'));
    refusedWith('XML_ENCODING_REFUSED', () =>
      decodeXmlBytes(bytes('<?xml version="1.0" encoding="ISO-8859-1"?><a/>'), 'utf-8'),
    );
    // The declaration, not the bad byte, explains a Latin-1 document.
    const latin1 = Uint8Array.from([
      ...bytes("<?xml version='1.0' encoding='iso-8859-1'?><a>"),
      0xe9,
      ...bytes('</a>'),
    ]);
    refusedWith('XML_ENCODING_REFUSED', () => decodeXmlBytes(latin1));
    const utf16 = Uint8Array.from([0xff, 0xfe, ...[...'<a/>'].flatMap((c) => [c.charCodeAt(0), 0])]);
    refusedWith('XML_ENCODING_REFUSED', () => decodeXmlBytes(utf16));
    refusedWith('XML_ENCODING_REFUSED', () => decodeXmlBytes(utf16.subarray(2)));
  });
});
