/**
 * Which SymXchange release a core speaks (docs/symxchange.md, "Releases"). A core's address is its base as its
 * installation publishes it: with a path (`https://core:8087/SymXchange/2020.00`) each service is at
 * `<url>/<service>`, without one at `/SymXchange/<service>`. At start the gateway reads each service's WSDL
 * from the core (`<service address>?wsdl` and the XSDs it imports) or from `COREGATE_SYMXCHANGE_WSDL_DIR`, and
 * recognises a release it knows, or learns one it has never seen whose constructs are the known ones (as zeep
 * learns any WSDL). A core whose WSDLs cannot be read is spoken to in the configured release, the one its
 * address names, or 3.0, and the log says so once.
 */
import { readFile, stat } from 'node:fs/promises';
import { join, normalize, relative, isAbsolute } from 'node:path';
import { KNOWN_FACTS, releaseFacts, type SymxFacts, type SymxServiceName } from '../catalog/symxchange/index.js';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { SymxchangeSettings } from '../config.js';
import type { CodecOperation } from '../symxchange/mapping.js';
import { readRelease } from '../symxchange/release-reader.js';
import type { CoreLog } from './core.js';
import type { CoreTransport } from './transport.js';

export const SYMXCHANGE_SERVICES: readonly SymxServiceName[] = ['findby', 'corptransfer', 'account', 'collateral'];

/**
 * The path of a service at a core: `<url's path>/<service>` when the core's address names a path, else
 * `/SymXchange/<service>`.
 * @example serviceAddress(new URL('http://core:8087/SymXchange/2020.00'), 'account') // '/SymXchange/2020.00/account'
 * @example serviceAddress(new URL('http://core:8087'), 'findby') // '/SymXchange/findby'
 */
export function serviceAddress(url: URL, service: SymxServiceName): string {
  const base = url.pathname.replace(/\/+$/, '');
  return `${base === '' ? '/SymXchange' : base}/${service}`;
}

/** What a core's address names its release: its last path segment (`…/SymXchange/2020.00` → `2020.00`), or `learned`. */
export const releaseLabel = (url: URL): string => url.pathname.replace(/\/+$/, '').split('/').pop() || 'learned';

/** A known release by its name, or undefined. */
export const knownRelease = (name: string): SymxFacts | undefined =>
  KNOWN_FACTS.find((facts) => facts.release.release === name);

/**
 * The release spoken until (or unless) the core's WSDLs say otherwise: the configured one, else the one the
 * address's last path segment names (`…/SymXchange/2020.00`), else 3.0. Throws for a configured release
 * coregate has no facts for.
 */
export function assumedRelease(url: URL, configured: string | undefined): SymxFacts {
  if (configured !== undefined) {
    const facts = knownRelease(configured);
    if (!facts)
      throw new Error(
        `COREGATE_SYMXCHANGE_RELEASE: coregate knows SymXchange ${KNOWN_FACTS.map((f) => f.release.release).join(', ')}, not ${configured} (a core serving its WSDLs is learned whatever its release)`,
      );
    return facts;
  }
  return knownRelease(releaseLabel(url)) ?? KNOWN_FACTS[0]!;
}

/** How many documents (WSDLs and XSDs) one core's release may take to read, and how large each may be. */
const MAX_DOCUMENTS = 64;
const MAX_DOCUMENT_BYTES = 16 * 1024 * 1024;

/** Where a core's WSDLs are read from: the core itself, or a folder. */
export interface WsdlSource {
  /** What the log and `core check` name it by. */
  readonly origin: string;
  /** The location of a service's WSDL, or undefined when the source has none for it. */
  locate(service: SymxServiceName): Promise<string | undefined>;
  /** A document's text by its location (a WSDL's imports are resolved against it by the reader). */
  load(location: string): Promise<string>;
}

/**
 * The core's own WSDLs: `<service address>?wsdl`, and what they import, on the core's origin only. A service
 * whose WSDL the core answers 404 for is one the core does not have.
 */
export function coreWsdlSource(url: URL, transport: CoreTransport): WsdlSource {
  let loaded = 0;
  const fetched = new Map<string, string>();
  async function get(location: string): Promise<{ status: number; body: string }> {
    const target = new URL(location);
    // A WSDL may only lead to documents of the core itself: never another host, whatever it names.
    if (target.origin !== url.origin) throw new Error(`${location} is not on the core's origin ${url.origin}`);
    if ((loaded += 1) > MAX_DOCUMENTS) throw new Error(`the core's WSDLs import more than ${MAX_DOCUMENTS} documents`);
    const answer = await transport.get(`${target.pathname}${target.search}`);
    if (answer.status === 200 && Buffer.byteLength(answer.body) > MAX_DOCUMENT_BYTES)
      throw new Error(`${target.pathname} is larger than ${MAX_DOCUMENT_BYTES} bytes`);
    return { status: answer.status, body: answer.body };
  }
  return {
    origin: url.origin + url.pathname.replace(/\/+$/, ''),
    async locate(service) {
      const location = `${url.origin}${serviceAddress(url, service)}?wsdl`;
      const answer = await get(location);
      if (answer.status === 404) return undefined;
      if (answer.status !== 200) throw new Error(`GET ${serviceAddress(url, service)}?wsdl: HTTP ${answer.status}`);
      fetched.set(location, answer.body);
      return location;
    },
    async load(location) {
      const known = fetched.get(location);
      if (known !== undefined) return known;
      const answer = await get(location);
      if (answer.status !== 200) throw new Error(`GET ${new URL(location).pathname}: HTTP ${answer.status}`);
      return answer.body;
    },
  };
}

/**
 * A folder of WSDLs and XSDs (`COREGATE_SYMXCHANGE_WSDL_DIR`), for a core that does not serve them: a service's
 * WSDL is `<service>.wsdl`, `<Service>Service.wsdl` (as installations name them) or `<service>/<service>.wsdl`;
 * imports resolve inside the folder only.
 */
export function folderWsdlSource(dir: string): WsdlSource {
  const root = normalize(dir);
  let loaded = 0;
  const inside = (path: string) => {
    const rel = relative(root, normalize(path));
    return rel !== '' && !rel.startsWith('..') && !isAbsolute(rel);
  };
  return {
    origin: root,
    async locate(service) {
      const capitalised = `${service === 'findby' ? 'FindBy' : service === 'corptransfer' ? 'CorpTransfer' : service[0]!.toUpperCase() + service.slice(1)}Service.wsdl`;
      for (const name of [`${service}.wsdl`, capitalised, join(service, `${service}.wsdl`)]) {
        const path = join(root, name);
        if (
          await stat(path).then(
            (found) => found.isFile(),
            () => false,
          )
        )
          return pathToFileURL(path).href;
      }
      return undefined;
    },
    async load(location) {
      const path = fileURLToPath(location);
      if (!inside(path)) throw new Error(`${location} is outside ${root}`);
      if ((loaded += 1) > MAX_DOCUMENTS) throw new Error(`the WSDLs import more than ${MAX_DOCUMENTS} documents`);
      const text = await readFile(path, 'utf8');
      if (Buffer.byteLength(text) > MAX_DOCUMENT_BYTES)
        throw new Error(`${path} is larger than ${MAX_DOCUMENT_BYTES} bytes`);
      return text;
    },
  };
}

/** What reading a core's WSDLs found. */
export interface ReleaseReading {
  readonly facts: SymxFacts;
  /** True when the facts are a release coregate knows (the core's WSDLs declare exactly its facts). */
  readonly known: boolean;
  /** The services the source had no WSDL for. */
  readonly missing: readonly SymxServiceName[];
}

/**
 * The known release a core's facts are: the one whose namespaces they use, URI for URI (each release names its
 * own: `…/crud/account` is 3.0's, `…/account` 2020.00's). Its facts are then the vendor's, which coregate's
 * mapping was checked against; the core's own WSDLs may hold fewer operations (coregate's own face serves its
 * operations only).
 */
function knownReleaseOf(read: SymxFacts): SymxFacts | undefined {
  const uris = (facts: SymxFacts) =>
    Object.entries(facts.release.namespaces)
      .map(([alias, namespace]) => `${alias}=${namespace.uri}`)
      .sort();
  const declared = uris(read);
  return KNOWN_FACTS.find((facts) => {
    const known = new Set(uris(facts));
    return declared.length > 0 && declared.every((entry) => known.has(entry));
  });
}

/**
 * Reads a core's release from its WSDLs: a known release when they use its namespaces, else a learned one
 * labelled by the address's last path segment (or `learned`).
 */
export async function readCoreRelease(
  source: WsdlSource,
  operations: readonly CodecOperation[],
  label: string,
): Promise<ReleaseReading> {
  const services: Partial<Record<SymxServiceName, string>> = {};
  const missing: SymxServiceName[] = [];
  for (const service of SYMXCHANGE_SERVICES) {
    const location = await source.locate(service);
    if (location) services[service] = location;
    else missing.push(service);
  }
  if (Object.keys(services).length === 0) throw new Error(`${source.origin} has no WSDL of any SymXchange service`);
  const release = await readRelease({ release: label, load: source.load, services, operations });
  const read = releaseFacts(release);
  const known = knownReleaseOf(read);
  return known ? { facts: known, known: true, missing } : { facts: read, known: false, missing };
}

/**
 * The release of one Sym's core, read at start; undefined (and one line in the log) when its WSDLs cannot be
 * read, so that the gateway keeps the release it assumed.
 */
export async function learnRelease(
  core: {
    readonly sym: number;
    readonly url: URL;
    readonly transport: CoreTransport;
    readonly dialect: { readonly facts: SymxFacts };
  },
  settings: SymxchangeSettings,
  operations: readonly CodecOperation[],
  log: CoreLog | undefined,
): Promise<SymxFacts | undefined> {
  const source = settings.wsdlDir ? folderWsdlSource(settings.wsdlDir) : coreWsdlSource(core.url, core.transport);
  try {
    const reading = await readCoreRelease(source, operations, releaseLabel(core.url));
    log?.info?.(
      { sym: core.sym, release: reading.facts.release.release, known: reading.known, from: source.origin },
      reading.known
        ? `the core speaks SymXchange ${reading.facts.release.release}`
        : `the core speaks a SymXchange release coregate has no facts for: learned from its WSDLs as ${reading.facts.release.release}`,
    );
    return reading.facts;
  } catch (error) {
    log?.warn(
      {
        sym: core.sym,
        release: core.dialect.facts.release.release,
        from: source.origin,
        error: (error as Error).message,
      },
      `the core's WSDLs cannot be read: speaking SymXchange ${core.dialect.facts.release.release} to it`,
    );
    return undefined;
  }
}
