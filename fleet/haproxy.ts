/**
 * HAProxy in front of the fleet: its configuration (written by the run into its temporary directory; the
 * same text with example ports is committed as fleet/haproxy.cfg and shown in docs/fleet.md), the process,
 * and its runtime API (the stats socket) to see which servers are up and how often it retried.
 */
import { readFileSync } from 'node:fs';
import { createConnection } from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { runCommand, startChild, stopChild, type Child } from './children.js';
import { REPO_ROOT } from './services.js';

export interface BackendPlan {
  /** The frontend's port, where clients connect. */
  readonly port: number;
  readonly servers: readonly { readonly name: string; readonly port: number }[];
}

export interface HaproxyPlan {
  /** The runtime API's socket. */
  readonly socket: string;
  readonly store: BackendPlan;
  readonly gateway: BackendPlan;
}

/** The committed example (`npm run fleet -- --write-config` rewrites it). */
export const EXAMPLE_CONFIG_FILE = join(REPO_ROOT, 'fleet', 'haproxy.cfg');

/** The ports of the committed example. */
export const EXAMPLE_PLAN: HaproxyPlan = {
  socket: '/run/haproxy/coregate.sock',
  store: {
    port: 8080,
    servers: [
      { name: 'store1', port: 8627 },
      { name: 'store2', port: 8628 },
    ],
  },
  gateway: {
    port: 8090,
    servers: [
      { name: 'gateway1', port: 8637 },
      { name: 'gateway2', port: 8638 },
    ],
  },
};

const servers = (plan: BackendPlan) =>
  plan.servers.map((server) => `    server ${server.name} 127.0.0.1:${server.port}`).join('\n');

/** The configuration the fleet runs HAProxy with. */
export function haproxyConfig(plan: HaproxyPlan): string {
  return `# HAProxy in front of a coregate fleet: two instances over coregate's own store, and two gateway-mode
# instances whose core is the store fleet's SymXchange SOAP face, through this same HAProxy.
# Written by fleet/haproxy.ts (npm run fleet); docs/fleet.md explains each choice.

global
    maxconn 4096
    log stdout format raw local0 info
    # The runtime API: the fleet test reads server states and retry counts here.
    stats socket ${plan.socket} mode 600 level admin

defaults
    mode http
    log global
    option httplog
    option forwardfor
    timeout connect 2s
    timeout client 65s
    timeout server 30s
    timeout http-request 10s
    # Idle client connections are kept longer than a gateway keeps its pool's connections to the core (30 s),
    # so that HAProxy never closes one a gateway is about to send a write on.
    timeout http-keep-alive 65s
    timeout check 2s
    # Health: /ready answers 200 while the database answers (and, in gateway mode, while a core's circuit is
    # closed). A refused check connection (an instance that stopped listening) counts as a failed check.
    option httpchk GET /ready
    http-check expect status 200
    default-server check inter 1s fastinter 500ms downinter 1s rise 2 fall 2
    # A request that never reached a server (refused, reset before sending) is sent again, each time to
    # another server.
    retries 3
    option redispatch 1
    # Reads (find*, get*, search*, over JSON or SOAP) are also sent again when a server dropped the
    # connection without answering (killed mid-request), did not answer in time, or answered 503 (a draining
    # instance, or one whose database is unreachable): sending a read twice changes nothing.
    retry-on conn-failure empty-response response-timeout 503

frontend store_api
    bind 127.0.0.1:${plan.store.port}
    default_backend store

frontend gateway_api
    bind 127.0.0.1:${plan.gateway.port}
    default_backend gateway

backend store
    balance roundrobin
    acl read_json path_reg ^/gw/[0-9]+/[^/]+/[a-z]+/(find|get|search)[A-Za-z]*$
    acl read_soap req.hdr(SOAPAction) -m reg /(find|get|search)[A-Za-z]*[^A-Za-z]?$
    # A write with an Idempotency-Key is answered once by coregate's store: a repeat waits for the first
    # attempt's transaction and replays its answer, or applies it if the first attempt rolled back.
    acl keyed req.hdr(Idempotency-Key) -m found
    http-request disable-l7-retry unless read_json || read_soap || keyed
${servers(plan.store)}

backend gateway
    balance roundrobin
    acl read_json path_reg ^/gw/[0-9]+/[^/]+/[a-z]+/(find|get|search)[A-Za-z]*$
    # A gateway's keyed write is not sent again here: once a gateway has sent it to the core (which knows no
    # Idempotency-Key) and failed, a repeat is forwarded afresh. The client, which asked for it, decides.
    http-request disable-l7-retry unless read_json
${servers(plan.gateway)}
`;
}

/** Whether the committed example is the configuration the code writes. */
export function exampleConfigIsCurrent(): boolean {
  try {
    return readFileSync(EXAMPLE_CONFIG_FILE, 'utf8') === haproxyConfig(EXAMPLE_PLAN);
  } catch {
    return false;
  }
}

/** One row of `show stat`: a frontend, a backend or a server. */
export type StatRow = Readonly<Record<string, string>>;

export interface Haproxy {
  stats(): Promise<StatRow[]>;
  /** The state (`UP`, `DOWN`, `MAINT`, `UP 1/2` …) of a server. */
  serverStatus(backend: string, server: string): Promise<string>;
  /** Waits until the server is fully UP (rise checks passed); rejects after `timeoutMs`. */
  waitUp(backend: string, server: string, timeoutMs?: number): Promise<number>;
  /** Waits until HAProxy has marked the server DOWN; resolves with the ms it took. */
  waitDown(backend: string, server: string, timeoutMs?: number): Promise<number>;
  /** Retries and redispatches of a backend so far (`wretr`, `wredis`). */
  retries(backend: string): Promise<{ retries: number; redispatches: number }>;
  stop(): Promise<void>;
}

/** Sends one command to the runtime API and returns its answer. */
function runtimeCommand(socket: string, command: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const connection = createConnection(socket);
    let answer = '';
    connection.setEncoding('utf8');
    connection.on('data', (chunk: string) => (answer += chunk));
    connection.on('end', () => resolve(answer));
    connection.on('error', reject);
    connection.write(`${command}\n`);
  });
}

function parseStats(csv: string): StatRow[] {
  const [header = '', ...lines] = csv.trim().split('\n');
  const names = header.replace(/^# /, '').split(',');
  return lines.map((line) => {
    const values = line.split(',');
    return Object.fromEntries(names.map((name, index) => [name, values[index] ?? '']));
  });
}

/** Checks the configuration, starts HAProxy in the foreground and waits for its runtime API. */
export async function startHaproxy(configFile: string, socket: string, logFile: string): Promise<Haproxy> {
  await runCommand('haproxy', ['-c', '-q', '-f', configFile]);
  const child: Child = startChild('haproxy', 'haproxy', ['-db', '-f', configFile], { logFile });
  const stats = async () => parseStats(await runtimeCommand(socket, 'show stat'));
  for (let tries = 0; ; tries += 1) {
    if (
      await stats().then(
        () => true,
        () => false,
      )
    )
      break;
    if (!child.running() || tries > 200) throw new Error(`HAProxy did not start:\n${child.tail()}`);
    await sleep(50);
  }
  const serverStatus = async (backend: string, server: string) =>
    (await stats()).find((row) => row.pxname === backend && row.svname === server)?.status ?? 'unknown';
  const waitFor = async (backend: string, server: string, wanted: (status: string) => boolean, timeoutMs: number) => {
    const started = Date.now();
    for (;;) {
      const status = await serverStatus(backend, server);
      if (wanted(status)) return Date.now() - started;
      if (Date.now() - started > timeoutMs)
        throw new Error(`HAProxy: ${backend}/${server} is still ${status} after ${timeoutMs} ms`);
      await sleep(100);
    }
  };
  return {
    stats,
    serverStatus,
    waitUp: (backend, server, timeoutMs = 60_000) => waitFor(backend, server, (status) => status === 'UP', timeoutMs),
    waitDown: (backend, server, timeoutMs = 60_000) =>
      waitFor(backend, server, (status) => status.startsWith('DOWN'), timeoutMs),
    async retries(backend) {
      const row = (await stats()).find((stat) => stat.pxname === backend && stat.svname === 'BACKEND');
      return { retries: Number(row?.wretr ?? 0), redispatches: Number(row?.wredis ?? 0) };
    },
    stop: () => stopChild(child),
  };
}
