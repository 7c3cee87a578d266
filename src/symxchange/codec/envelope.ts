/**
 * The SOAP 1.1 envelope around an operation's body element: written with the declarations its content
 * needs, and read back to the Body's single element and the Header's entries, with the namespaces in scope
 * at each (namespaces.ts). Mandatory header entries are refused here (coregate understands none). What
 * lies inside the body element is the operation shapes' (shapes.ts).
 */
import { SOAP_ENVELOPE_NS } from '../faults.js';
import type { SymxMapping, WireOperation } from '../mapping.js';
import { clip, isBlank, NO_ATTRIBUTES, parseXml, SoapCodecError, type XmlElement, type XmlLimits } from '../xml.js';
import { localName, namespaceOf, NO_SCOPE, resolveName, withDeclarations, XSI_NS, type Scope } from './namespaces.js';
import { quoted, violation } from './violations.js';

/**
 * The Envelope's declarations: SOAP's, the service's and symxcommon's (as the mapping's release names them),
 * and XML Schema instance only when the content uses it (an `xsi:nil`; text that names it only adds the
 * declaration).
 */
const namespaces = (mapping: SymxMapping, wire: WireOperation, childXml: string) =>
  `${declarationsOf(mapping, wire)}${childXml.includes('xsi:') ? ` xmlns:xsi="${XSI_NS}"` : ''}`;

/** The declarations every envelope of an operation of a release opens with, written once for each. */
const declared = new WeakMap<SymxMapping, Map<WireOperation, string>>();
function declarationsOf(mapping: SymxMapping, wire: WireOperation): string {
  let byWire = declared.get(mapping);
  if (!byWire) declared.set(mapping, (byWire = new Map()));
  let declarations = byWire.get(wire);
  if (declarations === undefined) {
    declarations =
      `xmlns:soapenv="${SOAP_ENVELOPE_NS}" xmlns:tns="${mapping.service(wire.service).targetNamespace}" ` +
      `xmlns:cmn="${mapping.facts.qualifiedName('symxcommon:x').namespace}"`;
    byWire.set(wire, declarations);
  }
  return declarations;
}

/**
 * An envelope whose Body holds `bodyElement` (in the service's namespace) around `childXml`.
 * @example envelope(mapping, wire, 'findBySSN', '<Request MessageId="m1">…</Request>')
 */
export const envelope = (mapping: SymxMapping, wire: WireOperation, bodyElement: string, childXml: string) =>
  `<soapenv:Envelope ${namespaces(mapping, wire, childXml)}><soapenv:Header/><soapenv:Body>` +
  `<tns:${bodyElement}>${childXml}</tns:${bodyElement}></soapenv:Body></soapenv:Envelope>`;

/** An entry of the SOAP Header, with the namespaces in scope at it. */
export interface HeaderEntry {
  readonly entry: XmlElement;
  readonly scope: Scope;
}

/** The single element of the Body, with its scope, after checking the envelope; the Header's entries too. */
export function bodyElementOf(
  xml: string | XmlElement,
  limits: XmlLimits,
): {
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
  if (body.child.children.length !== 1) throw new SoapCodecError('SOAP_NOT_AN_ENVELOPE', 'the Body holds one element');
  const element = body.child.children[0]!;
  const scope = withDeclarations(element, body.scope);
  const name = resolveName(element.name, scope, false);
  return { element, scope, ...name, headers };
}

/** The wrapper's single child (`Request`, `SingleResponse`, …), unqualified. */
export function wrapperChild(element: XmlElement, scope: Scope, expected: string): { child: XmlElement; scope: Scope } {
  if (!isBlank(element.text)) throw violation('character data in element-only content');
  if (element.children.length !== 1) throw violation(`the body element holds one ${expected}`);
  const child = element.children[0]!;
  const childScope = withDeclarations(child, scope);
  const name = resolveName(child.name, childScope, false);
  if (name.uri !== '' || name.local !== expected) throw violation(`expected an unqualified ${expected}`, child.name);
  return { child, scope: childScope };
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
export function refuseMandatoryHeaders(headers: readonly HeaderEntry[]): void {
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
