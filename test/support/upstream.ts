/**
 * A core that misbehaves on request: a real HTTP (or HTTPS) server whose answer to each call is whatever
 * the test sets, and which records every request it received (headers and body).
 */
import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer, type ServerOptions } from 'node:https';
import { createServer as createNetServer } from 'node:net';
import type { TLSSocket } from 'node:tls';

export interface Received {
  readonly method: string;
  readonly url: string;
  readonly headers: IncomingMessage['headers'];
  readonly body: string;
  /** Over HTTPS: the common name of the client certificate the caller presented, if any. */
  readonly clientCertificate?: string;
}

/** How the upstream answers one call: `n` counts calls since `behave` (1 for the first). */
export type Behaviour = (received: Received, response: ServerResponse, n: number) => void;

export interface Upstream {
  readonly url: string;
  /** Every request received since the last `behave`. */
  readonly received: Received[];
  /** Sets how the next calls are answered, and forgets the requests received so far. */
  behave(behaviour: Behaviour): void;
  close(): Promise<void>;
}

/** Starts an upstream on a free port of 127.0.0.1; with `tls`, it speaks HTTPS. */
/** Sends a request an upstream received on to `baseUrl` (a core behind a test proxy), as it came. */
export function forwardTo(baseUrl: string, received: Received): Promise<Response> {
  return fetch(`${baseUrl}${received.url}`, {
    method: received.method,
    headers: {
      'content-type': String(received.headers['content-type']),
      soapaction: String(received.headers.soapaction),
    },
    ...(received.method === 'POST' ? { body: received.body } : {}),
  });
}

export async function startUpstream(tls?: ServerOptions): Promise<Upstream> {
  let behaviour: Behaviour = (_received, response) => response.writeHead(500).end();
  const received: Received[] = [];
  const handler = (request: IncomingMessage, response: ServerResponse) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const peer =
        'getPeerCertificate' in request.socket ? (request.socket as TLSSocket).getPeerCertificate() : undefined;
      const call: Received = {
        method: request.method ?? '',
        url: request.url ?? '',
        headers: request.headers,
        body: Buffer.concat(chunks).toString('utf8'),
        ...(peer?.subject?.CN ? { clientCertificate: String(peer.subject.CN) } : {}),
      };
      received.push(call);
      behaviour(call, response, received.length);
    });
  };
  const server = tls ? createHttpsServer(tls, handler) : createHttpServer(handler);
  // A peer that resets the connection mid-answer, or a gateway that gives up, is expected here.
  server.on('clientError', (_error, socket) => socket.destroy());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `${tls ? 'https' : 'http'}://127.0.0.1:${port}`,
    received,
    behave(next) {
      behaviour = next;
      received.length = 0;
    },
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A port of 127.0.0.1 nothing listens on (it was free a moment ago). */
export async function closedPort(): Promise<number> {
  const server = createNetServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}
