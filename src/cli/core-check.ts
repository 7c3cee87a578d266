/**
 * `coregate core check`: calls each configured SymXchange core once and prints whether it is reachable,
 * who it says it is over TLS (and whether the gateway trusts that), how long it took, and which SymXchange
 * release its WSDLs declare: per service, the operations coregate serves that the core lacks, and the fields
 * of each record found on one side only.
 */
import { connect as connectTcp, isIP } from 'node:net';
import { connect as connectTls, type PeerCertificate } from 'node:tls';
import type { Config, SymxchangeSettings } from '../config.js';
import { integerOption, parseCommand, UsageError, type CommandSpec } from './args.js';

const CORE: CommandSpec = {
  usage: `Usage: coregate core check [--sym N]

With COREGATE_CORE=symxchange: connects to each configured core (or Sym N's), shows its TLS identity and
whether the gateway trusts it, and reads its WSDLs (or COREGATE_SYMXCHANGE_WSDL_DIR's): the SymXchange
release it speaks, per service the operations coregate serves that the core lacks (they answer 501
CORE_OPERATION_UNSUPPORTED), and the fields found on one side only. Exits 1 when a core cannot be reached.`,
  options: { sym: { type: 'string' } },
};

type Print = (line: string) => void;

interface Connection {
  readonly ms: number;
  readonly tls?: {
    readonly protocol: string | null;
    readonly cipher: string;
    readonly peer: PeerCertificate;
    readonly trusted: boolean;
    readonly reason?: string;
  };
}

/** One connection, TLS when the URL says so, with what the handshake shows; never verified away. */
async function probeConnection(url: URL, settings: SymxchangeSettings): Promise<Connection> {
  const { tlsOptions } = await import('../core/transport.js');
  const port = Number(url.port) || (url.protocol === 'https:' ? 443 : 80);
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const fail = (error: Error) => reject(error);
    if (url.protocol !== 'https:') {
      const socket = connectTcp({ host: url.hostname, port, timeout: settings.connectTimeoutMs }, () => {
        socket.end();
        resolve({ ms: performance.now() - started });
      });
      socket.on('timeout', () => {
        socket.destroy();
        fail(new Error(`no connection within ${settings.connectTimeoutMs} ms`));
      });
      socket.on('error', fail);
      return;
    }
    // The handshake completes even for an untrusted certificate, so the check can say why it is not trusted.
    const socket = connectTls(
      {
        host: url.hostname,
        port,
        // SNI names a host, never an address (RFC 6066).
        ...(settings.serverName || !isIP(url.hostname) ? { servername: settings.serverName ?? url.hostname } : {}),
        ...tlsOptions(url, settings),
        rejectUnauthorized: false,
        timeout: settings.connectTimeoutMs,
      },
      () => {
        const cipher = socket.getCipher();
        resolve({
          ms: performance.now() - started,
          tls: {
            protocol: socket.getProtocol(),
            cipher: cipher.name,
            peer: socket.getPeerCertificate(),
            trusted: socket.authorized,
            ...(socket.authorizationError ? { reason: String(socket.authorizationError) } : {}),
          },
        });
        socket.end();
      },
    );
    socket.on('timeout', () => {
      socket.destroy();
      fail(new Error(`no TLS handshake within ${settings.connectTimeoutMs} ms`));
    });
    socket.on('error', fail);
  });
}

/** At most this many names a line lists; the rest are counted. */
const LISTED = 12;
const listed = (names: readonly string[]) =>
  names.length <= LISTED ? names.join(', ') : `${names.slice(0, LISTED).join(', ')} and ${names.length - LISTED} more`;

/** The release a core's WSDLs declare, and what differs between the core and coregate. */
async function printRelease(
  url: URL,
  settings: SymxchangeSettings,
  transport: import('../core/transport.js').CoreTransport,
  print: Print,
): Promise<void> {
  const [
    {
      assumedRelease,
      coreWsdlSource,
      folderWsdlSource,
      readCoreRelease,
      releaseLabel,
      serviceAddress,
      SYMXCHANGE_SERVICES,
    },
    { CORE_OPERATIONS: operations, SHARED_SCHEMAS },
    catalog,
    { createSymxMapping },
  ] = await Promise.all([
    import('../core/core-release.js'),
    import('../operations/index.js'),
    import('../catalog/index.js'),
    import('../symxchange/mapping.js'),
  ]);
  const source = settings.wsdlDir ? folderWsdlSource(settings.wsdlDir) : coreWsdlSource(url, transport);
  const started = performance.now();
  let reading;
  try {
    reading = await readCoreRelease(source, operations, releaseLabel(url));
  } catch (error) {
    print(`  WSDLs of ${source.origin}: cannot be read (${(error as Error).message})`);
    print(`  the gateway speaks SymXchange ${assumedRelease(url, settings.release).release.release} to this core`);
    return;
  }
  const { facts, known, missing } = reading;
  print(
    `  SymXchange ${facts.release.release}${known ? '' : ' (learned: a release coregate has no facts for)'}, read from ${source.origin} in ${(performance.now() - started).toFixed(1)} ms`,
  );
  const mapping = createSymxMapping(operations, SHARED_SCHEMAS, facts);
  for (const service of SYMXCHANGE_SERVICES) {
    const ours = operations.filter((op) => op.service === service);
    const names = (ops: readonly { name: string }[]) => [...new Set(ops.map((op) => op.name))].sort();
    if (missing.includes(service) || !facts.hasService(service)) {
      print(
        `  ${service}: the core has no such service: its ${names(ours).length} operations answer 501 CORE_OPERATION_UNSUPPORTED`,
      );
      continue;
    }
    const lacking = names(mapping.lacking.filter((op) => op.service === service));
    print(
      `  ${service} at ${serviceAddress(url, service)}: ${names(ours).length - lacking.length} of ${names(ours).length} operations` +
        (lacking.length > 0 ? `; the core lacks ${listed(lacking)} (501 CORE_OPERATION_UNSUPPORTED)` : ''),
    );
  }
  for (const record of catalog.RECORDS) {
    const elements = facts.recordElements(record.name).map((element) => element.name);
    if (elements.length === 0) continue;
    const fields = record.fields.map((field) => field.name);
    const coregateOnly = fields.filter((name) => !elements.includes(name));
    const coreOnly = elements.filter((name) => !fields.includes(name) && !name.endsWith('List'));
    if (coregateOnly.length > 0) print(`  ${record.name}: only coregate has ${listed(coregateOnly)} (null in answers)`);
    if (coreOnly.length > 0) print(`  ${record.name}: only the core has ${listed(coreOnly)} (not read)`);
  }
}

export async function coreCommand(argv: string[], config: Config, print: Print): Promise<void> {
  const { flags, values, positionals } = parseCommand(CORE, argv);
  if (flags.has('help') || positionals[0] !== 'check') return print(CORE.usage);
  const settings = config.symxchange;
  if (!settings) throw new UsageError('coregate core check needs COREGATE_CORE=symxchange and COREGATE_SYMXCHANGE_URL');
  const only = values.sym === undefined ? undefined : integerOption(values.sym, 'sym', 0, CORE);
  const cores = [...settings.urls].filter(([sym]) => only === undefined || sym === only);
  if (cores.length === 0) throw new UsageError(`no core is configured for Sym ${only}`);
  const { coreTransport } = await import('../core/transport.js');
  let unreachable = 0;
  for (const [sym, url] of cores) {
    print(`Sym ${sym}: ${url.origin}`);
    let failed = false;
    try {
      const connection = await probeConnection(url, settings);
      print(`  connected in ${connection.ms.toFixed(1)} ms`);
      if (connection.tls) {
        const { protocol, cipher, peer, trusted, reason } = connection.tls;
        print(`  TLS ${protocol ?? '?'} ${cipher}`);
        print(
          `  certificate: ${peer.subject?.CN ?? '?'}, issued by ${peer.issuer?.CN ?? '?'}, valid to ${peer.valid_to}`,
        );
        print(`  fingerprint: ${peer.fingerprint256}`);
        print(trusted ? '  trusted: yes' : `  trusted: NO (${reason ?? 'unknown reason'}): calls will fail`);
        if (!trusted) failed = true;
      }
      const transport = coreTransport(url, settings);
      try {
        await printRelease(url, settings, transport, print);
      } finally {
        await transport.close();
      }
    } catch (error) {
      failed = true;
      print(`  unreachable: ${(error as Error).message}`);
    }
    if (failed) unreachable += 1;
  }
  if (unreachable > 0) throw new Error(`${unreachable} of ${cores.length} core(s) cannot be reached`);
}
