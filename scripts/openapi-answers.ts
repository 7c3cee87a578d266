/**
 * Writes src/http/demo-answers.json: the answer the demo dataset gives to each operation's documented
 * request, which /openapi.json shows as the operation's success example. Seeds the demo dataset into an
 * in-memory database, replays every documented request in the document's order, and records the answers.
 * Run after changing an operation or the demo data: npm run openapi:answers (test/contract.test.ts fails
 * while the file is stale).
 */
import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { loadConfig } from '../src/config.js';
import { SCOPES } from '../src/contract/scopes.js';
import { hashPassword } from '../src/crypto/passwords.js';
import { secretsFromMaster, type Secrets } from '../src/crypto/secrets.js';
import { buildApp } from '../src/http/app.js';
import { answerKey, EXAMPLE_USER_NUMBER, PLACEHOLDER } from '../src/http/openapi-examples.js';
import { OPERATIONS } from '../src/operations/index.js';
import { operationPath, type AnyOperation } from '../src/operations/types.js';
import { DEFAULT_DEMO_ACCOUNTS, DEFAULT_SEED, seedDatabase } from '../src/seed/load.js';
import { demoDataset, settings, SETTING, tokens, users } from '../src/store/access.js';
import { openDatabase, type Database } from '../src/store/database.js';
import { migrate } from '../src/store/migrations.js';

export const ANSWERS_FILE = fileURLToPath(new URL('../src/http/demo-answers.json', import.meta.url));

/** The demo set-up's administrative password and API token on a seeded database. */
export interface DemoAccess {
  readonly adminPassword: string;
  readonly token: string;
}

/**
 * Seeds the default demo dataset into a migrated database and sets it up as `coregate serve` does on its
 * first start (marked as the demo, an administrative password, a token of every scope).
 */
export async function seedDemo(database: Database, secrets: Secrets): Promise<DemoAccess> {
  await seedDatabase(database, secrets, { accounts: DEFAULT_DEMO_ACCOUNTS, seed: DEFAULT_SEED });
  const adminPassword = `demo-${randomBytes(6).toString('hex')}`;
  await settings.set(database.db, SETTING.adminPasswordHash, await hashPassword(adminPassword));
  await settings.set(database.db, SETTING.demoSeeded, new Date().toISOString());
  await demoDataset.set(database.db, { seed: DEFAULT_SEED, accounts: DEFAULT_DEMO_ACCOUNTS });
  const { token } = await tokens.create(database.db, 'demo', SCOPES);
  return { adminPassword, token };
}

/** A part of the document: an operation at its path, with its request example. */
interface DocumentedOperation {
  readonly requestBody?: {
    readonly content: Record<string, { readonly examples?: Record<string, { readonly value: unknown }> }>;
  };
}

export interface OpenApiDocument {
  readonly paths: Record<string, { readonly post?: DocumentedOperation }>;
  readonly [member: string]: unknown;
}

/** The documented request example of an operation, or undefined when it has none. */
export function documentedRequest(
  document: OpenApiDocument,
  operation: AnyOperation,
): Record<string, unknown> | undefined {
  const media = document.paths[operationPath(operation)]?.post?.requestBody?.content['application/json'];
  return media?.examples?.demo?.value as Record<string, unknown> | undefined;
}

export interface Replayed {
  readonly operation: AnyOperation;
  readonly request: Record<string, unknown>;
  readonly response: LightMyRequestResponse;
}

/**
 * Sends each operation's documented request, in the document's order, with the token. The session examples
 * name a user and a TokenId the demo has not: the user is added with the example's password first, and
 * logoff is sent the TokenId logon answered.
 */
export async function replayDocumentedRequests(
  app: FastifyInstance,
  database: Database,
  token: string,
  document: OpenApiDocument,
): Promise<Replayed[]> {
  if (!(await users.find(database.db, EXAMPLE_USER_NUMBER)))
    await users.add(database.db, EXAMPLE_USER_NUMBER, 'Example user', await hashPassword(PLACEHOLDER.userPassword));
  let sessionToken: string | undefined;
  const replayed: Replayed[] = [];
  for (const operation of OPERATIONS) {
    const documented = documentedRequest(document, operation);
    if (!documented) throw new Error(`${answerKey(operation)} has no documented request`);
    const credentials = documented.Credentials as Record<string, Record<string, unknown>>;
    const request =
      credentials.TokenCredentials?.TokenId === PLACEHOLDER.tokenId
        ? { ...documented, Credentials: { TokenCredentials: { TokenId: sessionToken } } }
        : documented;
    const response = await app.inject({
      method: 'POST',
      url: operationPath(operation),
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      payload: JSON.stringify(request),
    });
    const answer = response.statusCode === 200 ? (response.json() as Record<string, unknown>) : undefined;
    if (typeof answer?.TokenId === 'string') sessionToken = answer.TokenId;
    replayed.push({ operation, request, response });
  }
  return replayed;
}

/** Values the server makes up afresh on every call (a session's TokenId): an answer is the same without them. */
const FRESH_VALUES = ['TokenId'];

/**
 * Whether two answers to the same request are the same answer.
 * @example sameAnswer({ TokenId: 'a', MessageId: 'logon' }, { TokenId: 'b', MessageId: 'logon' }) // true
 */
export function sameAnswer(recorded: unknown, actual: unknown): boolean {
  const steady = (answer: unknown) =>
    JSON.stringify(answer, (key, value: unknown) => (FRESH_VALUES.includes(key) ? typeof value : value));
  return steady(recorded) === steady(actual);
}

async function recordAnswers(): Promise<Record<string, unknown>> {
  const database = await openDatabase({});
  try {
    await migrate(database.db);
    const secrets = secretsFromMaster(randomBytes(32));
    const { adminPassword, token } = await seedDemo(database, secrets);
    const app = await buildApp({ db: database.db, secrets, config: loadConfig({}), demoAdminPassword: adminPassword });
    try {
      const document = (await app.inject({ method: 'GET', url: '/openapi.json' })).json() as OpenApiDocument;
      const previous = JSON.parse(readFileSync(ANSWERS_FILE, 'utf8')) as Record<string, unknown>;
      const answers: Record<string, unknown> = {};
      for (const { operation, response } of await replayDocumentedRequests(app, database, token, document)) {
        if (response.statusCode !== 200)
          throw new Error(
            `${answerKey(operation)}: its documented request was answered ${response.statusCode}: ${response.body}`,
          );
        const key = answerKey(operation);
        const answer: unknown = response.json();
        // An answer that differs only in fresh values keeps its recorded form, so the file changes only when answers do.
        answers[key] = key in previous && sameAnswer(previous[key], answer) ? previous[key] : answer;
      }
      return answers;
    } finally {
      await app.close();
    }
  } finally {
    await database.close();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  writeFileSync(ANSWERS_FILE, `${JSON.stringify(await recordAnswers(), null, 2)}\n`);
  process.stderr.write(`wrote ${ANSWERS_FILE}\n`);
}
