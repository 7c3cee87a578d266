/**
 * Who may hold the server's connections. Each client address holds at most its share,
 * `COREGATE_MAX_CONNECTIONS_PER_ADDRESS` (counted as lockouts count a caller: an IPv6 client by its /64, which
 * one host usually has whole; a trusted proxy, which carries many clients, has no such limit), and the process
 * at most `COREGATE_MAX_CONNECTIONS`. Past the cap a new connection is not simply refused, which would leave the
 * cap to whoever filled it first: it takes the place of the oldest connection not being answered of the address
 * holding the most, and is refused only when its own address holds the most. A refused call loses its connection.
 */
import { BlockList, isIPv4, isIPv6 } from 'node:net';
import { callerAddress } from './authenticator.js';

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

/**
 * A call refused for its token, scope, size, media type or rate: its connection is closed once it is answered,
 * instead of kept for a body that will not be read or a next call from a client just refused.
 */
export function isRefusal(status: number, code: string | undefined): boolean {
  return REFUSED_STATUSES.has(status) || (code !== undefined && REFUSED_CODES.has(code));
}

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

export interface ConnectionShareOptions {
  /** Open connections at most (`COREGATE_MAX_CONNECTIONS`). */
  readonly max: number;
  /** Open connections at most per client address; 0 for no limit. */
  readonly perAddress: number;
  /** Proxies whose connections are not limited per address. */
  readonly trustedProxies: readonly string[];
}

/** A client address and its open connections, oldest first. */
interface Holder<C> {
  readonly address: string;
  readonly connections: Set<C>;
}

/**
 * The open connections of each client address: everything kept is per open connection, so bounded by the cap.
 * @example const share = new ConnectionShare<Socket>({ max: 2000, perAddress: 256, trustedProxies: [] }, busy);
 */
export class ConnectionShare<C> {
  private readonly trusted: BlockList | undefined;
  private readonly holders = new Map<string, Holder<C>>();
  private readonly holderOf = new Map<C, Holder<C>>();

  /** `beingAnswered`: a connection with a whole request whose answer is not finished, never closed for room. */
  constructor(
    private readonly options: ConnectionShareOptions,
    private readonly beingAnswered: (connection: C) => boolean,
  ) {
    this.trusted = addressList(options.trustedProxies);
  }

  /**
   * Counts a new connection from `remoteAddress` and says which connection to close, if one must be: the new
   * one itself (its address holds its share, or the most at the cap) or another that gives way to it. The one
   * to close is no longer counted.
   */
  admit(connection: C, remoteAddress: string): C | undefined {
    const address = callerAddress(remoteAddress);
    const holder = this.holders.get(address) ?? { address, connections: new Set<C>() };
    const limited = this.options.perAddress > 0 && !(this.trusted && inList(this.trusted, remoteAddress));
    if (limited && holder.connections.size >= this.options.perAddress) return connection;
    this.holders.set(address, holder);
    holder.connections.add(connection);
    this.holderOf.set(connection, holder);
    if (this.holderOf.size <= this.options.max) return undefined;
    const closing = this.giveWay(connection, holder);
    this.release(closing);
    return closing;
  }

  /** Forgets a closed connection. */
  release(connection: C): void {
    const holder = this.holderOf.get(connection);
    if (!holder) return;
    this.holderOf.delete(connection);
    holder.connections.delete(connection);
    if (holder.connections.size === 0) this.holders.delete(holder.address);
  }

  /** Who gives way to `newcomer`: the oldest connection not being answered of an address holding more. */
  private giveWay(newcomer: C, own: Holder<C>): C {
    const larger = [...this.holders.values()]
      .filter((holder) => holder.connections.size > own.connections.size)
      .sort((a, b) => b.connections.size - a.connections.size);
    for (const holder of larger)
      for (const connection of holder.connections) if (!this.beingAnswered(connection)) return connection;
    return newcomer;
  }
}
