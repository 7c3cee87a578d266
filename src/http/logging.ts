/**
 * The service's log: pino, as JSON lines by default (for a log collector) or through pino-pretty for a
 * terminal (`LOG_FORMAT=pretty`), and one line per request at info, written when it was answered: method,
 * URL, operation, status, duration, problem code and the request id (`reqId`). Fastify's own pair of lines
 * per request ("incoming request", "request completed") is turned off (app.ts).
 */
import type { FastifyBaseLogger, FastifyReply, FastifyRequest } from 'fastify';
import type { Bindings, ChildLoggerOptions, Logger } from 'pino';
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
  const log = request.log as FastifyBaseLogger & Partial<Pick<Logger, 'isLevelEnabled'>>;
  if (log.isLevelEnabled?.('info') === false) return;
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

type Level = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace';
type LevelsTold = FastifyBaseLogger & Pick<Logger, 'isLevelEnabled'>;

/** A logger that can say whether a level is written (pino's), unlike Fastify's silent stand-in. */
const tellsLevels = (logger: FastifyBaseLogger): logger is LevelsTold =>
  typeof (logger as Partial<Logger>).isLevelEnabled === 'function';

/**
 * A request's logger, made of the service's when the request first writes a line at a level the log keeps:
 * a call that writes none (every call at `LOG_LEVEL=warn` that goes well) makes no child logger, whose
 * bindings pino would serialize and redact for nothing. Its methods are the prototype's: a request makes
 * one object.
 */
class RequestLogger {
  private made: LevelsTold | undefined;

  constructor(
    private readonly parent: LevelsTold,
    private readonly bindings: Bindings,
    private readonly options: ChildLoggerOptions | undefined,
  ) {}

  private get logger(): LevelsTold {
    return (this.made ??= this.parent.child(this.bindings, this.options) as LevelsTold);
  }

  get level(): string {
    return (this.made ?? this.parent).level;
  }

  set level(level: string) {
    this.logger.level = level;
  }

  isLevelEnabled(level: string): boolean {
    return (this.made ?? this.parent).isLevelEnabled(level);
  }

  private write(level: Level, line: unknown[]): void {
    if (this.isLevelEnabled(level)) (this.logger[level] as (...args: unknown[]) => void)(...line);
  }

  fatal(...line: unknown[]): void {
    this.write('fatal', line);
  }
  error(...line: unknown[]): void {
    this.write('error', line);
  }
  warn(...line: unknown[]): void {
    this.write('warn', line);
  }
  info(...line: unknown[]): void {
    this.write('info', line);
  }
  debug(...line: unknown[]): void {
    this.write('debug', line);
  }
  trace(...line: unknown[]): void {
    this.write('trace', line);
  }
  silent(): void {}

  child(bindings: Bindings, options?: ChildLoggerOptions): FastifyBaseLogger {
    return this.logger.child(bindings, options);
  }
}

/**
 * The logger of a request (Fastify's `childLoggerFactory`): the service's child with the request's bindings,
 * made when first written to. A route's own log level, or a logger that cannot tell its levels, makes it at once.
 * @example app.setChildLoggerFactory((logger, bindings, options) => requestLogger(logger, bindings, options));
 */
export function requestLogger(
  parent: FastifyBaseLogger,
  bindings: Bindings,
  options: ChildLoggerOptions | undefined,
): FastifyBaseLogger {
  if (!tellsLevels(parent) || options?.level !== undefined) return parent.child(bindings, options);
  return new RequestLogger(parent, bindings, options) as unknown as FastifyBaseLogger;
}
