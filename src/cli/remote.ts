/**
 * The CLI's remote mode: a command whose data directory a live coregate holds (or run with `COREGATE_URL`)
 * calls that server's admin API instead of refusing (docs/decisions.md, "Administering a running coregate").
 * The server is found by the lock it holds and the address it wrote beside it (database/data-dir-lock.ts);
 * the token is `COREGATE_ADMIN_TOKEN`, or the data directory's demo token.
 */
import { createReadStream } from 'node:fs';
import { relative, isAbsolute } from 'node:path';
import { Readable } from 'node:stream';
import type { Config } from '../config.js';
import { liveServerOf } from '../database/data-dir-lock.js';
import { readDemoCredentials } from './demo-credentials.js';

export interface AdminServer {
  readonly url: string;
  readonly token: string;
  /** e.g. "the coregate serving ./data (process 1234) at http://127.0.0.1:8627" */
  readonly description: string;
}

/** A problem the admin API answered with: its status and code, and its detail (with the fields at fault) as the message. */
export class AdminProblemError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'AdminProblemError';
  }
}

/** `./data` for a directory under the working one, else its absolute path. */
function shown(directory: string): string {
  const inside = relative(process.cwd(), directory);
  return inside && !inside.startsWith('..') && !isAbsolute(inside) ? `./${inside}` : directory;
}

/** The admin token: COREGATE_ADMIN_TOKEN, else the demo token of the data directory; `found` says what needs it. */
async function adminToken(config: Config, found: string): Promise<string> {
  if (config.adminToken) return config.adminToken;
  let demoToken: string | undefined;
  try {
    demoToken = readDemoCredentials(config)?.apiToken;
  } catch {
    demoToken = undefined;
  }
  if (demoToken) return demoToken;
  throw new Error(
    `${found}, but there is no admin token to call its admin API with: set COREGATE_ADMIN_TOKEN to a token with ` +
      `the admin scope (coregate token create --name NAME --scopes admin, with the server stopped), since ` +
      `${shown(config.dataDir)}/demo-credentials.json holds none`,
  );
}

/**
 * The live server to administer: COREGATE_URL when set, else the live coregate holding this data dir's lock;
 * undefined when none. Token: COREGATE_ADMIN_TOKEN, else the data dir's demo-credentials.json apiToken.
 * Throws an Error saying what is missing when a server is found but no admin token.
 * @example const server = await liveServer(config); if (server) await adminCall(server, 'GET', '/admin/tokens');
 */
export async function liveServer(config: Config): Promise<AdminServer | undefined> {
  if (config.adminUrl) {
    const url = config.adminUrl.href.replace(/\/$/, '');
    return {
      url,
      token: await adminToken(config, `COREGATE_URL is set (${url})`),
      description: `the coregate at ${url}`,
    };
  }
  // PostgreSQL is shared by any number of processes: the command works on it directly.
  if (config.databaseUrl) return undefined;
  const live = liveServerOf(config.dataDir);
  if (!live) return undefined;
  const description = `the coregate serving ${shown(config.dataDir)} (process ${live.holder.pid}) at ${live.url}`;
  return { url: live.url, token: await adminToken(config, `${description} holds the data directory`), description };
}

/** The URL of a path of the server's (which may itself sit under a path: `https://host/coregate`). */
const urlOf = (server: AdminServer, path: string) => new URL(path.replace(/^\//, ''), `${server.url}/`);

/** Sends one request; a non-2xx answer becomes an `AdminProblemError`, an unreachable server an Error naming it. */
async function send(server: AdminServer, method: string, path: string, init: RequestInit = {}): Promise<Response> {
  const request = () =>
    fetch(urlOf(server, path), {
      ...init,
      method,
      headers: { authorization: `Bearer ${server.token}`, ...(init.headers as Record<string, string>) },
    });
  let response: Response;
  try {
    // A kept-alive connection the server closed just as it was reused fails before any answer: a read is
    // sent again once; a change never is (it may have been applied).
    response = await request().catch((error: unknown) => {
      if (method !== 'GET' || (error as { cause?: { code?: string } }).cause?.code !== 'UND_ERR_SOCKET') throw error;
      return request();
    });
  } catch (error) {
    const cause = (error as { cause?: { code?: string; message?: string } }).cause;
    throw new Error(
      `could not reach ${server.description}: ${cause?.code ?? cause?.message ?? (error as Error).message}`,
      {
        cause: error,
      },
    );
  }
  if (!response.ok) throw await problemOf(server, response);
  return response;
}

interface ProblemAnswer {
  readonly title?: string;
  readonly detail?: string;
  readonly code?: string;
  readonly errors?: readonly { readonly pointer: string; readonly detail: string }[];
}

/**
 * A problem's message: its detail, with every field at fault when there are several.
 * @example problemMessage({ detail: '2 properties are not valid', errors: [...] }) // '2 properties are not valid: /name must …; /scopes …'
 */
export function problemMessage(problem: ProblemAnswer): string {
  const detail = problem.detail || problem.title || 'no detail';
  const errors = problem.errors ?? [];
  return errors.length > 1 ? `${detail}: ${errors.map((e) => `${e.pointer} ${e.detail}`).join('; ')}` : detail;
}

async function problemOf(server: AdminServer, response: Response): Promise<AdminProblemError> {
  const text = await response.text().catch(() => '');
  let problem: ProblemAnswer = {};
  try {
    problem = JSON.parse(text) as ProblemAnswer;
  } catch {
    problem = { detail: `${response.status} ${response.statusText}` };
  }
  let message = problemMessage(problem);
  // The token is the cause only of a refusal of the token (not of one with a cause of its own, such as
  // SANDBOX_FAULTS_DISABLED, whose detail names it).
  if (response.status === 401 || (response.status === 403 && (problem.code ?? 'FORBIDDEN') === 'FORBIDDEN')) {
    message += ` (${server.description} refused the admin token: COREGATE_ADMIN_TOKEN, or the demo token, needs the admin scope)`;
  }
  return new AdminProblemError(response.status, problem.code ?? `HTTP_${response.status}`, message);
}

/**
 * Calls the admin API; on a non-2xx throws an Error whose message is the problem's title/detail (and field errors).
 * @example await adminCall<TokenList>(server, 'GET', '/admin/tokens')
 */
export async function adminCall<T>(server: AdminServer, method: string, path: string, body?: unknown): Promise<T> {
  const response = await send(
    server,
    method,
    path,
    body === undefined ? {} : { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } },
  );
  return (await response.json()) as T;
}

/**
 * Streams an NDJSON answer line by line.
 * @example for await (const line of adminStream(server, '/admin/export')) output.write(`${line}\n`);
 */
export async function* adminStream(server: AdminServer, path: string): AsyncIterable<string> {
  const response = await send(server, 'GET', path, { headers: { accept: 'application/x-ndjson' } });
  if (!response.body) return;
  const decoder = new TextDecoder();
  let pending = '';
  try {
    for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
      pending += decoder.decode(chunk, { stream: true });
      const lines = pending.split('\n');
      pending = lines.pop()!;
      for (const line of lines) yield line;
    }
  } catch (error) {
    throw new Error(`the answer of ${server.description} was cut off: ${(error as Error).message}`, { cause: error });
  }
  pending += decoder.decode();
  if (pending !== '') yield pending;
}

/**
 * Sends a file as an NDJSON body, streamed from the disk, and reads the JSON answer.
 * @example await adminUpload<Imported>(server, '/admin/import?replace=true', 'sandbox.ndjson')
 */
export async function adminUpload<T>(server: AdminServer, path: string, file: string): Promise<T> {
  const body = Readable.toWeb(createReadStream(file)) as ReadableStream<Uint8Array>;
  const response = await send(server, 'POST', path, {
    body,
    headers: { 'content-type': 'application/x-ndjson' },
    duplex: 'half',
  } as RequestInit);
  return (await response.json()) as T;
}
