/**
 * How the gateway reaches one SymXchange core: an undici keep-alive pool over HTTP or HTTPS (a CA bundle,
 * a client certificate for mutual TLS, a server name), a connect deadline, a deadline for the whole answer
 * (a core dripping bytes cannot hold a call), and a cap on the answer's size. Failures come back as
 * `CoreFailure` of a kind the gateway maps to its problems: unavailable (refused, reset, TLS), timeout,
 * or a bad response.
 */
import { readFileSync } from 'node:fs';
import { createSecureContext } from 'node:tls';
import { Pool } from 'undici';
import type { SymxchangeSettings } from '../config.js';

/** The largest answer read from a core (an answer past it is a bad response, not a memory problem). */
export const MAX_ANSWER_BYTES = 32 * 1024 * 1024;

export type CoreFailureKind = 'unavailable' | 'timeout' | 'bad-response';

export interface CoreFailureFacts {
  /** The connection was reset or closed under the call: a read may be sent once more. */
  readonly reset?: boolean;
  /** The request may have reached the core (a write may have been applied). */
  readonly sent?: boolean;
  /** The core's own Retry-After, when it answered with one. */
  readonly retryAfter?: string;
}

/** A call that did not get an answer the gateway can use. */
export class CoreFailure extends Error {
  readonly reset: boolean;
  readonly sent: boolean;
  readonly retryAfter?: string;

  constructor(
    readonly kind: CoreFailureKind,
    message: string,
    facts: CoreFailureFacts = {},
  ) {
    super(message);
    this.name = 'CoreFailure';
    this.reset = facts.reset ?? false;
    this.sent = facts.sent ?? false;
    if (facts.retryAfter !== undefined) this.retryAfter = facts.retryAfter;
  }
}

export interface CoreAnswer {
  readonly status: number;
  readonly contentType: string;
  readonly text: string;
  readonly retryAfter?: string;
}

/** What a TLS failure's code looks like (Node and OpenSSL name them). */
const TLS_FAILURE = /^(ERR_TLS_|ERR_SSL_|EPROTO$|CERT_|UNABLE_TO_|DEPTH_ZERO_|SELF_SIGNED_|HOSTNAME_MISMATCH)/;
const RESET = new Set(['ECONNRESET', 'EPIPE', 'ECONNABORTED', 'UND_ERR_SOCKET', 'UND_ERR_CLOSED']);
const UNREACHABLE = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN', 'ETIMEDOUT']);

/** The kind of failure an error of undici or the socket is. */
export function failureOf(error: unknown): CoreFailure {
  if (error instanceof CoreFailure) return error;
  const { name, code, message } = error as { name?: string; code?: string; message?: string };
  const cause = (error as { cause?: { code?: string; message?: string } }).cause;
  const codes = [code, cause?.code].filter((c): c is string => typeof c === 'string');
  const text = message ?? String(error);
  if (name === 'TimeoutError' || codes.some((c) => c === 'UND_ERR_HEADERS_TIMEOUT' || c === 'UND_ERR_BODY_TIMEOUT'))
    return new CoreFailure('timeout', 'the core did not answer in time', { sent: true });
  if (name === 'AbortError') return new CoreFailure('timeout', 'the call was abandoned', { sent: true });
  if (codes.includes('UND_ERR_CONNECT_TIMEOUT'))
    return new CoreFailure('unavailable', 'the core did not accept a connection in time');
  if (codes.some((c) => TLS_FAILURE.test(c)) || /certificate|TLS|SSL/i.test(text))
    return new CoreFailure('unavailable', `TLS with the core failed: ${codes[0] ?? text}`);
  if (codes.some((c) => RESET.has(c)))
    return new CoreFailure('unavailable', `the connection was reset (${codes[0]})`, { reset: true, sent: true });
  if (codes.some((c) => UNREACHABLE.has(c)))
    return new CoreFailure('unavailable', `the core is unreachable (${codes[0]})`);
  return new CoreFailure('unavailable', `the call to the core failed: ${codes[0] ?? text}`, { sent: true });
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

export interface CoreTransport {
  /** The core's base URL. */
  readonly url: URL;
  post(path: string, soapAction: string, xml: string): Promise<CoreAnswer>;
  /** A plain GET (`coregate core check` reads a WSDL). */
  get(path: string): Promise<CoreAnswer>;
  close(): Promise<void>;
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
    headersTimeout: settings.timeoutMs,
    bodyTimeout: settings.timeoutMs,
    connect: {
      ...tls,
      ...(settings.serverName ? { servername: settings.serverName } : {}),
      rejectUnauthorized: true,
      timeout: settings.connectTimeoutMs,
    },
  });
  const base = url.pathname.replace(/\/+$/, '');

  async function request(method: 'GET' | 'POST', path: string, headers: Record<string, string>, body?: string) {
    const signal = AbortSignal.timeout(settings.timeoutMs);
    try {
      const response = await pool.request({ method, path: `${base}${path}`, headers, body, signal });
      const chunks: Buffer[] = [];
      let size = 0;
      for await (const chunk of response.body) {
        size += (chunk as Buffer).length;
        if (size > MAX_ANSWER_BYTES) {
          response.body.destroy();
          throw new CoreFailure('bad-response', `the core's answer exceeds ${MAX_ANSWER_BYTES} bytes`);
        }
        chunks.push(chunk as Buffer);
      }
      const header = (name: string) => {
        const value = response.headers[name];
        return Array.isArray(value) ? value[0] : value;
      };
      const retryAfter = header('retry-after');
      return {
        status: response.statusCode,
        contentType: header('content-type') ?? '',
        text: Buffer.concat(chunks).toString('utf8'),
        ...(retryAfter ? { retryAfter } : {}),
      };
    } catch (error) {
      throw failureOf(signal.aborted && !(error instanceof CoreFailure) ? signal.reason : error);
    }
  }

  return {
    url,
    post: (path, soapAction, xml) =>
      request('POST', path, { 'content-type': 'text/xml; charset=utf-8', soapaction: `"${soapAction}"` }, xml),
    get: (path) => request('GET', path, {}),
    close: () => pool.close(),
  };
}
