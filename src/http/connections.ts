/**
 * Who may hold the server's connections. The process takes at most `COREGATE_MAX_CONNECTIONS`; so that one
 * client cannot hold all of them (slow bodies, idle sockets, a loop of refused calls), each client address
 * holds at most `COREGATE_MAX_CONNECTIONS_PER_ADDRESS` (counted as lockouts count a caller: an IPv6 client
 * by its /64, which one host usually has whole), and a call that is refused closes its connection as soon as it is answered.
 */
import type { Server } from 'node:http';
import { BlockList, isIPv4, isIPv6, type Socket } from 'node:net';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { callerAddress } from '../security/authenticator.js';

/** Statuses of a call refused before any work: its client gets no further use of the connection. */
const REFUSED_STATUSES: ReadonlySet<number> = new Set([401, 403, 413, 415, 429]);
/** The same refusals on the SOAP face, where a Fault is an HTTP 500 and the problem code tells them apart. */
const REFUSED_CODES: ReadonlySet<string> = new Set([
  'UNAUTHENTICATED',
  'FORBIDDEN',
  'PAYLOAD_TOO_LARGE',
  'UNSUPPORTED_MEDIA_TYPE',
  'RATE_LIMITED',
]);

/** A list of addresses and CIDR ranges (`10.0.0.5`, `10.1.0.0/16`, `fd00::/8`), or undefined when empty. */
function addressList(entries: readonly string[]): BlockList | undefined {
  if (entries.length === 0) return undefined;
  const list = new BlockList();
  for (const entry of entries) {
    const [address = '', prefix] = entry.split('/');
    const type = isIPv6(address) ? 'ipv6' : 'ipv4';
    if (prefix === undefined) list.addAddress(address, type);
    else list.addSubnet(address, Number(prefix), type);
  }
  return list;
}

function inList(list: BlockList, address: string): boolean {
  const plain = /^::ffff:([0-9.]+)$/i.exec(address)?.[1] ?? address;
  return list.check(plain, isIPv4(plain) ? 'ipv4' : 'ipv6');
}

export interface ConnectionLimitOptions {
  /** Open connections at most per client address; 0 for no limit. */
  readonly perAddress: number;
  /** Proxies whose connections are not limited (they carry many clients). */
  readonly trustedProxies: readonly string[];
  /** Told of each connection closed for its address's limit (the metric). */
  readonly onRefused?: () => void;
}

/**
 * Counts each client address's open connections and closes, as it arrives, one past the limit. The map
 * holds only addresses with an open connection, so it is bounded by the server's own connection cap.
 * @example limitConnectionsPerAddress(app.server, { perAddress: 256, trustedProxies: [] })
 */
export function limitConnectionsPerAddress(server: Server, options: ConnectionLimitOptions): void {
  if (options.perAddress === 0) return;
  const trusted = addressList(options.trustedProxies);
  const open = new Map<string, number>();
  server.on('connection', (socket: Socket) => {
    const address = socket.remoteAddress;
    if (address === undefined) return;
    if (trusted && inList(trusted, address)) return;
    const key = callerAddress(address);
    const count = (open.get(key) ?? 0) + 1;
    if (count > options.perAddress) {
      options.onRefused?.();
      socket.destroy();
      return;
    }
    open.set(key, count);
    socket.once('close', () => {
      const left = (open.get(key) ?? 1) - 1;
      if (left === 0) open.delete(key);
      else open.set(key, left);
    });
  });
}

/**
 * A refused call (401, 403, 413, 415, 429, or the same problems as SOAP Faults) is answered with
 * `Connection: close`: the server closes the connection once the answer is out, instead of keeping it for
 * a body it will not read or a next call from a client it has just refused.
 */
export function closeIfRefused(request: FastifyRequest, reply: FastifyReply): void {
  if (REFUSED_STATUSES.has(reply.statusCode) || (request.problemCode && REFUSED_CODES.has(request.problemCode)))
    reply.header('connection', 'close');
}
