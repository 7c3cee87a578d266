/**
 * How the gateway reaches one SymXchange core: an undici keep-alive pool over HTTP or HTTPS (a CA bundle,
 * a client certificate for mutual TLS, a server name), a connect deadline, the caller's deadline for the
 * whole exchange (a core dripping bytes cannot hold a call), and a cap on the answer's size checked as it
 * streams. The answer's body is handed to a reader chunk by chunk as it arrives, so a large answer costs the
 * event loop one chunk at a time. Failures come back as `CoreFailure` of a kind the gateway maps to its
 * problems (unavailable, timeout, bad response), saying whether the request was written to a connection
 * (a write that never was cannot have been applied). Their messages are coregate's words and system codes,
 * never what the core sent: that is in `cause`, for the log.
 */
import { readFileSync } from 'node:fs';
import type { Socket } from 'node:net';
import { createSecureContext } from 'node:tls';
import { buildConnector, Pool, type Dispatcher } from 'undici';
import type { SymxchangeSettings } from '../config.js';
import type { TraceContext } from '../telemetry/trace-context.js';
import { injectTraceContext } from '../telemetry/tracing.js';
import { DEADLINES, type Deadline } from './deadlines.js';

export type CoreFailureKind = 'unavailable' | 'timeout' | 'bad-response';

export interface CoreFailureFacts {
  /** The connection was reset or closed under the call: a read may be sent once more. */
  readonly reset?: boolean;
  /** The request was written to a connection: a write may have been applied. */
  readonly sent?: boolean;
  /** The core's own Retry-After, when it answered with one. */
  readonly retryAfter?: string;
  /** The error underneath (undici's, the socket's, the parser's): for the log, never for a caller. */
  readonly cause?: unknown;
}

/** A call that did not get an answer the gateway can use; its message may reach a caller. */
export class CoreFailure extends Error {
  readonly reset: boolean;
  readonly sent: boolean;
  readonly retryAfter?: string;

  constructor(
    readonly kind: CoreFailureKind,
    message: string,
    facts: CoreFailureFacts = {},
  ) {
    super(message, facts.cause === undefined ? undefined : { cause: facts.cause });
    this.name = 'CoreFailure';
    this.reset = facts.reset ?? false;
    this.sent = facts.sent ?? false;
    if (facts.retryAfter !== undefined) this.retryAfter = facts.retryAfter;
  }
}

/** The status line and the headers the gateway reads of an answer. */
export interface AnswerHead {
  readonly status: number;
  /** The Content-Type as sent (the core's text: check it, never quote it). */
  readonly contentType: string;
  readonly retryAfter?: string;
}

/** Reads an answer's body as it arrives: each chunk, then its end, whose value the exchange resolves to. */
export interface AnswerReader<T> {
  write(chunk: Buffer): void;
  end(): T;
}

export interface CoreAnswer<T> extends AnswerHead {
  readonly body: T;
}

/** One exchange's deadline and the reader of its answer. */
export interface ExchangeOptions<T> {
  /** Ends the exchange wherever it is (queued, connecting, waiting, reading) when it passes: a timeout. */
  readonly deadline: Deadline;
  /** The reader of the answer, given its head; throwing refuses the answer unread (the error is the call's). */
  readonly read: (head: AnswerHead) => AnswerReader<T>;
  /** The caller's trace context, passed on as it came when this process takes no part in traces. */
  readonly traceContext?: TraceContext;
}

/** What a TLS failure's code looks like (Node and OpenSSL name them). */
const TLS_FAILURE =
  /^(ERR_TLS_|ERR_SSL_|ERR_OSSL_|EPROTO$|CERT_|UNABLE_TO_|DEPTH_ZERO_|SELF_SIGNED_|HOSTNAME_MISMATCH)/;
const RESET = new Set(['ECONNRESET', 'EPIPE', 'ECONNABORTED', 'UND_ERR_SOCKET', 'UND_ERR_CLOSED']);
const UNREACHABLE = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'EADDRNOTAVAIL',
]);
/**
 * A code a problem may name: the system's (`ECONNREFUSED`) or Node's (`ERR_TLS_CERT_ALTNAME_INVALID`), an
 * operator's words. A library's internal codes (undici's `UND_ERR_…`, llhttp's `HPE_…`) are said in words
 * instead; the code itself stays in the log with the error underneath.
 */
const ERROR_CODE = /^(?!UND_ERR_|HPE_)[A-Z][A-Z0-9_]{1,47}$/;
/** undici's code for a connection the core did not accept in time (ours is the same). */
const CONNECT_TIMEOUT = 'UND_ERR_CONNECT_TIMEOUT';
/**
 * What undici says of an answer it could not read as HTTP (llhttp's `HPE_…` too: the core answered, badly), in
 * the words a problem uses.
 */
const NOT_HTTP: Readonly<Partial<Record<string, string>>> = {
  UND_ERR_HEADERS_OVERFLOW: 'its headers are too large',
  UND_ERR_RES_CONTENT_LENGTH_MISMATCH: 'its length is not its Content-Length',
  UND_ERR_RES_EXCEEDED_MAX_SIZE: 'it is too large',
};

/**
 * The kind of failure an error of undici or the socket is; `sent` says whether the request was written to a
 * connection when it happened.
 * @example failureOf(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }), false).kind // 'unavailable'
 */
export function failureOf(error: unknown, sent = true): CoreFailure {
  if (error instanceof CoreFailure) return error;
  const { name, code, message } = (error ?? {}) as { name?: string; code?: string; message?: string };
  const cause = (error as { cause?: { code?: string } } | undefined)?.cause;
  const codes = [code, cause?.code].filter((c): c is string => typeof c === 'string');
  const named = codes.find((c) => ERROR_CODE.test(c));
  const facts = { sent, cause: error };
  if (name === 'TimeoutError' || codes.some((c) => c === 'UND_ERR_HEADERS_TIMEOUT' || c === 'UND_ERR_BODY_TIMEOUT'))
    return new CoreFailure('timeout', 'the core did not answer in time', facts);
  if (codes.includes(CONNECT_TIMEOUT))
    return new CoreFailure('unavailable', 'the core did not accept a connection in time', { cause: error });
  const notHttp = codes.find((c) => NOT_HTTP[c] !== undefined || c.startsWith('HPE_'));
  if (notHttp !== undefined)
    return new CoreFailure(
      'bad-response',
      `the core's answer is not HTTP the gateway reads (${NOT_HTTP[notHttp] ?? 'it is malformed'})`,
      facts,
    );
  if (codes.some((c) => TLS_FAILURE.test(c)) || /certificate|TLS|SSL/i.test(message ?? ''))
    return new CoreFailure('unavailable', `TLS with the core failed${named ? ` (${named})` : ''}`, facts);
  if (codes.some((c) => RESET.has(c)))
    return new CoreFailure('unavailable', `the connection was reset${named ? ` (${named})` : ''}`, {
      ...facts,
      reset: true,
    });
  if (codes.some((c) => UNREACHABLE.has(c)))
    return new CoreFailure('unavailable', `the core is unreachable (${named})`, facts);
  return new CoreFailure('unavailable', `the call to the core failed${named ? ` (${named})` : ''}`, facts);
}

/** The TLS options of the gateway's calls; throws a line naming the setting at fault. */
export function tlsOptions(
  url: URL,
  settings: SymxchangeSettings,
): { ca?: Buffer; cert?: Buffer; key?: Buffer; passphrase?: string } {
  const ca = readPem('COREGATE_SYMXCHANGE_CA_FILE', settings.caFile);
  const cert = readPem('COREGATE_SYMXCHANGE_CERT_FILE', settings.certFile);
  const key = readPem('COREGATE_SYMXCHANGE_KEY_FILE', settings.keyFile);
  if ((cert === undefined) !== (key === undefined))
    throw new Error('COREGATE_SYMXCHANGE_CERT_FILE and COREGATE_SYMXCHANGE_KEY_FILE go together (mutual TLS)');
  const tls = {
    ...(ca ? { ca } : {}),
    ...(cert ? { cert } : {}),
    ...(key ? { key } : {}),
    ...(settings.keyPassphrase ? { passphrase: settings.keyPassphrase } : {}),
  };
  if (url.protocol === 'https:') {
    try {
      createSecureContext(tls);
    } catch (error) {
      throw new Error(`COREGATE_SYMXCHANGE_CERT_FILE/KEY_FILE/CA_FILE: ${(error as Error).message}`);
    }
  }
  return tls;
}

function readPem(variable: string, file: string | undefined): Buffer | undefined {
  if (file === undefined) return undefined;
  try {
    return readFileSync(file);
  } catch (error) {
    throw new Error(`${variable}: cannot read ${file} (${(error as NodeJS.ErrnoException).code ?? String(error)})`);
  }
}

/**
 * A connector that gives up on a connection (TCP and TLS) after `timeoutMs` exactly: undici's own timer
 * fires up to half a second late. A core that never accepts (its backlog full, its SYNs dropped, its TLS
 * handshake unanswered) is then unavailable once the connect timeout passes, whatever the call's deadline.
 */
function timedConnector(connect: buildConnector.connector, timeoutMs: number): buildConnector.connector {
  return (options, callback) => {
    let settled = false;
    const timer = setTimeout(() => {
      settled = true;
      socket?.destroy();
      callback(
        Object.assign(new Error(`no connection to the core within ${timeoutMs} ms`), { code: CONNECT_TIMEOUT }),
        null,
      );
    }, timeoutMs);
    // undici's connector returns the socket it opens (its type says void): kept to close it on time.
    const socket = connect(options, (error, connected) => {
      if (settled) return void connected?.destroy();
      settled = true;
      clearTimeout(timer);
      if (error) callback(error, null);
      else callback(null, connected!);
    }) as unknown as Socket | undefined;
  };
}

export interface CoreTransport {
  /** The core's base URL. */
  readonly url: URL;
  /** A SOAP call to a path of the core's origin: its answer read by `options.read` as it arrives, within `options.deadline`. */
  post<T>(path: string, soapAction: string, xml: string, options: ExchangeOptions<T>): Promise<CoreAnswer<T>>;
  /** A plain GET of a path of the core's origin within the call deadline (a WSDL and its XSDs). */
  get(path: string): Promise<CoreAnswer<string>>;
  close(): Promise<void>;
}

/**
 * One exchange with the core, as undici's handler of it: one object a call (its state in fields, its steps
 * prototype methods), which undici holds while the call is in flight. It settles once: with the answer read
 * to its end, or with the first failure (the deadline, the size cap, the reader's refusal, the connection's).
 */
class Exchange<T> implements Dispatcher.DispatchHandler {
  controller: Dispatcher.DispatchController | undefined;
  /** The request was written to a connection: a write may have been applied. */
  sent = false;
  settled = false;
  private head: AnswerHead | undefined;
  private reader: AnswerReader<T> | undefined;
  private size = 0;
  /** Told by the deadline when it passes. */
  readonly expired = () =>
    this.stop(new CoreFailure('timeout', 'the core did not answer in time', { sent: this.sent }));

  constructor(
    private readonly resolve: (answer: CoreAnswer<T>) => void,
    private readonly reject: (error: unknown) => void,
    private readonly deadline: Deadline,
    private readonly read: (head: AnswerHead) => AnswerReader<T>,
    private readonly maxBytes: number,
  ) {}

  /** Ends the exchange with `error` (as it is: a reader's own error stays the caller's), once. */
  stop(error: unknown): void {
    if (this.settled) return;
    this.settled = true;
    this.deadline.onExpire(undefined);
    if (this.controller && !this.controller.aborted) this.controller.abort(error as Error);
    this.reject(error);
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    // Abandoned while queued or connecting: never written.
    if (this.settled) return controller.abort(new Error('abandoned'));
    this.sent = true;
  }

  onResponseStart(
    _controller: Dispatcher.DispatchController,
    status: number,
    responseHeaders: Record<string, string | string[] | undefined>,
  ): void {
    if (this.settled || status < 200) return;
    const header = (name: string) => {
      const value = responseHeaders[name];
      return Array.isArray(value) ? value[0] : value;
    };
    const retryAfter = header('retry-after');
    this.head = { status, contentType: header('content-type') ?? '', ...(retryAfter ? { retryAfter } : {}) };
    try {
      this.reader = this.read(this.head);
    } catch (error) {
      this.stop(error);
    }
  }

  onResponseData(_controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.settled || !this.reader) return;
    this.size += chunk.length;
    if (this.size > this.maxBytes)
      return this.stop(
        new CoreFailure('bad-response', `the core's answer exceeds ${this.maxBytes} bytes`, { sent: this.sent }),
      );
    try {
      this.reader.write(chunk);
    } catch (error) {
      this.stop(error);
    }
  }

  onResponseEnd(): void {
    if (this.settled || !this.head || !this.reader) return;
    let answer: T;
    try {
      answer = this.reader.end();
    } catch (error) {
      return this.stop(error);
    }
    this.settled = true;
    this.deadline.onExpire(undefined);
    this.resolve({ ...this.head, body: answer });
  }

  onResponseError(_controller: Dispatcher.DispatchController, error: Error): void {
    this.stop(failureOf(error, this.sent));
  }
}

/**
 * The transport to the core at `url`; reads the TLS files now, so an unreadable or mismatched one stops
 * the start with a line naming its setting.
 * @example const transport = coreTransport(new URL('https://core:24604'), settings);
 */
export function coreTransport(url: URL, settings: SymxchangeSettings): CoreTransport {
  const tls = tlsOptions(url, settings);
  const pool = new Pool(url.origin, {
    connections: settings.connections,
    pipelining: 1,
    keepAliveTimeout: 30_000,
    // Backstops: the caller's deadline ends every exchange first.
    headersTimeout: settings.timeoutMs,
    bodyTimeout: settings.timeoutMs,
    connect: timedConnector(
      buildConnector({
        ...tls,
        ...(settings.serverName ? { servername: settings.serverName } : {}),
        rejectUnauthorized: true,
        timeout: 0,
      }),
      settings.connectTimeoutMs,
    ),
  });
  const maxBytes = settings.maxAnswerBytes;

  function exchange<T>(
    method: 'GET' | 'POST',
    path: string,
    headers: Record<string, string>,
    body: string | undefined,
    { deadline, read }: ExchangeOptions<T>,
  ): Promise<CoreAnswer<T>> {
    return new Promise((resolve, reject) => {
      const handler = new Exchange(resolve, reject, deadline, read, maxBytes);
      deadline.onExpire(handler.expired);
      if (handler.settled) return;
      pool.dispatch({ method, path, headers, body }, handler);
    });
  }

  return {
    url,
    post: (path, soapAction, xml, options) =>
      exchange(
        'POST',
        path,
        // With tracing on, the core call's `traceparent` (and `tracestate`): the core's spans join the trace.
        // Off, the caller's, unchanged.
        injectTraceContext(
          { 'content-type': 'text/xml; charset=utf-8', soapaction: `"${soapAction}"` },
          options.traceContext,
        ),
        xml,
        options,
      ),
    get: (path) => {
      const deadline = DEADLINES.start(settings.timeoutMs);
      return exchange('GET', path, {}, undefined, {
        deadline,
        read: () => {
          const chunks: Buffer[] = [];
          return { write: (chunk) => void chunks.push(chunk), end: () => Buffer.concat(chunks).toString('utf8') };
        },
      }).finally(() => deadline.release());
    },
    close: () => pool.close(),
  };
}
