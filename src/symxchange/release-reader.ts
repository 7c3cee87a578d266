/**
 * Reads a SymXchange release from its WSDLs and XSDs: the services, the SOAP operations that correspond to
 * coregate's operations (and the siblings of those a release lacks), and every complex type their messages
 * reach, as a `SymxRelease`. scripts/symxchange-facts.ts generates the releases coregate knows with it; a
 * gateway reads a core's own release with it (`<endpoint>?wsdl` and its imports, or a directory of files).
 *
 * What a core serves is read as hostile input: the project's safe XML parser (no DTD, so no entity is ever
 * declared or expanded), bounded documents, document count, import depth and names, imports that stay on the
 * WSDL's origin or under its directory, and every construct this reader does not understand refused by name
 * (`unsupported <xsd:group> in …`) rather than guessed at. Each error names the document at fault.
 */
import { posix } from 'node:path';
import { RECORDS, type Family } from '../catalog/index.js';
import { releaseFacts, VERSION_ELEMENT } from '../catalog/symxchange/index.js';
import type {
  MaxOccurs,
  SymxNamespace,
  SymxOperation,
  SymxRelease,
  SymxService,
  SymxServiceName,
  SymxSource,
  SymxUpdateObject,
  XsdAttribute,
  XsdComplexType,
  XsdElement,
  XsdGroup,
  XsdParticle,
  XsdRestrictions,
} from '../catalog/symxchange/types.js';
import { clip, parseXml, SoapCodecError, type XmlElement } from './xml.js';

const XSD = 'http://www.w3.org/2001/XMLSchema';
const WSDL = 'http://schemas.xmlsoap.org/wsdl/';
const SOAP11 = 'http://schemas.xmlsoap.org/wsdl/soap/';
const XML_NS = 'http://www.w3.org/XML/1998/namespace';
/** The base of every SymXchange namespace; what follows it names the namespace's role. */
const SYMX_BASE = 'http://www.symxchange.generated.symitar.com/';
/** The services in the order a release's facts list them. */
const SERVICE_NAMES: readonly SymxServiceName[] = ['findby', 'corptransfer', 'account', 'collateral'];
/** Common types the core reports status and errors with; kept although no operation here references them. */
const ERROR_TYPES = ['Status', 'BaseResponse'];

// ---- Limits and errors ----

export interface ReleaseReadLimits {
  /** Largest document, in characters (the 2020.00 AccountService.wsdl has 2 million). */
  readonly maxDocumentLength: number;
  /** All documents of the release together, in characters. */
  readonly maxTotalLength: number;
  /** Distinct documents (WSDLs and XSDs) of the release. */
  readonly maxDocuments: number;
  /** How many imports deep a schema may be from its WSDL (the WSDL's inline schema is 0). */
  readonly maxImportDepth: number;
  /** Elements of one document. */
  readonly maxElementsPerDocument: number;
  /** Elements of all the release's documents together. */
  readonly maxElements: number;
  /** How deep elements nest in a document. */
  readonly maxDepth: number;
  /** Longest XML name, declared name (type, element, operation) or import location. */
  readonly maxNameLength: number;
  /** Longest namespace URI. */
  readonly maxNamespaceLength: number;
}

/**
 * Room for SymXchange's largest documents several times over (3.0's account service is 4 MB in five
 * documents of at most 27,000 elements; 2020.00's is 3.6 MB), and a ceiling on what a core could make
 * coregate hold in memory at start.
 */
export const RELEASE_READ_LIMITS: ReleaseReadLimits = {
  maxDocumentLength: 16 * 1024 * 1024,
  maxTotalLength: 64 * 1024 * 1024,
  maxDocuments: 64,
  maxImportDepth: 8,
  maxElementsPerDocument: 250_000,
  maxElements: 1_000_000,
  maxDepth: 64,
  maxNameLength: 256,
  maxNamespaceLength: 1024,
};

/**
 * Why a release could not be read: the document at fault (its location) and what in it.
 * @example new SymxReleaseError('xsd/common.xsd', 'unsupported <xsd:group> in symxcommon:Status').message
 *   // 'xsd/common.xsd: unsupported <xsd:group> in symxcommon:Status'
 */
export class SymxReleaseError extends Error {
  constructor(
    /** The location of the document at fault, when one is. */
    readonly document: string | undefined,
    readonly detail: string,
  ) {
    super(document === undefined ? detail : `${clip(document, 256)}: ${detail}`);
    this.name = 'SymxReleaseError';
  }
}

/** Text a document supplies, as an error quotes it. */
const quoted = (text: string) => `"${clip(text)}"`;

// ---- Locations ----

const isWebUrl = (location: string) => /^https?:\/\//i.test(location);
const HAS_SCHEME = /^[a-z][a-z0-9+.-]*:/i;
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f]/;

/**
 * Where an import's `schemaLocation` points, from the document that names it. A WSDL read over HTTP imports
 * only from its own origin (a core cannot send coregate elsewhere); one read from files imports only by
 * relative path, and never from above the WSDL's directory.
 * @example importLocation('wsdl/AccountService.wsdl', 'wsdl/xsd/account_create.xsd', 'account_update.xsd')
 *   // 'wsdl/xsd/account_update.xsd'
 */
export function importLocation(
  wsdl: string,
  importer: string,
  location: string,
  limits: ReleaseReadLimits = RELEASE_READ_LIMITS,
): string {
  const refuse = (why: string) => new SymxReleaseError(importer, `import of ${quoted(location)} refused: ${why}`);
  if (location.length > limits.maxNameLength) throw refuse(`longer than ${limits.maxNameLength} characters`);
  if (CONTROL.test(location)) throw refuse('it holds control characters');
  if (isWebUrl(wsdl)) {
    let url: URL;
    let origin: string;
    try {
      url = new URL(location, importer);
      origin = new URL(wsdl).origin;
    } catch {
      throw refuse('not a URL');
    }
    if (url.origin !== origin) throw refuse(`not on the WSDL's origin ${origin}`);
    url.hash = '';
    return url.href;
  }
  if (HAS_SCHEME.test(location) || location.startsWith('/') || location.includes('\\'))
    throw refuse('a WSDL read from files imports by relative path only');
  const resolved = posix.normalize(posix.join(posix.dirname(importer), location));
  const within = posix.relative(posix.dirname(wsdl), resolved);
  if (within === '..' || within.startsWith('../')) throw refuse(`outside ${posix.dirname(wsdl)}/`);
  return resolved;
}

// ---- XML with namespaces ----

interface XmlNode {
  readonly ns: string;
  readonly local: string;
  readonly attrs: Readonly<Record<string, string>>;
  readonly children: readonly XmlNode[];
  /** Character data, trimmed. */
  readonly text: string;
  /** In-scope prefix → namespace URI ('' is the default namespace). */
  readonly scope: ReadonlyMap<string, string>;
  /** The location of the document the node is in, for messages. */
  readonly document: string;
}

const PREFIXES: Readonly<Record<string, string>> = { [XSD]: 'xsd', [WSDL]: 'wsdl', [SOAP11]: 'soap' };

/** A node's name as messages write it: `xsd:group`, `wsdl:import`, or `{namespace}local`. */
const shown = (node: XmlNode) =>
  PREFIXES[node.ns] ? `${PREFIXES[node.ns]}:${node.local}` : `{${node.ns}}${node.local}`;

function splitName(name: string, document: string): [prefix: string, local: string] {
  const parts = name.split(':');
  if (parts.length > 2) throw new SymxReleaseError(document, `the name ${quoted(name)} has two colons`);
  return parts.length === 2 ? [parts[0]!, parts[1]!] : ['', name];
}

/** Resolves every element's namespace; counts elements into `counter`. */
function toNode(
  element: XmlElement,
  parentScope: ReadonlyMap<string, string>,
  document: string,
  counter: { elements: number },
): XmlNode {
  counter.elements += 1;
  let scope = parentScope;
  if (element.declarations) {
    const own = new Map(parentScope);
    for (const [prefix, uri] of element.declarations) own.set(prefix, uri);
    scope = own;
  }
  const [prefix, local] = splitName(element.name, document);
  const ns = scope.get(prefix);
  if (ns === undefined) throw new SymxReleaseError(document, `undeclared prefix in <${clip(element.name)}>`);
  return {
    ns,
    local,
    attrs: element.attributes,
    children: element.children.map((child) => toNode(child, scope, document, counter)),
    text: element.text.trim(),
    scope,
    document,
  };
}

const is = (node: XmlNode, ns: string, local: string) => node.ns === ns && node.local === local;
const childrenOf = (node: XmlNode, ns: string, local: string) => node.children.filter((c) => is(c, ns, local));

interface QName {
  readonly ns: string;
  readonly local: string;
}

function resolveQName(node: XmlNode, value: string): QName {
  const [prefix, local] = splitName(value, node.document);
  const ns = node.scope.get(prefix);
  if (ns === undefined) throw new SymxReleaseError(node.document, `undeclared prefix in ${quoted(value)}`);
  return { ns, local };
}

// ---- Namespace aliases ----

/** What a common namespace's role reads as in each scheme: `symxcommon` (3.0), `common/dto/common` (2020.00, v1). */
const COMMON_ROLES: ReadonlySet<string> = new Set(['symxcommon', 'common', 'common/common']);
const ROLE = /^[A-Za-z][\w.-]*(\/[A-Za-z][\w.-]*)*$/;

/**
 * The role of a SymXchange namespace, the same in every release: the part after the SymXchange base without
 * `crud/`/`noncrud/` and version segments (`v2/`), a `dto` segment between two others dropped; every common
 * namespace is `symxcommon`. Undefined for a namespace outside the base.
 * @example namespaceRole('http://www.symxchange.generated.symitar.com/crud/account/dto/update') // 'account/update'
 * @example namespaceRole('http://www.symxchange.generated.symitar.com/account/dto/update') // 'account/update'
 * @example namespaceRole('http://www.symxchange.generated.symitar.com/v1/common/dto/common') // 'symxcommon'
 * @example namespaceRole('http://www.symxchange.generated.symitar.com/noncrud/findby/dto') // 'findby/dto'
 */
export function namespaceRole(uri: string): string | undefined {
  if (!uri.startsWith(SYMX_BASE)) return undefined;
  const segments = uri
    .slice(SYMX_BASE.length)
    .split('/')
    .filter((segment) => segment !== '' && !/^v\d+$/.test(segment));
  if (segments[0] === 'crud' || segments[0] === 'noncrud') segments.shift();
  const role = segments.filter((s, i) => s !== 'dto' || i === 0 || i === segments.length - 1).join('/');
  if (COMMON_ROLES.has(role)) return 'symxcommon';
  return ROLE.test(role) ? role : undefined;
}

/** A readable alias for a namespace outside SymXchange's scheme: its URI without the scheme, as a path. */
function derivedAlias(uri: string): string {
  const readable = uri
    .replace(HAS_SCHEME, '')
    .replace(/[^A-Za-z0-9._/-]+/g, '-')
    .replace(/\/+/g, '/')
    .replace(/^[-/.]+|[-/]+$/g, '')
    .slice(0, 200);
  return readable === '' ? 'ns' : readable;
}

/**
 * Unique aliases for a release's namespaces: each SymXchange namespace by its role (`account/update`,
 * `symxcommon`); a namespace outside the base, or one whose role another namespace of the release also has,
 * by an alias derived from its URI (numbered if two derive the same). `xsd` is XML Schema's.
 * @example namespaceAliases(['http://www.symxchange.generated.symitar.com/v2/account']).get(
 *   'http://www.symxchange.generated.symitar.com/v2/account') // 'account'
 */
export function namespaceAliases(uris: Iterable<string>): Map<string, string> {
  return new NamespaceAliases(uris).all();
}

class NamespaceAliases {
  private readonly byUri = new Map<string, string>();
  private readonly taken = new Set(['xsd']);

  constructor(uris: Iterable<string>) {
    const unique = [...new Set(uris)].filter((uri) => uri !== XSD).sort();
    const claims = new Map<string, string[]>();
    for (const uri of unique) {
      const role = namespaceRole(uri);
      if (role !== undefined) claims.set(role, [...(claims.get(role) ?? []), uri]);
    }
    // A role two namespaces claim belongs to neither: which would be the release's is not for a reader to guess.
    for (const [role, claimants] of claims) {
      if (claimants.length === 1 && !this.taken.has(role)) this.assign(claimants[0]!, role);
    }
    for (const uri of unique) if (!this.byUri.has(uri)) this.assign(uri, this.free(derivedAlias(uri)));
  }

  of(uri: string): string {
    if (uri === XSD) return 'xsd';
    return this.byUri.get(uri) ?? this.assign(uri, this.free(derivedAlias(uri)));
  }

  name(q: QName): string {
    return `${this.of(q.ns)}:${q.local}`;
  }

  all(): Map<string, string> {
    return new Map(this.byUri);
  }

  private free(alias: string): string {
    let candidate = alias;
    for (let n = 2; this.taken.has(candidate); n += 1) candidate = `${alias}-${n}`;
    return candidate;
  }

  private assign(uri: string, alias: string): string {
    this.byUri.set(uri, alias);
    this.taken.add(alias);
    return alias;
  }
}

// ---- Schemas ----

interface SchemaInfo {
  readonly targetNamespace: string;
  readonly elementFormDefault: 'qualified' | 'unqualified';
  readonly attributeFormDefault: 'qualified' | 'unqualified';
}

interface Global {
  readonly node: XmlNode;
  readonly schema: SchemaInfo;
}

type GlobalKind = 'complexType' | 'simpleType' | 'element' | 'attribute';
const GLOBAL_KINDS: readonly string[] = ['complexType', 'simpleType', 'element', 'attribute'];
/**
 * Schema children that declare nothing this reader keeps, or that it follows itself (imports). A group or
 * attribute group matters only where it is referenced, and a reference is refused there.
 */
const SCHEMA_SKIPPED: readonly string[] = ['annotation', 'import', 'include', 'group', 'attributeGroup', 'notation'];

/** Names a schema declares: an XML NCName of bounded length. */
const NCNAME = /^[\p{L}_][\p{L}\p{N}_.-]*$/u;

function declaredName(node: XmlNode, limits: ReleaseReadLimits, attribute = 'name'): string {
  const name = node.attrs[attribute];
  if (name === undefined) throw new SymxReleaseError(node.document, `<${shown(node)}> without ${attribute}`);
  if (name.length > limits.maxNameLength || !NCNAME.test(name))
    throw new SymxReleaseError(node.document, `<${shown(node)}> ${attribute}=${quoted(name)} is not a name`);
  return name;
}

/** Global declarations of every loaded schema, by kind and `<ns>|<local>`. */
class SchemaSet {
  readonly globals = new Map<string, Global>();
  readonly namespaces = new Map<string, SchemaInfo>();

  constructor(readonly limits: ReleaseReadLimits) {}

  add(schemaNode: XmlNode): SchemaInfo {
    const form = (value: string | undefined) => (value === 'qualified' ? 'qualified' : 'unqualified');
    const targetNamespace = schemaNode.attrs.targetNamespace ?? '';
    if (targetNamespace.length > this.limits.maxNamespaceLength)
      throw new SymxReleaseError(schemaNode.document, `a namespace longer than ${this.limits.maxNamespaceLength}`);
    const schema: SchemaInfo = {
      targetNamespace,
      elementFormDefault: form(schemaNode.attrs.elementFormDefault),
      attributeFormDefault: form(schemaNode.attrs.attributeFormDefault),
    };
    const known = this.namespaces.get(schema.targetNamespace);
    if (known && JSON.stringify(known) !== JSON.stringify(schema)) {
      throw new SymxReleaseError(
        schemaNode.document,
        `${quoted(schema.targetNamespace)} declared with different form defaults`,
      );
    }
    this.namespaces.set(schema.targetNamespace, schema);
    for (const child of schemaNode.children) {
      if (child.ns === XSD && SCHEMA_SKIPPED.includes(child.local)) continue;
      if (child.ns !== XSD || !GLOBAL_KINDS.includes(child.local)) unexpected(child, 'xsd:schema');
      const key = `${child.local}|${schema.targetNamespace}|${declaredName(child, this.limits)}`;
      const existing = this.globals.get(key);
      // The common schema is in every service; a differing redefinition would be ambiguous.
      if (existing && existing.node !== child && canonical(existing.node) !== canonical(child)) {
        throw new SymxReleaseError(
          child.document,
          `${child.local} ${child.attrs.name} differs from the one in ${existing.node.document}`,
        );
      }
      this.globals.set(key, { node: child, schema });
    }
    return schema;
  }

  get(kind: GlobalKind, q: QName): Global | undefined {
    return this.globals.get(`${kind}|${q.ns}|${q.local}`);
  }
}

/** A declaration's content with prefixes resolved, to compare declarations read from different files. */
function canonical(node: XmlNode): string {
  const walk = (n: XmlNode): unknown => [
    n.ns,
    n.local,
    Object.entries(n.attrs).filter(([k]) => !k.startsWith('xmlns')),
    n.text,
    n.children.map(walk),
  ];
  return JSON.stringify(walk(node));
}

// ---- Describing types ----

const FACETS: Record<string, 'number' | 'string' | 'list'> = {
  length: 'number',
  minLength: 'number',
  maxLength: 'number',
  pattern: 'string',
  enumeration: 'list',
  totalDigits: 'number',
  fractionDigits: 'number',
  minInclusive: 'number',
  maxInclusive: 'number',
};

/** How many simple types may restrict one another in a chain: a cycle would otherwise never end. */
const MAX_SIMPLE_DERIVATION = 32;

interface SimpleFacts {
  readonly type: string;
  readonly simpleType?: string;
  readonly restrictions?: XsdRestrictions;
}

function count(node: XmlNode, attribute: 'minOccurs' | 'maxOccurs'): number | undefined {
  const value = node.attrs[attribute];
  if (value === undefined) return undefined;
  if (!/^\d{1,9}$/.test(value))
    throw new SymxReleaseError(node.document, `${attribute}=${quoted(value)} in <${shown(node)}> is not a count`);
  return Number(value);
}

const occurs = (node: XmlNode) => ({
  minOccurs: count(node, 'minOccurs') ?? 1,
  maxOccurs: (node.attrs.maxOccurs === 'unbounded' ? 'unbounded' : (count(node, 'maxOccurs') ?? 1)) as MaxOccurs,
});

function unexpected(node: XmlNode, where: string): never {
  throw new SymxReleaseError(node.document, `unsupported <${shown(node)}> in ${where}`);
}

/** Collects the complex types reachable from the operations, by name. */
class TypeCollector {
  readonly complexTypes = new Map<string, XsdComplexType>();
  private readonly pending: { name: string; node: XmlNode; schema: SchemaInfo; anonymous: boolean }[] = [];

  constructor(
    private readonly schemas: SchemaSet,
    private readonly aliases: NamespaceAliases,
  ) {}

  /** Names a complex type by QName and queues it; returns its name. */
  reach(q: QName, from?: XmlNode): string {
    const name = this.aliases.name(q);
    if (!this.complexTypes.has(name) && !this.pending.some((p) => p.name === name)) {
      const global = this.schemas.get('complexType', q);
      if (!global) throw new SymxReleaseError(from?.document, `complex type ${clip(name)} is not declared`);
      this.pending.push({ name, node: global.node, schema: global.schema, anonymous: false });
    }
    return name;
  }

  drain(): void {
    const documents = new Map<string, string>();
    for (let next = this.pending.shift(); next; next = this.pending.shift()) {
      this.complexTypes.set(next.name, this.complexType(next.name, next.node, next.schema, next.anonymous));
      documents.set(next.name, next.node.document);
    }
    // A type extending itself, however far round, would have no first element.
    for (const [name, type] of this.complexTypes) {
      const seen = new Set([name]);
      for (let base = type.base; base !== undefined; base = this.complexTypes.get(base)?.base) {
        if (seen.has(base))
          throw new SymxReleaseError(documents.get(base), `complex type ${clip(base)} extends itself`);
        seen.add(base);
      }
    }
  }

  private complexType(name: string, node: XmlNode, schema: SchemaInfo, anonymous: boolean): XsdComplexType {
    let base: string | undefined;
    let content: XsdGroup | undefined;
    const attributes: XsdAttribute[] = [];
    const body = (parts: readonly XmlNode[], where: string) => {
      for (const part of parts) {
        if (part.ns !== XSD) unexpected(part, where);
        if (part.local === 'annotation') continue;
        if (part.local === 'sequence' || part.local === 'choice') {
          if (content) unexpected(part, `${where} (second content group)`);
          content = this.group(part, schema, name);
        } else if (part.local === 'attribute') {
          attributes.push(this.attribute(part, schema));
        } else if (part.local === 'complexContent') {
          const extension = part.children.find((c) => is(c, XSD, 'extension'));
          if (!extension || part.children.length !== 1 || part.attrs.mixed === 'true') unexpected(part, where);
          if (extension.attrs.base === undefined) unexpected(extension, where);
          base = this.reach(resolveQName(extension, extension.attrs.base), extension);
          body(extension.children, `${where}/extension`);
        } else {
          unexpected(part, where);
        }
      }
    };
    if (node.attrs.mixed === 'true' || node.attrs.abstract === 'true') unexpected(node, name);
    body(node.children, name);
    return {
      ...(anonymous ? { anonymous: true as const } : {}),
      ...(base ? { base } : {}),
      ...(content ? { content } : {}),
      attributes,
    };
  }

  private group(node: XmlNode, schema: SchemaInfo, owner: string): XsdGroup {
    const particles: XsdParticle[] = [];
    for (const child of node.children) {
      if (child.ns !== XSD) unexpected(child, owner);
      if (child.local === 'annotation') continue;
      if (child.local === 'element') particles.push(this.element(child, schema, owner));
      else if (child.local === 'sequence' || child.local === 'choice') particles.push(this.group(child, schema, owner));
      else if (child.local === 'any') {
        const processContents = child.attrs.processContents ?? 'strict';
        if (!['strict', 'lax', 'skip'].includes(processContents)) unexpected(child, owner);
        particles.push({
          kind: 'any',
          namespace: child.attrs.namespace ?? '##any',
          processContents: processContents as 'strict' | 'lax' | 'skip',
          ...occurs(child),
        });
      } else unexpected(child, owner);
    }
    return { kind: node.local as 'sequence' | 'choice', ...occurs(node), particles };
  }

  private element(node: XmlNode, schema: SchemaInfo, owner: string): XsdElement {
    if (node.attrs.ref || node.attrs.form || node.attrs.default || node.attrs.fixed) unexpected(node, owner);
    const name = declaredName(node, this.schemas.limits);
    if (schema.elementFormDefault !== 'unqualified') unexpected(node, `${owner} (qualified local elements)`);
    const inline = node.children.filter((c) => !is(c, XSD, 'annotation'));
    let type: SimpleFacts;
    if (node.attrs.type) {
      if (inline.length > 0) unexpected(inline[0]!, `${owner}.${name} (a type and an inline type)`);
      type = this.typeRef(node, node.attrs.type);
    } else if (inline.length === 1 && is(inline[0]!, XSD, 'simpleType')) {
      type = this.simpleType(inline[0]!);
    } else if (inline.length === 1 && is(inline[0]!, XSD, 'complexType')) {
      const anonymous = `${owner}.${name}`;
      if (this.complexTypes.has(anonymous) || this.pending.some((p) => p.name === anonymous)) {
        throw new SymxReleaseError(node.document, `two anonymous types named ${clip(anonymous)}`);
      }
      this.pending.push({ name: anonymous, node: inline[0]!, schema, anonymous: true });
      type = { type: anonymous };
    } else if (inline.length === 0) {
      type = { type: 'xsd:anyType' };
    } else {
      unexpected(inline[1] ?? inline[0]!, `${owner}.${name}`);
    }
    return {
      kind: 'element',
      name,
      ...withType(type),
      ...occurs(node),
      nillable: node.attrs.nillable === 'true',
      ...withRestrictions(type),
    };
  }

  private attribute(node: XmlNode, schema: SchemaInfo): XsdAttribute {
    const use = node.attrs.use === 'required' ? 'required' : 'optional';
    if (node.attrs.fixed || (node.attrs.use && !['required', 'optional'].includes(node.attrs.use)))
      unexpected(node, 'attribute');
    const defaults = node.attrs.default === undefined ? {} : { default: node.attrs.default };
    if (node.attrs.ref) {
      const q = resolveQName(node, node.attrs.ref);
      const global = this.schemas.get('attribute', q);
      if (!global) throw new SymxReleaseError(node.document, `attribute ${clip(this.aliases.name(q))} is not declared`);
      const type = this.attributeType(global.node);
      return {
        name: q.local,
        qualified: true,
        namespace: this.aliases.of(q.ns),
        ...withType(type),
        use,
        ...defaults,
        ...withRestrictions(type),
      };
    }
    const qualified = node.attrs.form ? node.attrs.form === 'qualified' : schema.attributeFormDefault === 'qualified';
    const type = this.attributeType(node);
    return {
      name: declaredName(node, this.schemas.limits),
      qualified,
      ...(qualified ? { namespace: this.aliases.of(schema.targetNamespace) } : {}),
      ...withType(type),
      use,
      ...defaults,
      ...withRestrictions(type),
    };
  }

  private attributeType(node: XmlNode): SimpleFacts {
    if (node.attrs.type) return this.typeRef(node, node.attrs.type);
    const inline = node.children.find((c) => is(c, XSD, 'simpleType'));
    return inline ? this.simpleType(inline) : { type: 'xsd:anySimpleType' };
  }

  /** A `type=` reference: built-in, named simple type (resolved to its built-in base and facets), or complex. */
  private typeRef(node: XmlNode, value: string, depth = 0): SimpleFacts {
    const q = resolveQName(node, value);
    if (q.ns === XSD) return { type: `xsd:${q.local}` };
    const simple = this.schemas.get('simpleType', q);
    if (simple) return { ...this.simpleType(simple.node, depth + 1), simpleType: this.aliases.name(q) };
    return { type: this.reach(q, node) };
  }

  private simpleType(node: XmlNode, depth = 0): SimpleFacts {
    if (depth > MAX_SIMPLE_DERIVATION)
      throw new SymxReleaseError(
        node.document,
        `simple types restrict one another more than ${MAX_SIMPLE_DERIVATION} deep`,
      );
    const parts = node.children.filter((c) => !is(c, XSD, 'annotation'));
    const restriction = parts[0];
    if (parts.length !== 1 || !restriction) unexpected(node, 'simpleType');
    if (!is(restriction, XSD, 'restriction')) unexpected(restriction, 'simpleType');
    if (restriction.attrs.base === undefined) unexpected(restriction, 'simpleType (no base)');
    const base = this.typeRef(restriction, restriction.attrs.base, depth);
    if (base.restrictions === undefined && !base.type.startsWith('xsd:'))
      unexpected(restriction, 'simpleType (complex base)');
    const facets: Record<string, unknown> = { ...base.restrictions };
    const enumeration: string[] = [];
    for (const facet of restriction.children) {
      if (facet.ns !== XSD) unexpected(facet, 'restriction');
      if (facet.local === 'annotation') continue;
      const kind = FACETS[facet.local];
      if (!kind) unexpected(facet, 'restriction');
      const value = facet.attrs.value;
      if (value === undefined) unexpected(facet, 'restriction (no value)');
      if (kind === 'list') enumeration.push(value);
      else if (kind === 'number') {
        if (!Number.isFinite(Number(value)) || value.trim() === '')
          throw new SymxReleaseError(facet.document, `<${shown(facet)}> value=${quoted(value)} is not a number`);
        facets[facet.local] = Number(value);
      } else if (facets[facet.local] !== undefined && facets[facet.local] !== value && facet.local === 'pattern') {
        unexpected(facet, 'restriction (two patterns)');
      } else facets[facet.local] = value;
    }
    if (enumeration.length > 0) facets.enumeration = enumeration;
    const ordered = Object.fromEntries(
      Object.keys(FACETS)
        .filter((k) => facets[k] !== undefined)
        .map((k) => [k, facets[k]]),
    );
    return {
      type: base.type,
      ...(Object.keys(ordered).length > 0 ? { restrictions: ordered as XsdRestrictions } : {}),
    };
  }
}

const withType = (t: SimpleFacts) => ({ type: t.type, ...(t.simpleType ? { simpleType: t.simpleType } : {}) });
const withRestrictions = (t: SimpleFacts) => (t.restrictions ? { restrictions: t.restrictions } : {});

// ---- Documents ----

/** The documents of one release as they are read: each location loaded and parsed once, within the limits. */
class Documents {
  private readonly parsed = new Map<string, XmlNode>();
  private characters = 0;
  private elements = 0;

  constructor(
    private readonly load: (location: string) => Promise<string>,
    readonly limits: ReleaseReadLimits,
  ) {}

  private tooManyElements(location: string): SymxReleaseError {
    return new SymxReleaseError(location, `the release's documents have more than ${this.limits.maxElements} elements`);
  }

  locations(): string[] {
    return [...this.parsed.keys()];
  }

  async read(location: string): Promise<XmlNode> {
    const known = this.parsed.get(location);
    if (known) return known;
    const { limits } = this;
    if (this.parsed.size >= limits.maxDocuments)
      throw new SymxReleaseError(location, `more than ${limits.maxDocuments} documents in the release`);
    let text: string;
    try {
      text = (await this.load(location)).replace(/^\uFEFF/, '');
    } catch (error) {
      const why = error instanceof Error ? error.message : String(error);
      throw new SymxReleaseError(location, `cannot be read: ${clip(why, 256)}`);
    }
    if (text.length > limits.maxDocumentLength)
      throw new SymxReleaseError(location, `larger than ${limits.maxDocumentLength} characters`);
    this.characters += text.length;
    if (this.characters > limits.maxTotalLength)
      throw new SymxReleaseError(location, `the release's documents exceed ${limits.maxTotalLength} characters`);
    if (this.elements >= limits.maxElements) throw this.tooManyElements(location);
    let root: XmlElement;
    try {
      root = parseXml(text, {
        maxLength: limits.maxDocumentLength,
        maxDepth: limits.maxDepth,
        maxElements: Math.min(limits.maxElementsPerDocument, limits.maxElements - this.elements),
        maxNameLength: limits.maxNameLength,
      });
    } catch (error) {
      if (!(error instanceof SoapCodecError)) throw error;
      const releaseBound = limits.maxElements - this.elements < limits.maxElementsPerDocument;
      if (error.code === 'XML_TOO_MANY_ELEMENTS' && releaseBound) throw this.tooManyElements(location);
      throw new SymxReleaseError(location, error.message);
    }
    const counter = { elements: 0 };
    const initial = new Map([
      ['', ''],
      ['xml', XML_NS],
    ]);
    const node = toNode(root, initial, location, counter);
    this.elements += counter.elements;
    this.parsed.set(location, node);
    return node;
  }
}

// ---- WSDLs ----

/** A SOAP operation as the WSDL declares it: its body elements are described once it is selected. */
interface SoapOperation {
  readonly service: SymxServiceName;
  readonly soapAction: string;
  readonly faults: string[];
  readonly elements: { readonly request: QName; readonly response: QName };
  readonly node: XmlNode;
}

interface LoadedService {
  readonly name: SymxServiceName;
  readonly wsdl: XmlNode;
  readonly portType: XmlNode;
  readonly binding: XmlNode;
  readonly port: XmlNode;
  readonly soapBinding: XmlNode;
  readonly address: string;
  /** Target namespaces of every schema the WSDL loads. */
  readonly namespaces: Set<string>;
  /** SOAP operations of the WSDL by name, before coregate's operations select among them. */
  readonly operations: Map<string, SoapOperation>;
}

/** The one child the WSDL must have, by local name and (for a reference) the name it is referred to by. */
function single(parent: XmlNode, ns: string, local: string, what: string, test?: (node: XmlNode) => boolean) {
  const found = childrenOf(parent, ns, local).find((node) => test?.(node) ?? true);
  if (!found) throw new SymxReleaseError(parent.document, `no ${what}`);
  return found;
}

/** True when a `binding=`/`type=` reference names `target` (a declaration of the WSDL's target namespace). */
const refersTo = (node: XmlNode, attribute: string, target: XmlNode) =>
  node.attrs[attribute] !== undefined && resolveQName(node, node.attrs[attribute]).local === target.attrs.name;

async function loadService(
  name: SymxServiceName,
  location: string,
  documents: Documents,
  schemas: SchemaSet,
): Promise<LoadedService> {
  const { limits } = documents;
  const wsdl = await documents.read(location);
  if (!is(wsdl, WSDL, 'definitions')) throw new SymxReleaseError(location, 'is not a WSDL 1.1 document');
  // A WSDL split over several documents would need reading as one: not a shape SymXchange publishes.
  for (const imported of childrenOf(wsdl, WSDL, 'import')) unexpected(imported, 'wsdl:definitions');

  const namespaces = new Set<string>();
  const visited = new Set<string>([location]);
  const loadSchema = async (schemaNode: XmlNode, chain: readonly string[]): Promise<void> => {
    namespaces.add(schemas.add(schemaNode).targetNamespace);
    for (const imported of schemaNode.children.filter((c) => c.ns === XSD && ['import', 'include'].includes(c.local))) {
      const schemaLocation = imported.attrs.schemaLocation;
      if (schemaLocation === undefined) continue;
      const next = importLocation(location, schemaNode.document, schemaLocation, limits);
      if (chain.includes(next))
        throw new SymxReleaseError(
          schemaNode.document,
          `import cycle: ${[...chain, next].map((l) => clip(l)).join(' → ')}`,
        );
      if (visited.has(next)) continue;
      if (chain.length > limits.maxImportDepth)
        throw new SymxReleaseError(next, `imported more than ${limits.maxImportDepth} deep from ${location}`);
      visited.add(next);
      const document = await documents.read(next);
      if (!is(document, XSD, 'schema')) throw new SymxReleaseError(next, 'is not an XML Schema (<xsd:schema>)');
      await loadSchema(document, [...chain, next]);
    }
  };
  for (const types of childrenOf(wsdl, WSDL, 'types'))
    for (const schema of childrenOf(types, XSD, 'schema')) await loadSchema(schema, [location]);

  const messages = new Map(
    childrenOf(wsdl, WSDL, 'message').map((m) => {
      const parts = childrenOf(m, WSDL, 'part');
      if (parts.length !== 1 || !parts[0]!.attrs.element)
        throw new SymxReleaseError(location, `message ${quoted(m.attrs.name ?? '')}: expected one element part`);
      return [declaredName(m, limits), resolveQName(parts[0]!, parts[0]!.attrs.element)];
    }),
  );
  // A WSDL may bind its port type more than once (SOAP 1.2, HTTP): the SOAP 1.1 binding is the one read.
  const binding = single(wsdl, WSDL, 'binding', 'SOAP 1.1 binding', (b) => childrenOf(b, SOAP11, 'binding').length > 0);
  const soapBinding = childrenOf(binding, SOAP11, 'binding')[0]!;
  // WSDL 1.1, 3.3: a binding without a style is document style (2020.00's say none).
  if ((soapBinding.attrs.style ?? 'document') !== 'document')
    throw new SymxReleaseError(location, `binding ${quoted(binding.attrs.name ?? '')} is not document style`);
  const portType = single(wsdl, WSDL, 'portType', 'port type of the SOAP 1.1 binding', (p) =>
    refersTo(binding, 'type', p),
  );
  const wsdlService = single(wsdl, WSDL, 'service', 'service');
  const port = single(wsdlService, WSDL, 'port', 'port of the SOAP 1.1 binding', (p) =>
    refersTo(p, 'binding', binding),
  );
  const address = childrenOf(port, SOAP11, 'address')[0]?.attrs.location;
  if (address === undefined) throw new SymxReleaseError(location, 'the port has no soap:address');

  const bindingOps = new Map(childrenOf(binding, WSDL, 'operation').map((op) => [op.attrs.name, op]));
  const operations: LoadedService['operations'] = new Map();
  for (const op of childrenOf(portType, WSDL, 'operation')) {
    const opName = declaredName(op, limits);
    const message = (kind: 'input' | 'output') => {
      const ref = childrenOf(op, WSDL, kind)[0]?.attrs.message;
      const element = ref && messages.get(resolveQName(op, ref).local);
      if (!element) throw new SymxReleaseError(location, `${opName} has no ${kind} element`);
      return element;
    };
    const bound = bindingOps.get(opName);
    const soapOp = bound && childrenOf(bound, SOAP11, 'operation')[0];
    if (!bound || !soapOp) throw new SymxReleaseError(location, `${opName} is not bound`);
    if ((soapOp.attrs.style ?? 'document') !== 'document')
      throw new SymxReleaseError(location, `${opName} is bound in ${quoted(soapOp.attrs.style!)} style`);
    for (const kind of ['input', 'output'] as const) {
      const body = childrenOf(bound, WSDL, kind).flatMap((io) => childrenOf(io, SOAP11, 'body'))[0];
      if (body?.attrs.use !== 'literal') throw new SymxReleaseError(location, `${opName} ${kind} is not literal`);
    }
    const faults = childrenOf(op, WSDL, 'fault').map((f) => declaredName(f, limits));
    operations.set(opName, {
      service: name,
      soapAction: soapOp.attrs.soapAction ?? '',
      faults,
      elements: { request: message('input'), response: message('output') },
      node: op,
    });
  }
  return { name, wsdl, portType, binding, port, soapBinding, address, namespaces, operations };
}

function describeService(loaded: LoadedService, aliases: NamespaceAliases): SymxService {
  const { wsdl } = loaded;
  const version = wsdl.children.find((c) => c.local === 'documentation' && /^Version \S+$/.test(c.text));
  let endpointPath: string;
  try {
    endpointPath = new URL(loaded.address).pathname;
  } catch {
    throw new SymxReleaseError(wsdl.document, `the service address ${quoted(loaded.address)} is not a URL`);
  }
  return {
    name: loaded.name,
    wsdlName: wsdl.attrs.name ?? '',
    wsdlVersion: version ? version.text.slice('Version '.length) : 'not stated',
    endpointPath,
    targetNamespace: wsdl.attrs.targetNamespace ?? '',
    schemaNamespaces: [...loaded.namespaces].map((uri) => aliases.of(uri)).sort(),
    portType: loaded.portType.attrs.name ?? '',
    binding: loaded.binding.attrs.name ?? '',
    port: loaded.port.attrs.name ?? '',
    soapVersion: '1.1',
    style: 'document',
    use: 'literal',
    transport: loaded.soapBinding.attrs.transport ?? '',
  };
}

/** The body element of a message: a global element whose anonymous type holds one child (`Request`, `SingleResponse`, …). */
function bodyElement(
  q: QName,
  from: XmlNode,
  schemas: SchemaSet,
  types: TypeCollector,
  aliases: NamespaceAliases,
): SymxOperation['request'] {
  const global = schemas.get('element', q);
  const complex = global?.node.children.find((c) => is(c, XSD, 'complexType'));
  const sequence = complex?.children.find((c) => is(c, XSD, 'sequence'));
  const children = sequence?.children.filter((c) => is(c, XSD, 'element')) ?? [];
  const child = children[0];
  if (!global || global.node.attrs.type || !child || children.length !== 1 || sequence!.children.length !== 1) {
    throw new SymxReleaseError(
      global?.node.document ?? from.document,
      `element ${clip(aliases.name(q))}: expected a wrapper with exactly one child element`,
    );
  }
  if (child.attrs.type === undefined) unexpected(child, `${aliases.name(q)} (a wrapper child without a type)`);
  return {
    element: aliases.name(q),
    child: {
      name: declaredName(child, schemas.limits),
      type: types.reach(resolveQName(child, child.attrs.type), child),
      ...occurs(child),
    },
  };
}

// ---- The release ----

/**
 * coregate operation kinds the WSDLs lack, and the WSDL operation whose pattern each follows (the same
 * record read with field selection and paging); the first rule that matches names the sibling.
 */
const SIBLING_RULES: readonly (readonly [RegExp, string])[] = [
  [/^get(\w+)PagedList$/, 'get$1PagedListSelectFields'],
  [/^get(\w+)ListSelectFields$/, 'get$1PagedListSelectFields'],
  [/^search(\w+?)SelectFields$/, 'search$1PagedSelectFields'],
  [/^get(\w+)$/, 'get$1SelectFields'],
];

/** @example siblingName('getCollateralTrackingPagedList') // 'getCollateralTrackingPagedListSelectFields' */
export function siblingName(operation: string): string | undefined {
  const rule = SIBLING_RULES.find(([pattern]) => pattern.test(operation));
  return rule && operation.replace(rule[0], rule[1]);
}

/** What the reader needs of a coregate operation (src/operations' `Operation` has these). */
export interface ReleaseOperation {
  readonly service: string;
  readonly name: string;
  readonly family: Family;
}

export interface ReadReleaseOptions {
  /** The release's label: `3.0`, `2020.00`, or what a core's configuration calls it. */
  readonly release: string;
  /**
   * A document's text by location: the WSDL locations below, and the imports they lead to (a URL, or a path
   * resolved against the importing document's directory).
   */
  readonly load: (location: string) => Promise<string>;
  /** The WSDL of each service to read; a release may lack services. */
  readonly services: Readonly<Partial<Record<SymxServiceName, string>>>;
  /** coregate's operations: they select the SOAP operations (and siblings) that are kept. */
  readonly operations: readonly ReleaseOperation[];
  /** Where the documents come from; by default, no repository and the locations read. */
  readonly source?: SymxSource;
  readonly limits?: Partial<ReleaseReadLimits>;
}

/**
 * Reads one release's facts from its WSDLs and the schemas they import.
 * @example await readRelease({ release: '2020.00', load, services: { findby: 'FindByService.wsdl' }, operations: OPERATIONS })
 */
export async function readRelease(options: ReadReleaseOptions): Promise<SymxRelease> {
  const limits: ReleaseReadLimits = { ...RELEASE_READ_LIMITS, ...options.limits };
  const documents = new Documents(options.load, limits);
  const schemas = new SchemaSet(limits);
  const loaded: LoadedService[] = [];
  for (const name of SERVICE_NAMES) {
    const location = options.services[name];
    if (location !== undefined) loaded.push(await loadService(name, location, documents, schemas));
  }
  if (loaded.length === 0) throw new SymxReleaseError(undefined, `SymXchange ${options.release}: no service to read`);

  const aliases = new NamespaceAliases([
    ...schemas.namespaces.keys(),
    ...loaded.map((service) => service.wsdl.attrs.targetNamespace ?? ''),
  ]);
  const types = new TypeCollector(schemas, aliases);
  const operations: SymxOperation[] = [];
  for (const { name: service, operations: soapOps } of loaded) {
    const ours = options.operations.filter((op) => op.service === service);
    const lacking = [...new Set(ours.map((op) => op.name))].filter((n) => !soapOps.has(n));
    const siblingOf = (soapName: string) => lacking.filter((n) => siblingName(n) === soapName).sort();
    const wanted = [...soapOps.keys()]
      .filter((n) => ours.some((op) => op.name === n) || siblingOf(n).length > 0)
      .sort();
    for (const name of wanted) {
      const op = soapOps.get(name)!;
      operations.push({
        service: op.service,
        name,
        soapAction: op.soapAction,
        coregateFamilies: [...new Set(ours.filter((o) => o.name === name).map((o) => o.family))].sort(),
        siblingOf: siblingOf(name),
        request: bodyElement(op.elements.request, op.node, schemas, types, aliases),
        response: bodyElement(op.elements.response, op.node, schemas, types, aliases),
        faults: op.faults,
      });
    }
  }
  const common = [...schemas.namespaces.keys()].find((uri) => aliases.of(uri) === 'symxcommon');
  const errorTypes =
    common === undefined
      ? []
      : ERROR_TYPES.filter((local) => schemas.get('complexType', { ns: common, local })).map((local) =>
          types.reach({ ns: common, local }),
        );
  types.drain();

  const namespaces = Object.fromEntries(
    [...schemas.namespaces.values()]
      .map((s): [string, SymxNamespace] => [
        aliases.of(s.targetNamespace),
        {
          uri: s.targetNamespace,
          elementFormDefault: s.elementFormDefault,
          attributeFormDefault: s.attributeFormDefault,
        },
      ])
      .sort(([a], [b]) => a.localeCompare(b)),
  );
  const release: SymxRelease = {
    release: options.release,
    source: options.source ?? { repository: '', commit: '', paths: documents.locations(), identicalCopies: [] },
    namespaces,
    services: Object.fromEntries(loaded.map((service) => [service.name, describeService(service, aliases)])),
    operations,
    recordTypes: {},
    updateObjects: {},
    errorTypes,
    complexTypes: Object.fromEntries([...types.complexTypes].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))),
  };
  const recordTypes = findRecordTypes(release);
  const updateObjects = findUpdateObjects({ ...release, recordTypes });
  return { ...release, recordTypes, updateObjects };
}

/**
 * The complex type of each catalog record the operations carry: the type of the record's own name in an
 * update schema (`account/update:ShareHold`, 3.0: its elements say which values may be nil), or else in a
 * retrieve schema (`account/retrieve:ShareHold`, 2020.00, whose update schema has only the updateable
 * fields; `corptransfer/retrieve:CorpTransfer`). A record the operations do not reach has none.
 */
function findRecordTypes(release: SymxRelease): Record<string, string> {
  const names = Object.keys(release.complexTypes);
  const recordTypes: Record<string, string> = {};
  for (const record of RECORDS) {
    const candidates = names.filter((name) => /\/(retrieve|update):/.test(name) && name.endsWith(`:${record.name}`));
    const updates = candidates.filter((name) => name.includes('/update:'));
    const chosen = updates.length > 0 ? updates : candidates;
    if (chosen.length > 1)
      throw new SymxReleaseError(undefined, `record ${record.name} has several types: ${chosen.join(', ')}`);
    if (chosen[0]) recordTypes[record.name] = chosen[0];
  }
  return recordTypes;
}

/**
 * What each record's update operation (`update<Record>ByID`, coregate's name and the WSDL's) sends the new
 * values in: the one element of its request whose complex type holds only fields of the record (3.0:
 * `ShareHoldFields`, all of them; 2020.00: `ShareHoldUpdateableFields`, those that are not read-only).
 */
function findUpdateObjects(release: SymxRelease): Record<string, SymxUpdateObject> {
  const facts = releaseFacts(release);
  const updateObjects: Record<string, SymxUpdateObject> = {};
  for (const [record, recordType] of Object.entries(release.recordTypes)) {
    const operation = release.operations.find((op) => op.name === `update${record}ByID`);
    if (!operation) continue;
    const fields = new Set(facts.recordElements(record).map((e) => e.name));
    const holdsFields = (element: XsdElement) => {
      if (!facts.isComplexType(element.type)) return false;
      const names = facts.elementsOf(element.type).filter((e) => e.name !== VERSION_ELEMENT);
      return names.length > 0 && names.every((e) => fields.has(e.name));
    };
    const found = facts.elementsOf(operation.request.child.type).filter(holdsFields);
    if (found.length !== 1)
      throw new SymxReleaseError(
        undefined,
        `${operation.name}: ${found.length === 0 ? 'no' : 'more than one'} element of ${operation.request.child.type} holds fields of ${recordType}`,
      );
    updateObjects[record] = { element: found[0]!.name, type: found[0]!.type };
  }
  return updateObjects;
}
