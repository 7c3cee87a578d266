/**
 * Writes src/generated/symxchange-facts.ts: the SymXchange facts (operations, soapActions, namespaces, request
 * and response elements, and every complex type they reach) of the SOAP operations that correspond to
 * coregate's operations, read from the published SymXchange WSDLs/XSDs in nicholashosken/symxify.
 *
 *   npx tsx scripts/symxchange-facts.ts <symxify checkout, or its bare git dir> [--out <file>]
 *
 * The vendor's files are read, never copied: only facts (names, order, types, facets, occurrences) are
 * written. test/symxchange-facts.test.ts regenerates the module and fails while the committed one is stale.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join, posix } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { XMLParser } from 'fast-xml-parser';
import { RECORDS } from '../src/catalog/index.js';
import { OPERATIONS } from '../src/operations/index.js';
import type {
  MaxOccurs,
  SymxNamespace,
  SymxOperation,
  SymxService,
  SymxServiceName,
  XsdAttribute,
  XsdComplexType,
  XsdElement,
  XsdGroup,
  XsdParticle,
  XsdRestrictions,
} from '../src/catalog/symxchange/types.js';

const REPOSITORY = 'nicholashosken/symxify';
const SERVICES: readonly SymxServiceName[] = ['findby', 'corptransfer', 'account', 'collateral'];
/** The published copy the facts are read from, and a second copy in the repository checked to hold the same bytes. */
const WSDL_ROOT = 'cdn/wwwroot/wsdl/crud';
const COPY_ROOT = 'api/wwwroot/wsdl/crud';
export const FACTS_FILE = fileURLToPath(new URL('../src/generated/symxchange-facts.ts', import.meta.url));

const XSD = 'http://www.w3.org/2001/XMLSchema';
const WSDL = 'http://schemas.xmlsoap.org/wsdl/';
const SOAP11 = 'http://schemas.xmlsoap.org/wsdl/soap/';
const SYMX_BASE = 'http://www.symxchange.generated.symitar.com/';
/** Common types the core reports status and errors with; kept although no operation here references them. */
const ERROR_TYPES = ['Status', 'BaseResponse'];

// ---- Reading the repository ----

export interface Source {
  /** The path given, for messages. */
  readonly root: string;
  readonly commit: string;
  /** The file's text (BOM removed), or undefined when the repository lacks it. */
  read(path: string): string | undefined;
}

/** A bare git directory (read at HEAD) or a checkout / plain copy of the repository. */
export function openSource(root: string): Source {
  const text = (content: string) => content.replace(/^\uFEFF/, '');
  if (existsSync(join(root, 'HEAD')) && existsSync(join(root, 'objects'))) {
    const git = (...args: string[]) =>
      execFileSync('git', ['--git-dir', root, ...args], { encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 });
    const commit = git('rev-parse', 'HEAD').trim();
    const files = new Set(git('ls-tree', '-r', '--name-only', commit).split('\n'));
    return { root, commit, read: (path) => (files.has(path) ? text(git('show', `${commit}:${path}`)) : undefined) };
  }
  // A checkout names its commit; a plain copy (or a folder inside some other repository) names none.
  const commit = existsSync(join(root, '.git'))
    ? execFileSync('git', ['-C', root, 'rev-parse', 'HEAD'], { encoding: 'utf8' }).trim()
    : 'unknown (not a git checkout)';
  return {
    root,
    commit,
    read: (path) => (existsSync(join(root, path)) ? text(readFileSync(join(root, path), 'utf8')) : undefined),
  };
}

// ---- XML with namespaces ----

interface XmlNode {
  readonly ns: string;
  readonly local: string;
  readonly attrs: Readonly<Record<string, string>>;
  readonly children: readonly XmlNode[];
  readonly text: string;
  /** In-scope prefix → namespace URI ('' is the default namespace). */
  readonly scope: ReadonlyMap<string, string>;
  readonly file: string;
}

type Ordered = Record<string, unknown>;

// No DTDs or entities: the parser is told not to expand any, and the vendor files declare none.
const parser = new XMLParser({
  preserveOrder: true,
  ignoreAttributes: false,
  attributeNamePrefix: '',
  parseAttributeValue: false,
  parseTagValue: false,
  processEntities: false,
  ignoreDeclaration: true,
  ignorePiTags: true,
  trimValues: true,
});

function toNode(item: Ordered, parentScope: ReadonlyMap<string, string>, file: string): XmlNode | undefined {
  const tag = Object.keys(item).find((k) => k !== ':@');
  if (tag === undefined || tag === '#text' || tag === '#comment') return undefined;
  const attrs = (item[':@'] ?? {}) as Record<string, string>;
  // Entities are not expanded (processEntities: false), so a value holding one would be read wrongly.
  if (Object.values(attrs).some((v) => v.includes('&'))) throw new Error(`${file}: an entity in <${tag}> attributes`);
  const scope = new Map(parentScope);
  for (const [name, value] of Object.entries(attrs)) {
    if (name === 'xmlns') scope.set('', value);
    else if (name.startsWith('xmlns:')) scope.set(name.slice(6), value);
  }
  const [prefix, local] = tag.includes(':') ? tag.split(':') : ['', tag];
  const ns = scope.get(prefix!);
  if (ns === undefined) throw new Error(`${file}: undeclared prefix in <${tag}>`);
  const rawChildren = item[tag] as Ordered[];
  const children = rawChildren.map((c) => toNode(c, scope, file)).filter((c): c is XmlNode => c !== undefined);
  const text = rawChildren
    .filter((c) => '#text' in c)
    .map((c) => String(c['#text']))
    .join('');
  return { ns, local: local!, attrs, children, text, scope, file };
}

function parseXml(xml: string, file: string): XmlNode {
  const items = parser.parse(xml) as Ordered[];
  const initial = new Map([
    ['', ''],
    ['xml', 'http://www.w3.org/XML/1998/namespace'],
  ]);
  const roots = items.map((i) => toNode(i, initial, file));
  const root = roots.find((r) => r !== undefined);
  if (!root) throw new Error(`${file}: no root element`);
  return root;
}

const is = (node: XmlNode, ns: string, local: string) => node.ns === ns && node.local === local;
const childrenOf = (node: XmlNode, ns: string, local: string) => node.children.filter((c) => is(c, ns, local));

interface QName {
  readonly ns: string;
  readonly local: string;
}

function resolveQName(node: XmlNode, value: string): QName {
  const [prefix, local] = value.includes(':') ? value.split(':') : ['', value];
  const ns = node.scope.get(prefix!);
  if (ns === undefined) throw new Error(`${node.file}: undeclared prefix in "${value}"`);
  return { ns, local: local! };
}

// ---- Namespace aliases ----

/**
 * A short, unique name for a namespace: the part after the SymXchange base without `crud/`/`noncrud/`,
 * `/dto/` shortened to `/`.
 * @example namespaceAlias('http://www.symxchange.generated.symitar.com/crud/account/dto/update') // 'account/update'
 * @example namespaceAlias('http://www.symxchange.generated.symitar.com/noncrud/findby/dto') // 'findby/dto'
 */
export function namespaceAlias(uri: string): string {
  if (uri === XSD) return 'xsd';
  if (!uri.startsWith(SYMX_BASE)) throw new Error(`unexpected namespace ${uri}`);
  return uri
    .slice(SYMX_BASE.length)
    .replace(/^(non)?crud\//, '')
    .replace('/dto/', '/');
}

const nameOf = (q: QName) => `${namespaceAlias(q.ns)}:${q.local}`;

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

/** Global declarations of every loaded schema, by kind and `<ns>|<local>`. */
class SchemaSet {
  readonly globals = new Map<string, Global>();
  readonly namespaces = new Map<string, SchemaInfo>();

  add(schemaNode: XmlNode): SchemaInfo {
    const form = (value: string | undefined) => (value === 'qualified' ? 'qualified' : 'unqualified');
    const schema: SchemaInfo = {
      targetNamespace: schemaNode.attrs.targetNamespace ?? '',
      elementFormDefault: form(schemaNode.attrs.elementFormDefault),
      attributeFormDefault: form(schemaNode.attrs.attributeFormDefault),
    };
    const known = this.namespaces.get(schema.targetNamespace);
    if (known && JSON.stringify(known) !== JSON.stringify(schema)) {
      throw new Error(`${schemaNode.file}: ${schema.targetNamespace} declared with different form defaults`);
    }
    this.namespaces.set(schema.targetNamespace, schema);
    for (const child of schemaNode.children) {
      if (child.ns !== XSD || !['complexType', 'simpleType', 'element', 'attribute'].includes(child.local)) continue;
      const key = `${child.local}|${schema.targetNamespace}|${child.attrs.name}`;
      const existing = this.globals.get(key);
      // The common schema is the same file in every service; a differing redefinition would be ambiguous.
      if (existing && canonical(existing.node) !== canonical(child)) {
        throw new Error(`${child.file}: ${child.local} ${child.attrs.name} differs from ${existing.node.file}`);
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

interface SimpleFacts {
  readonly type: string;
  readonly simpleType?: string;
  readonly restrictions?: XsdRestrictions;
}

const occurs = (node: XmlNode) => ({
  minOccurs: node.attrs.minOccurs === undefined ? 1 : Number(node.attrs.minOccurs),
  maxOccurs: (node.attrs.maxOccurs === undefined
    ? 1
    : node.attrs.maxOccurs === 'unbounded'
      ? 'unbounded'
      : Number(node.attrs.maxOccurs)) as MaxOccurs,
});

function unexpected(node: XmlNode, where: string): never {
  throw new Error(`${node.file}: unsupported <${node.local}> in ${where}; extend scripts/symxchange-facts.ts`);
}

/** Collects the complex types reachable from the operations, by name. */
class TypeCollector {
  readonly complexTypes = new Map<string, XsdComplexType>();
  private readonly pending: { name: string; node: XmlNode; schema: SchemaInfo; anonymous: boolean }[] = [];

  constructor(private readonly schemas: SchemaSet) {}

  /** Names a complex type by QName and queues it; returns its name. */
  reach(q: QName): string {
    const name = nameOf(q);
    if (!this.complexTypes.has(name) && !this.pending.some((p) => p.name === name)) {
      const global = this.schemas.get('complexType', q);
      if (!global) throw new Error(`complex type ${name} is not declared`);
      this.pending.push({ name, node: global.node, schema: global.schema, anonymous: false });
    }
    return name;
  }

  drain(): void {
    for (let next = this.pending.shift(); next; next = this.pending.shift()) {
      this.complexTypes.set(next.name, this.complexType(next.name, next.node, next.schema, next.anonymous));
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
          if (!extension || part.children.length !== 1) unexpected(part, where);
          base = this.reach(resolveQName(extension, extension.attrs.base!));
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
        particles.push({
          kind: 'any',
          namespace: child.attrs.namespace ?? '##any',
          processContents: (child.attrs.processContents ?? 'strict') as 'strict' | 'lax' | 'skip',
          ...occurs(child),
        });
      } else unexpected(child, owner);
    }
    return { kind: node.local as 'sequence' | 'choice', ...occurs(node), particles };
  }

  private element(node: XmlNode, schema: SchemaInfo, owner: string): XsdElement {
    const { name } = node.attrs;
    if (!name || node.attrs.ref || node.attrs.form || node.attrs.default || node.attrs.fixed) unexpected(node, owner);
    if (schema.elementFormDefault !== 'unqualified') unexpected(node, `${owner} (qualified local elements)`);
    const inline = node.children.filter((c) => !is(c, XSD, 'annotation'));
    let type: SimpleFacts;
    if (node.attrs.type) {
      type = this.typeRef(node, node.attrs.type);
    } else if (inline.length === 1 && is(inline[0]!, XSD, 'simpleType')) {
      type = this.simpleType(inline[0]!);
    } else if (inline.length === 1 && is(inline[0]!, XSD, 'complexType')) {
      const anonymous = `${owner}.${name}`;
      if (this.complexTypes.has(anonymous) || this.pending.some((p) => p.name === anonymous)) {
        throw new Error(`${node.file}: two anonymous types named ${anonymous}`);
      }
      this.pending.push({ name: anonymous, node: inline[0]!, schema, anonymous: true });
      type = { type: anonymous };
    } else if (inline.length === 0) {
      type = { type: 'xsd:anyType' };
    } else {
      unexpected(node, owner);
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
      if (!global) throw new Error(`${node.file}: attribute ${nameOf(q)} is not declared`);
      const type = this.attributeType(global.node);
      return {
        name: q.local,
        qualified: true,
        namespace: namespaceAlias(q.ns),
        ...withType(type),
        use,
        ...defaults,
        ...withRestrictions(type),
      };
    }
    const qualified = node.attrs.form ? node.attrs.form === 'qualified' : schema.attributeFormDefault === 'qualified';
    const type = this.attributeType(node);
    return {
      name: node.attrs.name!,
      qualified,
      ...(qualified ? { namespace: namespaceAlias(schema.targetNamespace) } : {}),
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
  private typeRef(node: XmlNode, value: string): SimpleFacts {
    const q = resolveQName(node, value);
    if (q.ns === XSD) return { type: `xsd:${q.local}` };
    const simple = this.schemas.get('simpleType', q);
    if (simple) return { ...this.simpleType(simple.node), simpleType: nameOf(q) };
    return { type: this.reach(q) };
  }

  private simpleType(node: XmlNode): SimpleFacts {
    const parts = node.children.filter((c) => !is(c, XSD, 'annotation'));
    const restriction = parts[0];
    if (parts.length !== 1 || !restriction || !is(restriction, XSD, 'restriction')) unexpected(node, 'simpleType');
    const base = this.typeRef(restriction, restriction.attrs.base!);
    const facets: Record<string, unknown> = { ...base.restrictions };
    const enumeration: string[] = [];
    for (const facet of restriction.children) {
      if (facet.ns !== XSD) unexpected(facet, 'restriction');
      if (facet.local === 'annotation') continue;
      const kind = FACETS[facet.local];
      if (!kind) unexpected(facet, 'restriction');
      const value = facet.attrs.value!;
      if (kind === 'list') enumeration.push(value);
      else if (kind === 'number') facets[facet.local] = Number(value);
      else if (facets[facet.local] !== undefined && facets[facet.local] !== value && facet.local === 'pattern') {
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

// ---- WSDLs ----

/** A SOAP operation as the WSDL declares it: its body elements are described once it is selected. */
interface SoapOperation {
  readonly service: SymxServiceName;
  readonly soapAction: string;
  readonly faults: string[];
  readonly elements: { readonly request: QName; readonly response: QName };
}

interface LoadedService {
  readonly service: SymxService;
  /** SOAP operations of the WSDL by name, before coregate's operations select among them. */
  readonly operations: Map<string, SoapOperation>;
}

function loadService(source: Source, name: SymxServiceName, schemas: SchemaSet): LoadedService {
  const dir = `${WSDL_ROOT}/${name}`;
  const read = (file: string) => {
    const text = source.read(`${dir}/${file}`);
    if (text === undefined) throw new Error(`${source.root} has no ${dir}/${file}: is it ${REPOSITORY}?`);
    return parseXml(text, `${dir}/${file}`);
  };
  const wsdl = read(`${name}.wsdl`);
  if (!is(wsdl, WSDL, 'definitions')) throw new Error(`${dir}/${name}.wsdl is not a WSDL 1.1 document`);

  const namespaces = new Set<string>();
  const loaded = new Set<string>();
  const loadSchema = (schemaNode: XmlNode) => {
    namespaces.add(schemas.add(schemaNode).targetNamespace);
    for (const imported of childrenOf(schemaNode, XSD, 'import').concat(childrenOf(schemaNode, XSD, 'include'))) {
      const location = imported.attrs.schemaLocation;
      if (!location || loaded.has(location)) continue;
      loaded.add(location);
      loadSchema(read(posix.normalize(location)));
    }
  };
  for (const types of childrenOf(wsdl, WSDL, 'types')) childrenOf(types, XSD, 'schema').forEach(loadSchema);

  const messages = new Map(
    childrenOf(wsdl, WSDL, 'message').map((m) => {
      const parts = childrenOf(m, WSDL, 'part');
      if (parts.length !== 1 || !parts[0]!.attrs.element)
        throw new Error(`message ${m.attrs.name}: expected one element part`);
      return [m.attrs.name!, resolveQName(parts[0]!, parts[0]!.attrs.element!)];
    }),
  );
  const [portType] = childrenOf(wsdl, WSDL, 'portType');
  const [binding] = childrenOf(wsdl, WSDL, 'binding');
  const [wsdlService] = childrenOf(wsdl, WSDL, 'service');
  if (!portType || !binding || !wsdlService)
    throw new Error(`${name}.wsdl: expected a portType, a binding and a service`);
  const soapBinding = childrenOf(binding, SOAP11, 'binding')[0];
  if (soapBinding?.attrs.style !== 'document') throw new Error(`${name}.wsdl: binding is not SOAP 1.1 document style`);
  const port = childrenOf(wsdlService, WSDL, 'port')[0]!;
  const address = childrenOf(port, SOAP11, 'address')[0]!.attrs.location!;
  const version = wsdl.children.find((c) => c.local === 'documentation' && /^Version \S+$/.test(c.text.trim()));

  const bindingOps = new Map(childrenOf(binding, WSDL, 'operation').map((op) => [op.attrs.name!, op]));
  const operations: LoadedService['operations'] = new Map();
  for (const op of childrenOf(portType, WSDL, 'operation')) {
    const opName = op.attrs.name!;
    const message = (kind: 'input' | 'output') => {
      const ref = childrenOf(op, WSDL, kind)[0]?.attrs.message;
      const element = ref && messages.get(resolveQName(op, ref).local);
      if (!element) throw new Error(`${name}.wsdl: ${opName} has no ${kind} element`);
      return element;
    };
    const bound = bindingOps.get(opName);
    const soapOp = bound && childrenOf(bound, SOAP11, 'operation')[0];
    if (!bound || !soapOp) throw new Error(`${name}.wsdl: ${opName} is not bound`);
    for (const kind of ['input', 'output'] as const) {
      const body = childrenOf(childrenOf(bound, WSDL, kind)[0]!, SOAP11, 'body')[0];
      if (body?.attrs.use !== 'literal') throw new Error(`${name}.wsdl: ${opName} ${kind} is not literal`);
    }
    const faults = childrenOf(op, WSDL, 'fault').map((f) => f.attrs.name!);
    operations.set(opName, {
      service: name,
      soapAction: soapOp.attrs.soapAction ?? '',
      faults,
      elements: { request: message('input'), response: message('output') },
    });
  }

  return {
    service: {
      name,
      wsdlName: wsdl.attrs.name!,
      wsdlVersion: version ? version.text.trim().slice('Version '.length) : 'not stated',
      endpointPath: new URL(address).pathname,
      targetNamespace: wsdl.attrs.targetNamespace!,
      schemaNamespaces: [...namespaces].map(namespaceAlias).sort(),
      portType: portType.attrs.name!,
      binding: binding.attrs.name!,
      port: port.attrs.name!,
      soapVersion: '1.1',
      style: 'document',
      use: 'literal',
      transport: soapBinding.attrs.transport!,
    },
    operations,
  };
}

/** The body element of a message: a global element whose anonymous type holds one child (`Request`, `SingleResponse`, …). */
function bodyElement(q: QName, schemas: SchemaSet, types: TypeCollector): SymxOperation['request'] {
  const global = schemas.get('element', q);
  const complex = global?.node.children.find((c) => is(c, XSD, 'complexType'));
  const sequence = complex?.children.find((c) => is(c, XSD, 'sequence'));
  const children = sequence?.children.filter((c) => is(c, XSD, 'element')) ?? [];
  if (!global || global.node.attrs.type || children.length !== 1 || sequence!.children.length !== 1) {
    throw new Error(`element ${nameOf(q)}: expected a wrapper with exactly one child element`);
  }
  const child = children[0]!;
  return {
    element: nameOf(q),
    child: { name: child.attrs.name!, type: types.reach(resolveQName(child, child.attrs.type!)), ...occurs(child) },
  };
}

// ---- The facts ----

/**
 * coregate operation kinds the 3.0 WSDLs lack, and the WSDL operation whose pattern each follows (the same
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

export interface Facts {
  readonly source: { commit: string; identicalCopies: string[] };
  readonly namespaces: Map<string, SymxNamespace>;
  readonly services: SymxService[];
  readonly operations: SymxOperation[];
  readonly complexTypes: Map<string, XsdComplexType>;
  readonly recordTypes: Map<string, string>;
  readonly errorTypes: string[];
}

/** Reads the four services and keeps what coregate's operations reach. */
export function readFacts(source: Source): Facts {
  const schemas = new SchemaSet();
  const types = new TypeCollector(schemas);
  const loaded = SERVICES.map((name) => loadService(source, name, schemas));

  const operations: SymxOperation[] = [];
  for (const { service, operations: soapOps } of loaded) {
    const ours = OPERATIONS.filter((op) => op.service === service.name);
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
        request: bodyElement(op.elements.request, schemas, types),
        response: bodyElement(op.elements.response, schemas, types),
        faults: op.faults,
      });
    }
  }
  const errorTypes = ERROR_TYPES.map((local) => types.reach({ ns: `${SYMX_BASE}symxcommon`, local }));
  types.drain();

  // Each catalog record the operations carry has a complex type of its own name in a retrieve or update
  // schema. A record both read and updated (the share records) has one in each, with the same elements
  // but for child lists: the update schema's is recorded, as its elements say which values may be nil.
  const recordTypes = new Map<string, string>();
  for (const record of RECORDS) {
    const candidates = [...types.complexTypes.keys()].filter(
      (name) => /\/(retrieve|update):/.test(name) && name.endsWith(`:${record.name}`),
    );
    const updates = candidates.filter((name) => name.includes('/update:'));
    const chosen = updates.length > 0 ? updates : candidates;
    if (chosen.length > 1) throw new Error(`record ${record.name} matches ${chosen.join(', ')}`);
    if (chosen[0]) recordTypes.set(record.name, chosen[0]);
  }

  const identicalCopies = SERVICES.filter((name) => {
    return listServiceFiles(source, name).every(
      (file) => source.read(`${COPY_ROOT}/${name}/${file}`) === source.read(`${WSDL_ROOT}/${name}/${file}`),
    );
  }).map((name) => `${COPY_ROOT}/${name}/`);

  const namespaces = new Map(
    [...schemas.namespaces.values()]
      .map((s): [string, SymxNamespace] => [
        namespaceAlias(s.targetNamespace),
        {
          uri: s.targetNamespace,
          elementFormDefault: s.elementFormDefault,
          attributeFormDefault: s.attributeFormDefault,
        },
      ])
      .sort(([a], [b]) => a.localeCompare(b)),
  );
  return {
    source: { commit: source.commit, identicalCopies },
    namespaces,
    services: loaded.map((l) => l.service),
    operations,
    complexTypes: new Map([...types.complexTypes].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))),
    recordTypes,
    errorTypes,
  };
}

/** The WSDL and the schema files it loads, by name within the service's folder. */
function listServiceFiles(source: Source, name: SymxServiceName): string[] {
  const files = [`${name}.wsdl`];
  for (let i = 0; i < files.length; i += 1) {
    const text = source.read(`${WSDL_ROOT}/${name}/${files[i]}`) ?? '';
    for (const [, location] of text.matchAll(/schemaLocation="([^"]+)"/g)) {
      if (!files.includes(location!)) files.push(location!);
    }
  }
  return files;
}

// ---- Writing TypeScript ----

/** A value as a TypeScript literal: on one line when it fits, otherwise one member per line. */
function literal(value: unknown, indent: string): string {
  const flat = inline(value);
  if (flat.length + indent.length <= 190 || typeof value !== 'object' || value === null) return flat;
  const inner = `${indent}  `;
  if (Array.isArray(value)) return `[\n${value.map((v) => `${inner}${literal(v, inner)},\n`).join('')}${indent}]`;
  const entries = Object.entries(value as object).filter(([, v]) => v !== undefined);
  return `{\n${entries.map(([k, v]) => `${inner}${key(k)}: ${literal(v, inner)},\n`).join('')}${indent}}`;
}

function inline(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(inline).join(', ')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value).filter(([, v]) => v !== undefined);
    return entries.length === 0 ? '{}' : `{ ${entries.map(([k, v]) => `${key(k)}: ${inline(v)}`).join(', ')} }`;
  }
  return typeof value === 'string' ? quote(value) : String(value);
}

const key = (k: string) => (/^[A-Za-z_$][\w$]*$/.test(k) ? k : quote(k));
const quote = (s: string) => `'${s.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;

/** The text of src/generated/symxchange-facts.ts. */
export function renderFacts(facts: Facts): string {
  const services = SERVICES.map((s) => `${WSDL_ROOT}/${s}/`);
  const block = (doc: string, declaration: string, value: unknown) =>
    `${doc}\nexport const ${declaration} = ${literal(value, '')};\n`;
  return [
    `/**
 * GENERATED by scripts/symxchange-facts.ts: do not edit. Regenerate with
 *   npx tsx scripts/symxchange-facts.ts <symxify checkout or its bare git dir>
 * Read from the published SymXchange WSDLs/XSDs of github.com/${REPOSITORY}
 * at commit ${facts.source.commit}, in
${services.map((path) => ` *   ${path}\n`).join('')} * Only facts are transcribed (names, order, types, facets, occurrences); the vendor's files are not
 * part of this repository. Shapes: src/catalog/symxchange/types.ts; accessors: src/catalog/symxchange/index.ts;
 * the account: docs/symxchange.md.
 */
import type {
  SymxNamespace,
  SymxOperation,
  SymxService,
  SymxServiceName,
  SymxSource,
  XsdComplexType,
} from '../catalog/symxchange/types.js';
`,
    block('/** Where these facts come from. */', 'SYMX_SOURCE: SymxSource', {
      repository: REPOSITORY,
      commit: facts.source.commit,
      paths: services,
      identicalCopies: facts.source.identicalCopies,
    }),
    block(
      '/** Every namespace the four services load, by alias (types are named `<alias>:<local name>`). */',
      'SYMX_NAMESPACES: Readonly<Record<string, SymxNamespace>>',
      Object.fromEntries(facts.namespaces),
    ),
    block(
      '/** The services, one SOAP 1.1 endpoint each. */',
      'SYMX_SERVICES: Readonly<Record<SymxServiceName, SymxService>>',
      Object.fromEntries(facts.services.map((s) => [s.name, s])),
    ),
    block(
      "/** The SOAP operations that correspond to coregate's operations (same names), by service then name. */",
      'SYMX_OPERATIONS: readonly SymxOperation[]',
      facts.operations,
    ),
    block(
      "/** The complex type of each catalog record the operations carry (share records: the update schema's). */",
      'SYMX_RECORD_TYPES: Readonly<Record<string, string>>',
      Object.fromEntries(facts.recordTypes),
    ),
    block(
      '/** Common status/error types every service imports (not referenced by these operations: their errors are SOAP Faults). */',
      'SYMX_ERROR_TYPES: readonly string[]',
      facts.errorTypes,
    ),
    block(
      '/** Every complex type the operations reach, recursively, plus the error types, by name. */',
      'SYMX_COMPLEX_TYPES: Readonly<Record<string, XsdComplexType>>',
      Object.fromEntries(facts.complexTypes),
    ),
  ].join('\n');
}

function main(argv: readonly string[]): void {
  const args = [...argv];
  const outIndex = args.indexOf('--out');
  const out = outIndex >= 0 ? args.splice(outIndex, 2)[1] : FACTS_FILE;
  const [root, ...rest] = args;
  if (!root || !out || rest.length > 0) {
    process.stderr.write(
      'usage: npx tsx scripts/symxchange-facts.ts <symxify checkout or bare git dir> [--out <file>]\n',
    );
    process.exit(2);
  }
  const facts = readFacts(openSource(root));
  writeFileSync(out, renderFacts(facts));
  process.stderr.write(
    `wrote ${out}: ${facts.operations.length} operations, ${facts.complexTypes.size} complex types, commit ${facts.source.commit}\n`,
  );
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) main(process.argv.slice(2));
