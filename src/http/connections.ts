/**
 * The server's connections: who may hold them (security/connection-share.ts decides, this keeps the sockets);
 * a body refused before it is sent (`registerBodyAdmission`); and a refused call's connection closed as soon as
 * it is answered, after reading and dropping what of its body still arrives, so that the client reads its
 * answer instead of a reset.
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { Socket } from 'node:net';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { malformedRequest, payloadTooLarge } from '../contract/problems.js';
import { ConnectionShare, isRefusal, type ConnectionShareOptions } from '../security/connection-share.js';

/** How long a connection closed while its request's body still arrives reads it: a few megabytes on a slow link. */
const LINGER_MS = 10_000;

/** Why a connection is closed as another arrives: it is the one arriving, or it makes room for it at the cap. */
export type ConnectionClosing = 'refused' | 'evicted';

export interface ConnectionLimitOptions extends ConnectionShareOptions {
  /** Told of each connection closed as another arrives, for the metrics. */
  readonly onClosed?: (reason: ConnectionClosing) => void;
}

/** An open connection and the last request read on it, with its answer. */
export interface Connection {
  readonly socket: Socket;
  request?: IncomingMessage;
  answer?: ServerResponse;
}

/** A whole request in hand whose answer is not finished (idle, unfinished and closing connections are not). */
function beingAnswered({ socket, request, answer }: Connection): boolean {
  return !socket.writableEnded && !!request?.complete && answer?.writableFinished === false;
}

/**
 * A server's connections: one that does not fit is closed as it arrives; one closed after a refusal keeps its answer.
 * @example new Connections({ max: 2000, perAddress: 256, trustedProxies: [] }).watch(app.server)
 */
export class Connections {
  private readonly share: ConnectionShare<Connection>;
  private readonly bySocket = new WeakMap<Socket, Connection>();

  constructor(private readonly options: ConnectionLimitOptions) {
    this.share = new ConnectionShare(options, beingAnswered);
  }

  /** Keeps the server's connections from now on. */
  watch(server: Server): void {
    server.on('connection', (socket: Socket) => {
      const connection: Connection = { socket };
      this.bySocket.set(socket, connection);
      socket.once('close', () => this.share.release(connection));
      socket.destroySoon = () => closeAfterBody(connection);
      const closing = this.share.admit(connection, socket.remoteAddress ?? '');
      if (!closing) return;
      this.options.onClosed?.(closing === connection ? 'refused' : 'evicted');
      closing.socket.destroy();
    });
    server.on('request', (request: IncomingMessage, answer: ServerResponse) => {
      const connection = this.bySocket.get(request.socket);
      if (!connection) return;
      connection.request = request;
      connection.answer = answer;
    });
  }

  /** A connection with a request being read or answered; none between two requests. */
  inFlight(socket: Socket): Connection | undefined {
    const connection = this.bySocket.get(socket);
    return connection?.answer?.writableFinished === false ? connection : undefined;
  }
}

/**
 * Node closes a connection after an answer that ends it at once, unread bytes and all: a client still sending a
 * body gets a reset, which on most stacks wipes the answer it has not read yet. While the body still arrives,
 * the connection is half-closed instead (the answer and a FIN go out) and what the client sends is dropped until
 * the body ends, the client closes its side or LINGER_MS pass: RFC 9112's "lingering close" (9.6).
 */
function closeAfterBody({ socket, request }: Connection): void {
  if (!request || request.complete) {
    Socket.prototype.destroySoon.call(socket);
    return;
  }
  socket.end();
  // Closed once the answer is out (Node's own close), or at the end of the time, whatever is left unsent.
  const close = () => Socket.prototype.destroySoon.call(socket);
  const timer = setTimeout(() => socket.destroy(), LINGER_MS);
  socket.once('close', () => clearTimeout(timer));
  socket.once('end', close);
  request.once('end', close);
  // Dropped as it arrives, also where a body parser stopped at the limit and left it paused.
  request.resume();
}

/**
 * The one `onRequest` hook of every request: requests not served are screened out before anything is done
 * for them (one sent after an answer that closed its connection, whose answer could not be sent, is
 * hijacked: it runs no further hook; an HTTP/1.1 one without Host is a 400 like any bad request, RFC 9112,
 * 3.2, not Node's empty one, `requireHostHeader` being off); then `admit` (an operation's token, rate limits
 * and scope) runs for the others. One hook instead of one per concern: a call to an operation runs no other
 * `onRequest` hook.
 * @example screenRequests(app, (request, reply) => admitOperation(request, reply)) // after request tracing
 */
export function screenRequests(
  app: FastifyInstance,
  admit: (request: FastifyRequest, reply: FastifyReply) => Promise<void> | undefined,
): void {
  app.addHook('onRequest', (request, reply, done) => {
    if (request.raw.socket.writableEnded) {
      reply.hijack();
      return done();
    }
    if (request.raw.httpVersion === '1.1' && request.headers.host === undefined)
      return done(malformedRequest('An HTTP/1.1 request needs a Host header'));
    const admitted = admit(request, reply);
    if (admitted === undefined) return done();
    admitted.then(() => done(), done);
  });
}

/**
 * A declared `Content-Length` over the route's `bodyLimit` is a 413 before a byte of the body is read, and a
 * client waiting on `Expect: 100-continue` is asked for its body only once its call is admitted (token, rate
 * limit, scope, media type, size): a refused one gets its answer instead and never sends the body.
 * @example registerBodyAdmission(app) // before the routes
 */
export function registerBodyAdmission(app: FastifyInstance): void {
  const awaitingContinue = new WeakSet<IncomingMessage>();
  // With a listener here, Node leaves the "100 Continue" to the server; without, it sends it before any check.
  app.server.on('checkContinue', (request: IncomingMessage, answer: ServerResponse) => {
    awaitingContinue.add(request);
    app.server.emit('request', request, answer);
  });
  app.addHook('preParsing', (request, reply, _payload, done) => {
    const limit = request.routeOptions.bodyLimit;
    if (Number(request.headers['content-length']) > limit) return done(payloadTooLarge(limit));
    if (awaitingContinue.delete(request.raw)) reply.raw.writeContinue();
    done();
  });
}

/** A refused call (`isRefusal`) is answered with `Connection: close`: the server closes it once the answer is out. */
export function closeIfRefused(request: FastifyRequest, reply: FastifyReply): void {
  if (isRefusal(reply.statusCode, request.problemCode)) reply.header('connection', 'close');
}
