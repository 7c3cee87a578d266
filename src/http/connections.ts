/**
 * The server's connections: who may hold them (security/connection-share.ts decides, this keeps the sockets),
 * and a refused call's connection closed as soon as it is answered.
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ConnectionShare, isRefusal, type ConnectionShareOptions } from '../security/connection-share.js';

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
 * A server's connections: one that does not fit is closed as it arrives.
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
}

/** A refused call (`isRefusal`) is answered with `Connection: close`: the server closes it once the answer is out. */
export function closeIfRefused(request: FastifyRequest, reply: FastifyReply): void {
  if (isRefusal(reply.statusCode, request.problemCode)) reply.header('connection', 'close');
}
