/**
 * `coregate core check`: calls each configured SymXchange core once and prints whether it is reachable,
 * who it says it is over TLS (and whether the gateway trusts that), and how long it took.
 */
import { connect as connectTcp, isIP } from 'node:net';
import { connect as connectTls, type PeerCertificate } from 'node:tls';
import type { Config, SymxchangeSettings } from '../config.js';
import { integerOption, parseCommand, UsageError, type CommandSpec } from './args.js';

const CORE: CommandSpec = {
  usage: `Usage: coregate core check [--sym N]

With COREGATE_CORE=symxchange: connects to each configured core (or Sym N's), shows its TLS identity and
whether the gateway trusts it, and reads its FindBy WSDL once, with the time each step took. Exits 1 when
a core cannot be reached.`,
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
        const started = performance.now();
        const answer = await transport.get('/SymXchange/findby?wsdl');
        print(
          `  GET /SymXchange/findby?wsdl: HTTP ${answer.status} (${answer.contentType || 'no content type'}) in ${(performance.now() - started).toFixed(1)} ms`,
        );
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
