/**
 * The fleet's client: one POST of a JSON operation, its outcome named so that failures can be counted by
 * kind (a problem's code, HAProxy's own error page, a dropped connection, the client's timeout).
 */
import { Agent, request } from 'undici';

/** Keep-alive connections to HAProxy and to each instance, as a client library keeps them. */
const agent = new Agent({ connections: 64, keepAliveTimeout: 4_000 });

export interface Answer {
  readonly status: number;
  /** `ok` for a 200; otherwise `<status> <problem code>`, `<status> from HAProxy`, `network <code>` or `client timeout`. */
  readonly outcome: string;
  readonly body: unknown;
  readonly requestId: string | undefined;
  /** The answer repeats the first answer of its Idempotency-Key. */
  readonly replayed: boolean;
  readonly retryAfterSeconds: number | undefined;
  readonly startedAt: number;
  readonly endedAt: number;
}

export interface Caller {
  readonly token: string;
  readonly adminPassword: string;
}

/** Ends an attempt the fleet has waited on long enough (HAProxy's server timeout is 30 s). */
const ATTEMPT_TIMEOUT_MS = 20_000;

function outcomeOf(status: number, contentType: string, body: unknown): string {
  if (status === 200) return 'ok';
  if (contentType.includes('json') && body && typeof body === 'object' && 'code' in body)
    return `${status} ${String((body as { code: unknown }).code)}`;
  // HAProxy's own error pages are HTML; coregate answers problem+json.
  if (contentType.includes('html')) return `${status} from HAProxy`;
  return `${status} ${contentType || 'no content type'}`;
}

/** POSTs an operation's body (with the caller's admin credentials) to `baseUrl + path`. */
export async function post(
  baseUrl: string,
  path: string,
  caller: Caller,
  fields: Record<string, unknown>,
  headers: Record<string, string> = {},
): Promise<Answer> {
  const startedAt = Date.now();
  const body = JSON.stringify({
    Credentials: { AdministrativeCredentials: { Password: caller.adminPassword } },
    ...fields,
  });
  try {
    const response = await request(`${baseUrl}${path}`, {
      method: 'POST',
      dispatcher: agent,
      headers: { authorization: `Bearer ${caller.token}`, 'content-type': 'application/json', ...headers },
      body,
      headersTimeout: ATTEMPT_TIMEOUT_MS,
      bodyTimeout: ATTEMPT_TIMEOUT_MS,
    });
    const text = await response.body.text();
    const contentType = String(response.headers['content-type'] ?? '');
    let parsed: unknown = text;
    if (contentType.includes('json')) {
      try {
        parsed = JSON.parse(text);
      } catch {
        parsed = text;
      }
    }
    const header = (name: string) => {
      const value = response.headers[name];
      return Array.isArray(value) ? value[0] : value;
    };
    const retryAfter = Number(header('retry-after'));
    return {
      status: response.statusCode,
      outcome: outcomeOf(response.statusCode, contentType, parsed),
      body: parsed,
      requestId: header('x-request-id'),
      replayed: header('idempotent-replayed') === 'true',
      retryAfterSeconds: Number.isFinite(retryAfter) ? retryAfter : undefined,
      startedAt,
      endedAt: Date.now(),
    };
  } catch (error) {
    const code = (error as { code?: string }).code ?? (error as Error).name;
    const timedOut = code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT';
    return {
      status: 0,
      outcome: timedOut ? 'client timeout' : `network ${code}`,
      body: undefined,
      requestId: undefined,
      replayed: false,
      retryAfterSeconds: undefined,
      startedAt,
      endedAt: Date.now(),
    };
  }
}

export async function closeClient(): Promise<void> {
  await agent.close();
}
