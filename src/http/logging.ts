/**
 * The service's log: pino, as JSON lines by default (for a log collector) or through pino-pretty for a
 * terminal (`LOG_FORMAT=pretty`), and one line per request at info, written when it was answered: method,
 * URL, operation, status, duration, problem code and the request id (`reqId`). Fastify's own pair of lines
 * per request ("incoming request", "request completed") is turned off (app.ts).
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Config } from '../config.js';

/** The fields of a request's line that pino-pretty shows in its message instead of below it. */
const REQUEST_FIELDS = ['method', 'url', 'status', 'durationMs'] as const;

type LogRecord = Record<string, unknown>;

/** A request's line as one readable message in a terminal: `POST /gw/627/… 200 3.1 ms`. */
function prettyMessage(log: LogRecord, messageKey: string): string {
  if (log.status === undefined || log.method === undefined) return String(log[messageKey] ?? '');
  return `${String(log.method)} ${String(log.url)} ${String(log.status)} ${String(log.durationMs)} ms`;
}

/**
 * Where the log goes: stdout as JSON lines (pino's default), or a pino-pretty stream for `pretty`.
 * @example Fastify({ logger: { level: config.logLevel, ...(await logDestination(config.logFormat)) } })
 */
export async function logDestination(format: Config['logFormat']): Promise<{ stream?: NodeJS.WritableStream }> {
  if (format === 'json') return {};
  const { default: pretty } = await import('pino-pretty');
  return {
    stream: pretty({
      colorize: process.stdout.isTTY === true,
      translateTime: 'SYS:HH:MM:ss.l',
      ignore: ['pid', 'hostname', ...REQUEST_FIELDS].join(','),
      messageFormat: prettyMessage,
    }),
  };
}

/**
 * The request's one line, at info.
 * @example app.addHook('onResponse', async (request, reply) => logRequest(request, reply));
 */
export function logRequest(request: FastifyRequest, reply: FastifyReply): void {
  const operation = request.operation;
  request.log.info(
    {
      method: request.method,
      url: request.url,
      operation: operation ? `${operation.family}:${operation.name}` : undefined,
      status: reply.statusCode,
      durationMs: Math.round(reply.elapsedTime * 10) / 10,
      code: request.problemCode,
      fault: request.sandboxFault,
    },
    'request',
  );
}
