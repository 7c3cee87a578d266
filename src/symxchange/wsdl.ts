/**
 * The WSDL coregate serves for a SymXchange endpoint (`GET /SymXchange/<service>?wsdl`), generated from
 * the mapping: the endpoint's operations (the WSDLs' own and the derived ones) with their soapActions, and
 * every complex type their messages reach, in one document with one inline schema per namespace. Names,
 * namespaces, element order, occurrences, nillability, facets and which attributes are qualified are the
 * mapping's, so a client generated from it (node-soap, dotnet-svcutil, zeep) writes what the codec reads.
 * No vendor file is copied: everything is written from the facts.
 */
import {
  type SymxServiceName,
  type XsdAttribute,
  type XsdComplexType,
  type XsdElement,
  type XsdGroup,
  type XsdParticle,
  type XsdRestrictions,
} from '../catalog/symxchange/index.js';
import type { Family, SymxMapping, WireOperation } from './mapping.js';
import { escapeAttribute } from './xml.js';

const WSDL_NS = 'http://schemas.xmlsoap.org/wsdl/';
const SOAP_BINDING_NS = 'http://schemas.xmlsoap.org/wsdl/soap/';
const XSD_NS = 'http://www.w3.org/2001/XMLSchema';

const aliasOf = (name: string) => name.slice(0, name.lastIndexOf(':'));
const localOf = (name: string) => name.slice(name.lastIndexOf(':') + 1);

/** Facets in the order XML Schema lists them. */
function facets(restrictions: XsdRestrictions): string {
  const out: string[] = [];
  const add = (facet: string, value: string | number | undefined) => {
    if (value !== undefined) out.push(`<xsd:${facet} value="${escapeAttribute(String(value))}"/>`);
  };
  add('length', restrictions.length);
  add('minLength', restrictions.minLength);
  add('maxLength', restrictions.maxLength);
  add('pattern', restrictions.pattern);
  for (const value of restrictions.enumeration ?? []) add('enumeration', value);
  add('totalDigits', restrictions.totalDigits);
  add('fractionDigits', restrictions.fractionDigits);
  add('minInclusive', restrictions.minInclusive);
  add('maxInclusive', restrictions.maxInclusive);
  return out.join('');
}

const occurs = (particle: { minOccurs: number; maxOccurs: number | 'unbounded' }) =>
  ` minOccurs="${particle.minOccurs}" maxOccurs="${particle.maxOccurs}"`;

/**
 * The WSDL of one endpoint.
 * @example wsdlDocument(codec.mapping, { service: 'findby', family: 'P1' }, 'http://localhost:8627/SymXchange/findby')
 */
export function wsdlDocument(
  mapping: SymxMapping,
  endpoint: { readonly service: SymxServiceName; readonly family: Family },
  address: string,
): string {
  const service = mapping.service(endpoint.service);
  const serviceAlias = aliasOf(mapping.endpoint(endpoint.service, endpoint.family)[0]?.wire.request.element ?? ':');
  const wires: WireOperation[] = mapping
    .endpoint(endpoint.service, endpoint.family)
    .map(({ wire }) => wire)
    .sort((a, b) => a.name.localeCompare(b.name));

  // Every complex type the endpoint's messages reach, and the qualified attributes they reference.
  const reached = new Set<string>();
  const globalAttributes = new Map<string, XsdAttribute>();
  const visitGroup = (group: XsdGroup | undefined) =>
    group?.particles.forEach((particle) => {
      if (particle.kind === 'element') visit(particle.type);
      else if (particle.kind !== 'any') visitGroup(particle);
    });
  function visit(typeName: string): void {
    if (!mapping.isComplexType(typeName) || reached.has(typeName)) return;
    reached.add(typeName);
    const type = mapping.complexType(typeName, endpoint.family);
    if (type.base) visit(type.base);
    visitGroup(type.content);
    for (const attribute of type.attributes) {
      if (attribute.qualified && attribute.namespace !== undefined)
        globalAttributes.set(`${attribute.namespace}:${attribute.name}`, attribute);
    }
  }
  for (const wire of wires) [wire.request.child.type, wire.response.child.type].forEach(visit);

  // A prefix per namespace alias: the service's is tns, the others their last path segment.
  const aliases = [
    ...new Set([
      serviceAlias,
      'symxcommon',
      ...[...reached].map(aliasOf),
      ...[...globalAttributes.keys()].map(aliasOf),
    ]),
  ];
  const prefixes = new Map<string, string>();
  for (const alias of aliases) {
    const prefix = alias === serviceAlias ? 'tns' : alias.slice(alias.lastIndexOf('/') + 1);
    if ([...prefixes.values()].includes(prefix)) throw new Error(`two namespaces would share the prefix ${prefix}`);
    prefixes.set(alias, prefix);
  }
  const ref = (name: string) => (name.startsWith('xsd:') ? name : `${prefixes.get(aliasOf(name))}:${localOf(name)}`);
  const uriOf = (alias: string) => mapping.facts.qualifiedName(`${alias}:x`).namespace;

  const attributeXml = (attribute: XsdAttribute): string => {
    const use = attribute.use === 'required' ? ' use="required"' : '';
    const fallback = attribute.default === undefined ? '' : ` default="${escapeAttribute(attribute.default)}"`;
    if (attribute.qualified && attribute.namespace !== undefined)
      return `<xsd:attribute ref="${ref(`${attribute.namespace}:${attribute.name}`)}"${use}${fallback}/>`;
    return attribute.restrictions
      ? `<xsd:attribute name="${attribute.name}"${use}${fallback}><xsd:simpleType><xsd:restriction base="${attribute.type}">${facets(attribute.restrictions)}</xsd:restriction></xsd:simpleType></xsd:attribute>`
      : `<xsd:attribute name="${attribute.name}" type="${attribute.type}"${use}${fallback}/>`;
  };

  const elementXml = (element: XsdElement): string => {
    const head = `<xsd:element name="${element.name}"${occurs(element)}${element.nillable ? ' nillable="true"' : ''}`;
    if (mapping.isComplexType(element.type) && mapping.complexType(element.type, endpoint.family).anonymous)
      return `${head}>${complexTypeXml(mapping.complexType(element.type, endpoint.family))}</xsd:element>`;
    if (element.restrictions)
      return `${head}><xsd:simpleType><xsd:restriction base="${element.type}">${facets(element.restrictions)}</xsd:restriction></xsd:simpleType></xsd:element>`;
    return `${head} type="${ref(element.type)}"/>`;
  };

  const particleXml = (particle: XsdParticle): string => {
    if (particle.kind === 'element') return elementXml(particle);
    if (particle.kind === 'any')
      return `<xsd:any namespace="${particle.namespace}" processContents="${particle.processContents}"${occurs(particle)}/>`;
    return groupXml(particle);
  };

  const groupXml = (group: XsdGroup): string => {
    const bounds = group.minOccurs === 1 && group.maxOccurs === 1 ? '' : occurs(group);
    return `<xsd:${group.kind}${bounds}>${group.particles.map(particleXml).join('')}</xsd:${group.kind}>`;
  };

  function complexTypeXml(type: XsdComplexType, name?: string): string {
    const open = name ? `<xsd:complexType name="${name}">` : '<xsd:complexType>';
    const content = (type.content ? groupXml(type.content) : '') + type.attributes.map(attributeXml).join('');
    if (type.base)
      return `${open}<xsd:complexContent><xsd:extension base="${ref(type.base)}">${content}</xsd:extension></xsd:complexContent></xsd:complexType>`;
    return `${open}${content}</xsd:complexType>`;
  }

  const schemaXml = (alias: string): string => {
    const imports = aliases
      .filter((other) => other !== alias)
      .map((other) => `<xsd:import namespace="${uriOf(other)}"/>`)
      .join('');
    const attributes = [...globalAttributes.values()]
      .filter((attribute) => attribute.namespace === alias)
      .map((attribute) =>
        attribute.restrictions
          ? `<xsd:attribute name="${attribute.name}"><xsd:simpleType><xsd:restriction base="${attribute.type}">${facets(attribute.restrictions)}</xsd:restriction></xsd:simpleType></xsd:attribute>`
          : `<xsd:attribute name="${attribute.name}" type="${attribute.type}"/>`,
      )
      .join('');
    const wrappers =
      alias === serviceAlias
        ? wires
            .flatMap((wire) => [wire.request, wire.response])
            .map(
              (body) =>
                `<xsd:element name="${localOf(body.element)}"><xsd:complexType><xsd:sequence>` +
                `<xsd:element name="${body.child.name}" type="${ref(body.child.type)}"${occurs(body.child)}/>` +
                '</xsd:sequence></xsd:complexType></xsd:element>',
            )
            .join('')
        : '';
    const types = [...reached]
      .filter((name) => aliasOf(name) === alias && !mapping.complexType(name, endpoint.family).anonymous)
      .sort()
      .map((name) => complexTypeXml(mapping.complexType(name, endpoint.family), localOf(name)))
      .join('');
    return `<xsd:schema targetNamespace="${uriOf(alias)}" elementFormDefault="unqualified" attributeFormDefault="unqualified">${imports}${attributes}${wrappers}${types}</xsd:schema>`;
  };

  const declarations = [
    `xmlns:wsdl="${WSDL_NS}"`,
    `xmlns:soap="${SOAP_BINDING_NS}"`,
    `xmlns:xsd="${XSD_NS}"`,
    ...aliases.map((alias) => `xmlns:${prefixes.get(alias)}="${uriOf(alias)}"`),
  ].join(' ');
  const messages = wires
    .map(
      (wire) =>
        `<wsdl:message name="${wire.name}Request"><wsdl:part name="parameters" element="tns:${localOf(wire.request.element)}"/></wsdl:message>` +
        `<wsdl:message name="${wire.name}Response"><wsdl:part name="parameters" element="tns:${localOf(wire.response.element)}"/></wsdl:message>`,
    )
    .join('');
  const portType = wires
    .map(
      (wire) =>
        `<wsdl:operation name="${wire.name}"><wsdl:input message="tns:${wire.name}Request"/><wsdl:output message="tns:${wire.name}Response"/></wsdl:operation>`,
    )
    .join('');
  const binding = wires
    .map(
      (wire) =>
        `<wsdl:operation name="${wire.name}"><soap:operation soapAction="${wire.soapAction}" style="document"/>` +
        '<wsdl:input><soap:body use="literal"/></wsdl:input><wsdl:output><soap:body use="literal"/></wsdl:output></wsdl:operation>',
    )
    .join('');
  return (
    '<?xml version="1.0" encoding="UTF-8"?>\n' +
    `<wsdl:definitions name="${service.wsdlName}" targetNamespace="${service.targetNamespace}" ${declarations}>` +
    `<wsdl:documentation>coregate: SymXchange ${mapping.facts.release.release} ${service.wsdlName} (${endpoint.family === 'P1' ? 'persistent' : '2022.01'} family), generated from its record catalog and SymXchange mapping</wsdl:documentation>` +
    `<wsdl:types>${aliases.map(schemaXml).join('')}</wsdl:types>` +
    messages +
    `<wsdl:portType name="${service.portType}">${portType}</wsdl:portType>` +
    `<wsdl:binding name="${service.binding}" type="tns:${service.portType}"><soap:binding style="${service.style}" transport="${service.transport}"/>${binding}</wsdl:binding>` +
    `<wsdl:service name="${service.wsdlName}"><wsdl:port name="${service.port}" binding="tns:${service.binding}"><soap:address location="${escapeAttribute(address)}"/></wsdl:port></wsdl:service>` +
    '</wsdl:definitions>\n'
  );
}
