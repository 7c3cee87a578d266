/**
 * Writes src/generated/symxchange-<release>.ts for each SymXchange release coregate knows: the facts
 * (services, SOAP operations, namespaces, request and response elements, every complex type they reach, the
 * record types and update objects) that src/symxchange/release-reader.ts reads from a public repository's
 * copy of the release's WSDLs/XSDs.
 *
 *   npx tsx scripts/symxchange-facts.ts [--release 3.0|2020.00] <checkout, or its bare git dir> [--out <file>]
 *
 * Without --release, the repository's layout names the release. The vendor's files are read, never copied:
 * only facts (names, order, types, facets, occurrences) are written. test/symxchange-facts.test.ts
 * regenerates each module and fails while a committed one is stale.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { SymxRelease, SymxServiceName } from '../src/catalog/symxchange/types.js';
import { OPERATIONS } from '../src/operations/index.js';
import { readRelease } from '../src/symxchange/release-reader.js';

/** Where each known release is published, and the module its facts are written to. */
interface KnownRelease {
  readonly release: string;
  readonly repository: string;
  /** Each service's WSDL, by path in the repository. */
  readonly services: Readonly<Partial<Record<SymxServiceName, string>>>;
  /** The folders the facts name as their source. */
  readonly paths: readonly string[];
  /** A second copy of the same files in the repository, checked to hold the same bytes: the folder of each. */
  readonly copies?: (path: string) => string;
  readonly module: string;
  readonly constant: string;
}

const SYMXIFY_ROOT = 'cdn/wwwroot/wsdl/crud';
const BACKBASE_ROOT = 'src/main/resources/wsdl';

export const KNOWN: Readonly<Record<string, KnownRelease>> = {
  '3.0': {
    release: '3.0',
    repository: 'nicholashosken/symxify',
    services: Object.fromEntries(
      (['findby', 'corptransfer', 'account', 'collateral'] as const).map((s) => [s, `${SYMXIFY_ROOT}/${s}/${s}.wsdl`]),
    ),
    paths: ['findby', 'corptransfer', 'account', 'collateral'].map((s) => `${SYMXIFY_ROOT}/${s}/`),
    copies: (path) => path.replace(/^cdn\//, 'api/'),
    module: 'src/generated/symxchange-3.0.ts',
    constant: 'RELEASE_3_0_FACTS',
  },
  '2020.00': {
    release: '2020.00',
    repository: 'Backbase/symitar-core-banking-client',
    // The repository has no corptransfer and no collateral service: 2020.00 installations it was written for lack them.
    services: { findby: `${BACKBASE_ROOT}/FindByService.wsdl`, account: `${BACKBASE_ROOT}/AccountService.wsdl` },
    paths: [`${BACKBASE_ROOT}/FindByService.wsdl`, `${BACKBASE_ROOT}/AccountService.wsdl`, `${BACKBASE_ROOT}/xsd/`],
    module: 'src/generated/symxchange-2020.00.ts',
    constant: 'RELEASE_2020_00_FACTS',
  },
};

const moduleFile = (known: KnownRelease) => fileURLToPath(new URL(`../${known.module}`, import.meta.url));

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

/** The known release whose WSDLs the repository holds, by its layout. */
export function detectRelease(source: Source): KnownRelease | undefined {
  return Object.values(KNOWN).find((known) => Object.values(known.services).every((path) => source.read(path)));
}

/** Reads a known release from its repository with the runtime reader; the copies are compared file by file. */
export async function readKnownRelease(known: KnownRelease, source: Source): Promise<SymxRelease> {
  const read: string[] = [];
  const release = await readRelease({
    release: known.release,
    services: known.services,
    operations: OPERATIONS,
    load: async (path) => {
      const text = source.read(path);
      if (text === undefined) throw new Error(`${source.root} has no ${path}: is it ${known.repository}?`);
      read.push(path);
      return text;
    },
  });
  const { copies } = known;
  const identicalCopies = copies
    ? known.paths.filter((folder) =>
        read.filter((path) => path.startsWith(folder)).every((path) => source.read(copies(path)) === source.read(path)),
      )
    : [];
  return {
    ...release,
    source: {
      repository: known.repository,
      commit: source.commit,
      paths: known.paths,
      identicalCopies: copies ? identicalCopies.map(copies) : [],
    },
  };
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

/** The text of a release's module. */
export function renderRelease(known: KnownRelease, release: SymxRelease): string {
  // Members in the order types.ts declares them, whatever order the reader built them in.
  const ordered: { [K in keyof Required<SymxRelease>]: SymxRelease[K] } = {
    release: release.release,
    source: release.source,
    namespaces: release.namespaces,
    services: release.services,
    operations: release.operations,
    recordTypes: release.recordTypes,
    updateObjects: release.updateObjects,
    errorTypes: release.errorTypes,
    complexTypes: release.complexTypes,
  };
  return `/**
 * GENERATED by scripts/symxchange-facts.ts: do not edit. Regenerate with
 *   npx tsx scripts/symxchange-facts.ts --release ${known.release} <${known.repository} checkout or its bare git dir>
 * SymXchange ${known.release}, read from the published WSDLs/XSDs of github.com/${known.repository}
 * at commit ${release.source.commit}, in
${release.source.paths.map((path) => ` *   ${path}\n`).join('')} * Only facts are transcribed (names, order, types, facets, occurrences); the vendor's files are not
 * part of this repository. Shapes: src/catalog/symxchange/types.ts; accessors: src/catalog/symxchange/index.ts;
 * the account: docs/symxchange.md.
 */
import type { SymxRelease } from '../catalog/symxchange/types.js';

/** SymXchange ${known.release}: its services, the SOAP operations of coregate's operations, and every type they reach. */
export const ${known.constant}: SymxRelease = ${literal(ordered, '')};
`;
}

const USAGE =
  'usage: npx tsx scripts/symxchange-facts.ts [--release 3.0|2020.00] <checkout or bare git dir> [--out <file>]\n';

async function main(argv: readonly string[]): Promise<void> {
  const args = [...argv];
  const option = (name: string) => {
    const at = args.indexOf(name);
    return at >= 0 ? (args.splice(at, 2)[1] ?? '') : undefined;
  };
  const out = option('--out');
  const label = option('--release');
  const [root, ...rest] = args;
  if (!root || out === '' || label === '' || rest.length > 0) {
    process.stderr.write(USAGE);
    process.exit(2);
  }
  const source = openSource(root);
  const known = label === undefined ? detectRelease(source) : KNOWN[label];
  if (!known) {
    process.stderr.write(
      label === undefined
        ? `${root} holds the WSDLs of no known release (${Object.keys(KNOWN).join(', ')}): name one with --release\n`
        : `unknown release ${label}: known are ${Object.keys(KNOWN).join(', ')}\n`,
    );
    process.exit(2);
  }
  const release = await readKnownRelease(known, source);
  const file = out ?? moduleFile(known);
  writeFileSync(file, renderRelease(known, release));
  process.stderr.write(
    `wrote ${file}: SymXchange ${known.release}, ${release.operations.length} operations, ` +
      `${Object.keys(release.complexTypes).length} complex types, commit ${release.source.commit}\n`,
  );
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) await main(process.argv.slice(2));
