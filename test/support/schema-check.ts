/**
 * Whether a SOAP request is what a release's XSDs allow, read from the release's facts (the vendor's, not
 * coregate's WSDL): the body's element is one of the release's operations in its service's namespace, and
 * below it each element is declared by its parent's type, in the type's order (an extension's base first),
 * at most maxOccurs times, unqualified; each attribute is declared, qualified as the XSD says. Nothing of the
 * codec is used, so a codec that writes another release's shape is caught.
 */
import type { SymxFacts, SymxServiceName, XsdElement } from '../../src/catalog/symxchange/index.js';
import { parseXml, type XmlElement } from '../../src/symxchange/xml.js';

const local = (name: string) => name.slice(name.indexOf(':') + 1);
const prefix = (name: string) => (name.includes(':') ? name.slice(0, name.indexOf(':')) : '');

/** Every violation of `xml` (a SOAP envelope sent to `service`) against the release; empty when valid. */
export function requestViolations(facts: SymxFacts, service: SymxServiceName, xml: string): string[] {
  const envelope = parseXml(xml);
  const body = envelope.children.find((child) => local(child.name) === 'Body');
  const wrapper = body?.children[0];
  if (!wrapper) return ['no element in the Body'];
  const operation = facts.operation(service, local(wrapper.name));
  if (!operation) return [`${wrapper.name} is no ${service} operation of SymXchange ${facts.release.release}`];
  const violations: string[] = [];
  const namespaces = new Map<string, string>();
  for (const element of [envelope, body!, wrapper])
    for (const [key, uri] of element.declarations ?? []) namespaces.set(key, uri);
  const expected = facts.service(service).targetNamespace;
  if (namespaces.get(prefix(wrapper.name)) !== expected) violations.push(`${wrapper.name} is not in ${expected}`);
  const [child, ...more] = wrapper.children;
  if (!child || more.length > 0 || child.name !== operation.request.child.name)
    return [...violations, `${wrapper.name} must hold one ${operation.request.child.name}`];
  check(facts, operation.request.child.type, child, `${local(wrapper.name)}/${child.name}`, namespaces, violations);
  return violations;
}

function check(
  facts: SymxFacts,
  typeName: string,
  element: XmlElement,
  path: string,
  namespaces: Map<string, string>,
  violations: string[],
): void {
  const scope = new Map(namespaces);
  for (const [key, uri] of element.declarations ?? []) scope.set(key, uri);
  const declared: XsdElement[] = [...facts.elementsOf(typeName)];
  // Attributes: each declared, a qualified one in its namespace, an unqualified one without a prefix.
  const attributes = [];
  for (let base: string | undefined = typeName; base; base = facts.complexType(base).base)
    attributes.push(...facts.complexType(base).attributes);
  for (const name of Object.keys(element.attributes)) {
    if (prefix(name) === 'xsi') continue;
    const attribute = attributes.find((a) => a.name === local(name));
    if (!attribute) violations.push(`${path}/@${name} is not declared by ${typeName}`);
    else if (attribute.qualified !== (prefix(name) !== ''))
      violations.push(`${path}/@${name} must be ${attribute.qualified ? '' : 'un'}qualified`);
  }
  let position = 0;
  let count = 0;
  let previous = '';
  for (const child of element.children) {
    const name = child.name;
    if (name.includes(':')) violations.push(`${path}/${name}: SymXchange elements are unqualified`);
    const index = declared.findIndex((e) => e.name === local(name));
    if (index < 0) {
      violations.push(`${path}/${name} is not declared by ${typeName}`);
      continue;
    }
    if (index < position) violations.push(`${path}/${name} comes after ${previous}, against ${typeName}'s order`);
    count = index === position ? count + 1 : 1;
    position = Math.max(position, index);
    previous = name;
    const declaration = declared[index]!;
    if (typeof declaration.maxOccurs === 'number' && count > declaration.maxOccurs)
      violations.push(`${path}/${name} occurs more than ${declaration.maxOccurs} times`);
    if (facts.isComplexType(declaration.type))
      check(facts, declaration.type, child, `${path}/${local(name)}`, scope, violations);
  }
}
