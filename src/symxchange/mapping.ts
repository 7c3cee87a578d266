/**
 * The SymXchange mapping (DESIGN, "The core boundary and SymXchange"): for each of coregate's operations
 * the SOAP operation that carries it, and every complex type its messages reach. It is derived, never
 * written per operation:
 * - Most operations are the published WSDLs' own (the facts); the P1 and P2 twins of a share update or read
 *   share one.
 * - The 18 collateral operations the 3.0 WSDLs lack each follow the WSDL operation the facts name as their
 *   sibling (docs/decisions.md, "SymXchange"): an element of their own name, and a request type that is the
 *   sibling's without the elements the operation's JSON lacks (`SelectableFields`, `PagingRequestContext`)
 *   and with the types its JSON needs where the sibling's are narrower (the full `<Record>SelectableFields`
 *   with child selectors, the `<Record>Filter` with a children filter). The list operations answer a
 *   `SingleResponse` holding the record's `<Record>List`; the others answer as their sibling.
 * - One widening where the spec's JSON carries more than the XSD: on the 2022.01 family
 *   `UpdateStatus.FailedUpdateStatus` repeats (the spec's P2 array reports every failed field; the XSD allows
 *   one). The persistent family keeps the XSD's one element (its JSON is a single object), so its WSDLs
 *   declare the vendor's type; the codec reads either by the JSON schema.
 */
import type { TSchema } from 'typebox';
import {
  FACTS_3_0,
  VERSION_ELEMENT,
  type SymxFacts,
  type SymxOperation,
  type SymxService,
  type SymxServiceName,
  type XsdComplexType,
  type XsdElement,
  type XsdGroup,
  type XsdParticle,
} from '../catalog/symxchange/index.js';
import { envelopeProperties } from '../contract/envelope.js';
import { jsonSchemas, type JsonSchema } from './json-schema.js';

export type Family = 'P1' | 'P2';

/** What the mapping needs of an operation (src/operations' `Operation` has these). */
export interface CodecOperation {
  readonly name: string;
  readonly service: string;
  readonly family: Family;
  readonly request: Readonly<Record<string, TSchema>>;
  readonly response: TSchema;
}

/** A SOAP operation coregate serves: one of the WSDLs', or one derived from its sibling. */
export interface WireOperation extends SymxOperation {
  /** For an operation the 3.0 WSDLs lack: the WSDL operation whose pattern it follows. */
  readonly derivedFrom?: string;
}

export interface SymxMapping {
  /** The facts of the release the mapping speaks. */
  readonly facts: SymxFacts;
  /** True for release 3.0, whose elements coregate's JSON was built from: every JSON property has its element. */
  readonly native: boolean;
  /** The SOAP operation of a coregate operation; throws for one without (logon, logoff, one the release lacks). */
  wireOperation(operation: CodecOperation): WireOperation;
  /** True when the operation has a SOAP operation in the release. */
  carries(operation: CodecOperation): boolean;
  /**
   * coregate's operations of the SymXchange services that the release has no SOAP operation for, neither its
   * own nor a sibling (its service may be missing altogether: 2020.00 has no collateral service).
   */
  readonly lacking: readonly CodecOperation[];
  /** A service of the release; throws for one it lacks. */
  service(name: SymxServiceName): SymxService;
  /**
   * The update object of an update's request, where the release puts the record's fields: its JSON property
   * (`ShareHoldFields`, `ShareHoldUpdatableFields`), its element (`ShareHoldFields` in 3.0,
   * `ShareHoldUpdateableFields` in 2020.00) and the fields its type holds; undefined for another operation.
   */
  updateObject(operation: CodecOperation): UpdateObject | undefined;
  /** coregate's operations of a service and path family, each with its SOAP operation. */
  endpoint(service: SymxServiceName, family: Family): { operation: CodecOperation; wire: WireOperation }[];
  /**
   * A complex type of the mapping (the facts', derived or widened); throws for an unknown name. With a
   * family, as that family's WSDLs declare it (the persistent family without the widening).
   */
  complexType(name: string, family?: Family): XsdComplexType;
  isComplexType(name: string): boolean;
}

/** Where an update's request carries the record's fields on the wire. */
export interface UpdateObject {
  readonly json: string;
  readonly element: string;
  readonly fields: ReadonlySet<string>;
}

/** A JSON property holding a record's fields to update: `<Record>Fields` (P1) or `<Record>UpdatableFields` (P2). */
const UPDATE_PROPERTY = /^([A-Z]\w*?)(?:Updatable)?Fields$/;

/** The widening of the spec's JSON over the XSD (see the module comment), by type and element: the 2022.01 family's. */
const WIDENED: Readonly<Record<string, Readonly<Record<string, Partial<XsdElement>>>>> = {
  'symxcommon:UpdateStatus': { FailedUpdateStatus: { maxOccurs: 'unbounded' } },
};

const SERVICES: readonly SymxServiceName[] = ['findby', 'corptransfer', 'account', 'collateral'];

function mapElements(group: XsdGroup, map: (element: XsdElement) => XsdElement | undefined): XsdGroup {
  const particles = group.particles.flatMap((particle): XsdParticle[] => {
    if (particle.kind === 'element') {
      const mapped = map(particle);
      return mapped ? [mapped] : [];
    }
    return particle.kind === 'any' ? [particle] : [mapElements(particle, map)];
  });
  return { ...group, particles };
}

function widen(name: string, type: XsdComplexType): XsdComplexType {
  const changes = WIDENED[name];
  if (!changes || !type.content) return type;
  return { ...type, content: mapElements(type.content, (e) => (changes[e.name] ? { ...e, ...changes[e.name] } : e)) };
}

/** The part of `longer` that `shorter` lacks: `getCollateralSelectFields` vs `getCollateral` → `SelectFields`. */
function removedPart(longer: string, shorter: string): string {
  let prefix = 0;
  while (prefix < shorter.length && longer[prefix] === shorter[prefix]) prefix += 1;
  const removed = longer.slice(prefix, longer.length - (shorter.length - prefix));
  if (!removed || !longer.endsWith(shorter.slice(prefix))) {
    throw new Error(`${shorter} is not ${longer} without one part`);
  }
  return removed;
}

/**
 * The mapping of a set of operations, whose schemas refer to the shared schemas by `$id`, onto one release's
 * facts (3.0's unless told).
 * @example createSymxMapping(OPERATIONS, SHARED_SCHEMAS).wireOperation(getCollateral).request.element
 *   // 'collateral:getCollateral'
 */
export function createSymxMapping(
  operations: readonly CodecOperation[],
  sharedSchemas: readonly TSchema[],
  facts: SymxFacts = FACTS_3_0,
): SymxMapping {
  const json = jsonSchemas(sharedSchemas);
  const types = new Map<string, XsdComplexType>(
    facts.complexTypeNames().map((name) => [name, widen(name, facts.complexType(name))]),
  );

  /** The elements of a type of the mapping, its base's first, groups flattened. */
  const elementsOf = (typeName: string): XsdElement[] => {
    const type = types.get(typeName);
    if (!type) return [];
    const elements = type.base ? elementsOf(type.base) : [];
    const visit = (group: XsdGroup | undefined) =>
      group?.particles.forEach((p) => (p.kind === 'element' ? elements.push(p) : p.kind !== 'any' && visit(p)));
    visit(type.content);
    return elements;
  };
  const elementNames = (typeName: string): Set<string> => new Set(elementsOf(typeName).map((e) => e.name));

  /**
   * The complex type of the service's namespaces that carries every property of a JSON object, with the
   * fewest elements besides: where a sibling's type is narrower than the operation's JSON.
   */
  function typeCarrying(service: SymxServiceName, properties: readonly string[]): string {
    const aliases = new Set(facts.service(service).schemaNamespaces);
    const fits = [...types.keys()]
      .filter((name) => aliases.has(name.slice(0, name.lastIndexOf(':'))))
      .map((name) => ({ name, elements: elementNames(name) }))
      .filter(({ elements }) => properties.every((p) => elements.has(p)))
      .sort((a, b) => a.elements.size - b.elements.size || a.name.localeCompare(b.name));
    if (!fits[0]) throw new Error(`no ${service} type carries ${properties.join(', ')}`);
    return fits[0].name;
  }

  const jsonPropertiesOf = (schema: JsonSchema | undefined): string[] =>
    Object.keys((schema && json.objectOf(schema)?.properties) ?? {});

  /** An operation the WSDLs lack, derived from its sibling (see the module comment). */
  function derive(operation: CodecOperation, sibling: SymxOperation): WireOperation {
    const service = sibling.service;
    const removed = removedPart(sibling.name, operation.name);
    const alias = sibling.request.element.slice(0, sibling.request.element.lastIndexOf(':'));
    const renamed = (typeName: string) => typeName.replace(removed, '');
    const define = (name: string, type: XsdComplexType) => {
      if (types.has(name)) throw new Error(`derived type ${name} is in the facts already`);
      types.set(name, type);
      return name;
    };

    const properties = operation.request as Readonly<Record<string, JsonSchema>>;
    const siblingRequest = types.get(sibling.request.child.type)!;
    const requestType = define(renamed(sibling.request.child.type), {
      ...siblingRequest,
      content: mapElements(siblingRequest.content!, (element) => {
        // The envelope is the same on every operation: its credentials choice is the sibling's own.
        if (
          element.name === VERSION_ELEMENT ||
          element.name === 'DeviceInformation' ||
          element.name in envelopeProperties
        )
          return element;
        const schema = properties[element.name];
        if (!schema) return undefined;
        const wanted = jsonPropertiesOf(schema);
        const carried = elementNames(element.type);
        return wanted.every((p) => carried.has(p)) ? element : { ...element, type: typeCarrying(service, wanted) };
      }),
    });

    const response = json.resolve(operation.response as JsonSchema);
    const listName = Object.keys(response.properties ?? {}).find((name) => {
      const property = response.properties![name]!;
      return jsonPropertiesOf(property).includes('hasReachedMaximumListSize');
    });
    const siblingResponse = types.get(sibling.response.child.type)!;
    const responseChild = listName
      ? {
          ...sibling.response.child,
          name: 'SingleResponse',
          type: define(renamed(sibling.response.child.type), {
            attributes: siblingResponse.attributes,
            content: {
              kind: 'sequence',
              minOccurs: 1,
              maxOccurs: 1,
              particles: [
                {
                  kind: 'element',
                  name: listName,
                  type: typeCarrying(service, jsonPropertiesOf(response.properties![listName])),
                  minOccurs: 0,
                  maxOccurs: 1,
                  nillable: false,
                },
                // The sibling's optional Version_1 group closes the response as in every type.
                ...siblingResponse.content!.particles.filter((p) => p.kind === 'sequence'),
              ],
            },
          }),
        }
      : sibling.response.child;

    return {
      ...sibling,
      name: operation.name,
      soapAction: `${facts.service(service).targetNamespace}/${operation.name}`,
      coregateFamilies: [operation.family],
      siblingOf: [],
      request: { element: `${alias}:${operation.name}`, child: { ...sibling.request.child, type: requestType } },
      response: { element: `${alias}:${operation.name}Response`, child: responseChild },
      derivedFrom: sibling.name,
    };
  }

  const wires = new Map<CodecOperation, WireOperation>();
  const lacking: CodecOperation[] = [];
  for (const operation of operations) {
    if (!SERVICES.includes(operation.service as SymxServiceName)) continue;
    const own = facts.operation(operation.service, operation.name);
    if (own) {
      wires.set(operation, own);
      continue;
    }
    const sibling = facts
      .operations(operation.service as SymxServiceName)
      .find((op) => op.siblingOf.includes(operation.name));
    if (sibling) wires.set(operation, derive(operation, sibling));
    else lacking.push(operation);
  }

  const updateObjects = new Map<CodecOperation, UpdateObject | undefined>();
  /** The facts name each record's update object; the JSON property holding its fields names the record. */
  function findUpdateObject(operation: CodecOperation): UpdateObject | undefined {
    if (!wires.has(operation)) return undefined;
    for (const json of Object.keys(operation.request)) {
      const record = UPDATE_PROPERTY.exec(json)?.[1];
      const found = record === undefined ? undefined : facts.updateObject(record);
      if (!found) continue;
      const fields = new Set([...elementNames(found.type)].filter((name) => name !== VERSION_ELEMENT));
      return { json, element: found.element, fields };
    }
    return undefined;
  }

  return {
    facts,
    native: facts === FACTS_3_0,
    updateObject(operation) {
      if (!updateObjects.has(operation)) updateObjects.set(operation, findUpdateObject(operation));
      return updateObjects.get(operation);
    },
    wireOperation(operation) {
      const wire = wires.get(operation);
      if (!wire)
        throw new Error(`${operation.service}/${operation.name} has no SymXchange ${facts.release.release} operation`);
      return wire;
    },
    carries: (operation) => wires.has(operation),
    lacking,
    service: (name) => facts.service(name),
    endpoint(service, family) {
      return [...wires]
        .filter(([operation]) => operation.service === service && operation.family === family)
        .map(([operation, wire]) => ({ operation, wire }));
    },
    complexType(name, family) {
      const type = types.get(name);
      if (!type) throw new Error(`complex type ${name} is not in the SymXchange mapping`);
      return family === 'P1' && WIDENED[name] ? facts.complexType(name) : type;
    },
    isComplexType: (name) => types.has(name),
  };
}
