/**
 * Names as a reader meets them: prefixes resolved against the namespace declarations in scope, and
 * `xsi:nil`. The parser (xml.ts) keeps names as written with each element's own declarations; the
 * decoders (decode.ts) and the envelope (envelope.ts) carry a `Scope` down the tree and resolve a name only
 * where the fast path (an unprefixed element with no default namespace) does not already say it.
 */
import { clip, NO_ATTRIBUTES, SoapCodecError, type XmlElement } from '../xml.js';

export const XSI_NS = 'http://www.w3.org/2001/XMLSchema-instance';

/** The namespace declarations in scope: prefix ('' for the default namespace) → URI. */
export type Scope = ReadonlyMap<string, string>;
export const NO_SCOPE: Scope = new Map();

/** The local part of a prefixed name. */
export const localName = (name: string) => name.slice(name.indexOf(':') + 1);

/** Adds the namespace declarations an element carries to its parent's scope. */
export function withDeclarations(element: XmlElement, scope: Scope): Scope {
  if (!element.declarations) return scope;
  const next = new Map(scope);
  for (const [prefix, uri] of element.declarations) next.set(prefix, uri);
  return next;
}

/** The namespace URI of a prefixed name ('' for no namespace). */
export function namespaceOf(name: string, scope: Scope, isAttribute: boolean): string {
  const colon = name.indexOf(':');
  if (colon === -1) return isAttribute ? '' : (scope.get('') ?? '');
  const uri = scope.get(name.slice(0, colon));
  if (uri === undefined) throw new SoapCodecError('XML_MALFORMED', `undeclared namespace prefix in ${clip(name)}`);
  return uri;
}

/** Namespace URI and local name of a prefixed name. */
export function resolveName(name: string, scope: Scope, isAttribute: boolean): { uri: string; local: string } {
  return { uri: namespaceOf(name, scope, isAttribute), local: localName(name) };
}

/** Whether an element says `xsi:nil="true"` (or "1"), `scope` including its own declarations. */
export function isNil(element: XmlElement, scope: Scope): boolean {
  if (element.attributes === NO_ATTRIBUTES) return false;
  for (const name in element.attributes) {
    if (!name.endsWith(':nil')) continue;
    const value = element.attributes[name];
    if (namespaceOf(name, scope, true) === XSI_NS && (value === 'true' || value === '1')) return true;
  }
  return false;
}
