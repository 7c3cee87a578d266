/**
 * What of an error may reach the log. Database errors carry the statement and its parameters (PGlite:
 * `query`, `params`) and quote stored values (pg: `detail` such as `Key (x)=(value) already exists`,
 * `where`, and messages such as `invalid input syntax for type date: "1985-02-03"`): birth dates, phone
 * numbers, SSN HMACs and ciphertext. The log keeps what an operator needs to find the fault, no more.
 */
import type { FastifyServerOptions } from 'fastify';

/** The fields of a logged error: its kind, a message without values, the SQLSTATE and where it arose. */
export type SafeError = {
  type: string;
  message: string;
  /** Empty when the error had none. */
  stack: string;
  /** SQLSTATE of a database error, or a Node/Fastify error code. */
  code?: string;
  routine?: string;
  constraint?: string;
  table?: string;
  column?: string;
  cause?: SafeError;
};

/** Diagnostic names PostgreSQL reports that are catalog identifiers, never values. */
const IDENTIFIER_FIELDS = ['routine', 'constraint', 'table', 'column'] as const;

/** How many `cause`s deep the log follows an error chain. */
const MAX_CAUSES = 3;

const SQLSTATE = /^[0-9A-Z]{5}$/;
/** From the first double quote to the last: PostgreSQL quotes the value it rejects, and its identifiers. */
const QUOTED = /"[\s\S]*"|"[\s\S]*$/;

type ErrorLike = Record<string, unknown> & { message: string };

/** What pino too treats as an error: an object with a string message. */
function isErrorLike(value: unknown): value is ErrorLike {
  return typeof value === 'object' && value !== null && typeof (value as { message?: unknown }).message === 'string';
}

/** A database error: it has a SQLSTATE and a severity (pg and PGlite errors both do). */
function isDatabaseError(error: ErrorLike): boolean {
  return typeof error.code === 'string' && SQLSTATE.test(error.code) && typeof error.severity === 'string';
}

/**
 * A database message with its quoted parts replaced, e.g. `invalid input syntax for type date: "[redacted]"`.
 * Quoted identifiers go too; the identifier fields (`table`, `constraint`, …) still name them.
 * @example redactQuoted('value "1985-02-03" is out of range') // 'value "[redacted]" is out of range'
 */
export function redactQuoted(message: string): string {
  return message.replace(QUOTED, '"[redacted]"');
}

function serialize(error: ErrorLike, depth: number): SafeError {
  const database = isDatabaseError(error);
  const { message } = error;
  const safeMessage = database ? redactQuoted(message) : message;
  // PGlite's error class has a minified name; both drivers' errors are named alike here.
  const type = database
    ? 'DatabaseError'
    : (error.constructor as { name?: string } | undefined)?.name || String(error.name);
  const stack = typeof error.stack === 'string' ? error.stack : '';
  // The stack's first line repeats the message, values included.
  const safe: SafeError = { type, message: safeMessage, stack: database ? stack.replace(message, safeMessage) : stack };
  if (typeof error.code === 'string') safe.code = error.code;
  for (const field of IDENTIFIER_FIELDS) {
    if (typeof error[field] === 'string') safe[field] = error[field];
  }
  if (depth < MAX_CAUSES && isErrorLike(error.cause)) safe.cause = serialize(error.cause, depth + 1);
  return safe;
}

/**
 * The pino serializer of `err`: keeps type, message, SQLSTATE `code`, pg's routine, constraint, table and
 * column, stack and cause; drops everything else (`query`, `params`, `detail`, `where`, `internalQuery`, …).
 * @example pino({ serializers: { err: safeErrorSerializer } })
 */
export function safeErrorSerializer(error: unknown): SafeError {
  // Something thrown that is not an error (a string, a plain object) is logged as its text only.
  return isErrorLike(error) ? serialize(error, 0) : { type: typeof error, message: String(error), stack: '' };
}

/**
 * Fastify logger options with `safeErrorSerializer` as the `err` serializer; `false` (no logger) stays so.
 * @example Fastify({ logger: withSafeErrorLogging({ level: 'info' }) })
 */
export function withSafeErrorLogging(logger: FastifyServerOptions['logger']): FastifyServerOptions['logger'] {
  if (logger === undefined || logger === false) return false;
  const options = logger === true ? {} : logger;
  return { ...options, serializers: { ...options.serializers, err: safeErrorSerializer } };
}
