/**
 * The OpenAPI document tells the truth. On the seeded demo dataset every operation's documented request is
 * replayed and answered as documented (status, content type, schema, the recorded example); bad requests of
 * every kind get a status, content type, schema and problem code the operation documents; the required
 * headers are sent; the examples show the demo password only on the demo dataset; gateway mode documents the
 * core's problems and answers with them.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { after, before, describe, test } from 'node:test';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { loadConfig, type Config } from '../src/config.js';
import { SANDBOX_FAULT_HEADER, SANDBOX_FAULT_PROBLEMS } from '../src/contract/sandbox-faults.js';
import { SCOPES, type Scope } from '../src/contract/scopes.js';
import { secretsFromMaster } from '../src/crypto/secrets.js';
import { demoCredentials } from '../src/http/demo-credentials.js';
import { buildApp } from '../src/http/app.js';
import { answerKey, PLACEHOLDER } from '../src/http/openapi-examples.js';
import { OPERATIONS } from '../src/operations/index.js';
import { operationPath, type AnyOperation } from '../src/operations/types.js';
import { DEMO_USER, demoExamples } from '../src/seed/examples.js';
import { DEFAULT_DEMO_ACCOUNTS, DEFAULT_SEED } from '../src/seed/load.js';
import { demoDataset, tokens } from '../src/store/access.js';
import type { Database } from '../src/database/database.js';
import {
  documentedRequest,
  replayDocumentedRequests,
  sameAnswer,
  seedDemo,
  withDemoPasswords,
  type DemoAccess,
} from '../scripts/openapi-answers.js';
import { Authenticator } from '../src/security/authenticator.js';
import { ADMIN_PASSWORD, BACKENDS, createHarness, openTestDatabase, type Harness } from './support/harness.js';
import { resolveRef, type Json } from './support/openapi-document.js';
import { closedPort, startUpstream, type Upstream } from './support/upstream.js';

const { noMatch } = demoExamples(DEFAULT_SEED, DEFAULT_DEMO_ACCOUNTS);
const get = (app: FastifyInstance, url: string) => app.inject({ method: 'GET', url });

/** The document's view of an operation's answers, and a check that an answer is one of them. */
class Contract {
  private readonly ajv = new Ajv2020({ strict: false, allErrors: true, allowUnionTypes: true });
  private static readonly ID = 'https://coregate.test/openapi.json';

  constructor(readonly document: Json) {
    addFormats.default(this.ajv);
    this.ajv.addSchema(document, Contract.ID);
  }

  operation(operation: AnyOperation): Json {
    const documented = this.document.paths[operationPath(operation)]?.post;
    assert.ok(documented, `${answerKey(operation)} is documented`);
    return documented;
  }

  /** An object of the document, following a `$ref` to a component. */
  resolve(object: Json): Json {
    return resolveRef(this.document, object);
  }

  /** The key of the answer that documents a status: the status itself, or its range (`4XX`, `5XX`). */
  responseKey(operation: AnyOperation, status: number): string | undefined {
    const responses = this.operation(operation).responses as Json;
    if (responses[String(status)]) return String(status);
    const range = `${String(status)[0]}XX`;
    return responses[range] && this.branch(this.resolve(responses[range]), status) ? range : undefined;
  }

  /** The answer documented for a status of an operation, if it documents the status. */
  response(operation: AnyOperation, status: number): Json | undefined {
    const key = this.responseKey(operation, status);
    return key === undefined ? undefined : this.resolve(this.operation(operation).responses[key]);
  }

  /** A problem answer's alternative for one status: `{ status: { const }, code: { enum } }`. */
  private branch(response: Json, status: number): Json | undefined {
    const schema = response.content?.['application/problem+json']?.schema;
    const branches: Json[] = schema?.allOf?.[1]?.anyOf ?? [];
    return branches.find((branch) => branch.properties?.status?.const === status)?.properties;
  }

  /** Whether `value` is valid against the schema at a JSON pointer of the document. */
  validate(pointer: string, value: unknown): string | undefined {
    const validate = this.ajv.getSchema(`${Contract.ID}#${pointer}`);
    assert.ok(validate, `no schema at ${pointer}`);
    return validate(value) ? undefined : this.ajv.errorsText(validate.errors);
  }

  /**
   * The answer is one the operation documents: its status, its media type, a body valid against that
   * media type's schema (a problem's code among the documented ones) and every required header.
   */
  assertDocumented(operation: AnyOperation, answer: LightMyRequestResponse): void {
    const where = `${answerKey(operation)} answered ${answer.statusCode} ${answer.body.slice(0, 300)}`;
    const responses = this.operation(operation).responses as Json;
    const key = this.responseKey(operation, answer.statusCode);
    assert.ok(key, `${where}: status ${answer.statusCode} is not documented`);
    const response = this.resolve(responses[key]);
    const mediaType = String(answer.headers['content-type']).split(';')[0]!;
    assert.ok(response.content?.[mediaType], `${where}: ${mediaType} is not documented`);
    const schema = response.content[mediaType].schema;
    const pointer = schema.$ref
      ? schema.$ref.replace('#', '')
      : typeof responses[key].$ref === 'string'
        ? `${responses[key].$ref.replace('#', '')}/content/${mediaType.replace('/', '~1')}/schema`
        : `/paths/${operationPath(operation).replaceAll('/', '~1')}/post/responses/${key}/content/${mediaType.replace('/', '~1')}/schema`;
    const invalid = this.validate(pointer, answer.json());
    assert.equal(invalid, undefined, `${where}: not valid against the documented schema: ${invalid}`);
    for (const [name, header] of Object.entries(response.headers ?? {})) {
      if (this.resolve(header as Json).required)
        assert.ok(answer.headers[name.toLowerCase()], `${where}: the required header ${name} is missing`);
    }
  }

  /** The problem codes documented for a status of an operation. */
  codes(operation: AnyOperation, status: number): string[] {
    const response = this.response(operation, status);
    return (response && this.branch(response, status)?.code?.enum) ?? [];
  }
}

async function documentOf(app: FastifyInstance): Promise<Contract> {
  const response = await get(app, '/openapi.json');
  assert.equal(response.statusCode, 200);
  return new Contract(response.json());
}

/** A request of `operation` whose record key names nothing in the demo dataset. */
function missingRecordRequest(request: Json): Json {
  const replaced: Json = { ...request };
  if ('AccountNumber' in replaced) replaced.AccountNumber = noMatch.accountNumber;
  if ('CollateralNumber' in replaced) replaced.CollateralNumber = noMatch.collateralNumber;
  if ('CorpTransferGlobalSequence' in replaced) {
    replaced.CorpTransferGlobalSequence = noMatch.globalSequence;
    replaced.CorpTransferGlobalSequenceDate = noMatch.globalSequenceDate;
  }
  return replaced;
}

for (const backend of BACKENDS) {
  describe(`the OpenAPI document on the demo dataset, on ${backend.name}`, () => {
    let database: Database;
    let demo: DemoAccess;
    let app: FastifyInstance;
    let contract: Contract;
    const config: Config = {
      ...loadConfig({}),
      rateLimitPerMinute: 1_000_000,
      findByRateLimitPerMinute: 1_000_000,
      checkResponses: true,
    };
    const secrets = secretsFromMaster(randomBytes(32));

    before(async () => {
      database = await openTestDatabase(backend);
      demo = await seedDemo(database, secrets);
      app = await buildApp({
        db: database.db,
        databaseKind: database.kind,
        secrets,
        config,
        demoAdminPassword: demo.adminPassword,
        demoUserPassword: demo.userPassword,
      });
      contract = await documentOf(app);
    });
    after(async () => {
      await app?.close();
      await database?.close();
    });

    const call = (operation: AnyOperation, body: unknown, headers: Record<string, string> = {}) =>
      app.inject({
        method: 'POST',
        url: operationPath(operation),
        headers: { authorization: `Bearer ${demo.token}`, 'content-type': 'application/json', ...headers },
        payload: typeof body === 'string' ? body : JSON.stringify(body),
      });
    const documentedOf = (operation: AnyOperation) => documentedRequest(contract.document as never, operation)!;
    /** The documented request as /docs sends it: the demo's passwords in place of their placeholders. */
    const requestOf = (operation: AnyOperation) => withDemoPasswords(documentedOf(operation), demo);

    test('every operation has a request example and a recorded answer as its success example', () => {
      for (const operation of OPERATIONS) {
        assert.ok(documentedOf(operation), `${answerKey(operation)} has no request example`);
        const success = contract.response(operation, 200)!.content['application/json'];
        assert.ok(
          success.examples?.demo,
          `${answerKey(operation)} has no recorded answer: run npm run openapi:answers (scripts/openapi-answers.ts)`,
        );
      }
    });

    test('the request examples carry administrative credentials only, the password a placeholder', () => {
      for (const operation of OPERATIONS) {
        const { Credentials } = documentedOf(operation);
        if (operation.service === 'usermanagement') continue;
        assert.deepEqual(
          Credentials,
          { AdministrativeCredentials: { Password: PLACEHOLDER.adminPassword } },
          answerKey(operation),
        );
      }
    });

    test("logon's example signs on as the demo user, its password a placeholder; logoff's names the TokenId logon answers", () => {
      const logon = OPERATIONS.find((operation) => operation.name === 'logon')!;
      const logoff = OPERATIONS.find((operation) => operation.name === 'logoff')!;
      assert.deepEqual(documentedOf(logon).Credentials, {
        UserNumberCredentials: { UserNumber: DEMO_USER.userNumber, Password: PLACEHOLDER.userPassword },
      });
      assert.deepEqual(documentedOf(logoff).Credentials, { TokenCredentials: { TokenId: PLACEHOLDER.tokenId } });
    });

    test("/openapi.json, /openapi-admin.json, /docs and everything /docs loads hold neither the demo's passwords nor its token", async () => {
      const secrets = {
        'the admin password': demo.adminPassword,
        "the user's password": demo.userPassword,
        'the token': demo.token,
      };
      const page = await get(app, '/docs');
      assert.equal(page.statusCode, 200);
      // Its scripts, styles and icons, and the document in every form the reference serves it.
      const assets = [...page.body.matchAll(/(?:src|href)="([^"]+)"/g)].map((match) => match[1]!);
      assert.ok(
        assets.some((asset) => asset.endsWith('swagger-initializer.js')),
        assets.join(', '),
      );
      for (const url of ['/openapi.json', '/openapi-admin.json', '/docs', '/docs/json', '/docs/yaml', ...assets]) {
        const answer = await get(app, url);
        assert.equal(answer.statusCode, 200, url);
        for (const [what, secret] of Object.entries(secrets))
          assert.ok(!answer.body.includes(secret), `${url} holds ${what}`);
      }
    });

    test("GET /admin/demo-credentials answers the demo's passwords to the demo token, and nothing to a token without the admin scope", async () => {
      const answer = await app.inject({
        method: 'GET',
        url: '/admin/demo-credentials',
        headers: { authorization: `Bearer ${demo.token}` },
      });
      assert.equal(answer.statusCode, 200, answer.body);
      assert.deepEqual(answer.json(), { adminPassword: demo.adminPassword, userPassword: demo.userPassword });
      assert.equal(answer.headers['cache-control'], 'no-store');
      const unscoped = (
        await tokens.create(
          database.db,
          'not-admin',
          SCOPES.filter((scope) => scope !== 'admin'),
        )
      ).token;
      const refused = await app.inject({
        method: 'GET',
        url: '/admin/demo-credentials',
        headers: { authorization: `Bearer ${unscoped}` },
      });
      assert.equal(refused.statusCode, 403);
      assert.ok(!refused.body.includes(demo.adminPassword));
    });

    test('every documented request is answered 200 as documented, with the recorded answer', async () => {
      const replayed = await replayDocumentedRequests(app, demo.token, contract.document as never);
      assert.equal(replayed.length, OPERATIONS.length);
      for (const { operation, response } of replayed) {
        assert.equal(response.statusCode, 200, `${answerKey(operation)}: ${response.body}`);
        contract.assertDocumented(operation, response);
        assert.ok(response.headers['ratelimit-remaining'], 'the rate-limit budget is reported');
        const recorded = contract.resolve(
          contract.response(operation, 200)!.content['application/json'].examples.demo,
        ).value;
        assert.ok(
          sameAnswer(recorded, response.json()),
          `${answerKey(operation)} answers otherwise than its recorded example: run npm run openapi:answers`,
        );
      }
    });

    test('a missing or bad token, a missing scope and wrong credentials are documented problems', async () => {
      const unscopedToken = (await tokens.create(database.db, 'no-scopes', [])).token;
      // Wrong passwords lock the administrative password under the token that sent them: not the demo token.
      const guessingToken = (await tokens.create(database.db, 'guessing', SCOPES)).token;
      for (const operation of OPERATIONS) {
        const request = requestOf(operation);
        const noToken = await call(operation, request, { authorization: '' });
        assert.equal(noToken.statusCode, 401);
        contract.assertDocumented(operation, noToken);
        assert.equal((await call(operation, request, { authorization: 'Bearer nope' })).statusCode, 401);
        if (operation.scope) {
          const unscoped = await call(operation, request, { authorization: `Bearer ${unscopedToken}` });
          assert.equal(unscoped.statusCode, 403, answerKey(operation));
          contract.assertDocumented(operation, unscoped);
        }
        if (operation.service !== 'usermanagement') {
          const wrong = await call(
            operation,
            { ...request, Credentials: { AdministrativeCredentials: { Password: 'not-the-password' } } },
            { authorization: `Bearer ${guessingToken}` },
          );
          assert.equal(wrong.statusCode, 403, answerKey(operation));
          contract.assertDocumented(operation, wrong);
        }
      }
    });

    test('malformed JSON, a body of the wrong shape and the wrong media type are documented problems', async () => {
      for (const operation of OPERATIONS) {
        const request = requestOf(operation);
        const cases: [LightMyRequestResponse, number, string][] = [
          [await call(operation, '{"Credentials":'), 400, 'MALFORMED_JSON'],
          [await call(operation, { ...request, NoSuchProperty: 1 }), 400, 'VALIDATION_FAILED'],
          [await call(operation, { ...request, Credentials: 'admin' }), 400, 'VALIDATION_FAILED'],
          [await call(operation, 'SSN=1', { 'content-type': 'text/plain' }), 415, 'UNSUPPORTED_MEDIA_TYPE'],
        ];
        for (const [answer, status, code] of cases) {
          assert.equal(answer.statusCode, status, `${answerKey(operation)}: ${answer.body}`);
          assert.equal(answer.json().code, code);
          contract.assertDocumented(operation, answer);
        }
      }
    });

    test('an operation that documents 404 answers it for a key that names nothing, and only such do', async () => {
      for (const operation of OPERATIONS) {
        const request = requestOf(operation);
        const missing = missingRecordRequest(request);
        if (JSON.stringify(missing) === JSON.stringify(request)) {
          assert.equal(contract.response(operation, 404), undefined, `${answerKey(operation)} names no record`);
          continue;
        }
        const answer = await call(operation, missing);
        if (contract.response(operation, 404)) assert.equal(answer.statusCode, 404, answerKey(operation));
        else assert.equal(answer.statusCode, 200, `${answerKey(operation)}: nothing found is an answer`);
        contract.assertDocumented(operation, answer);
      }
    });

    test('a sandbox fault header, while fault injection is off, is the documented 403', async () => {
      // The session examples hold placeholders: their credentials fail before the header is looked at.
      for (const operation of OPERATIONS.filter((op) => op.service !== 'usermanagement')) {
        const answer = await call(operation, requestOf(operation), { [SANDBOX_FAULT_HEADER]: 'drop' });
        assert.equal(answer.statusCode, 403, answerKey(operation));
        assert.equal(answer.json().code, 'SANDBOX_FAULTS_DISABLED');
        contract.assertDocumented(operation, answer);
      }
    });

    test('a bad query or paging token is the documented 400 of the operations that take them', async () => {
      let checked = 0;
      for (const operation of OPERATIONS) {
        const request = requestOf(operation);
        const codes = contract.codes(operation, 400);
        const variants: [string, Json][] = [];
        if ('Query' in operation.request) variants.push(['INVALID_QUERY', { ...request, Query: 'NoSuchField = 1' }]);
        if ('SearchFilter' in operation.request)
          variants.push(['INVALID_QUERY', { ...request, SearchFilter: { Query: 'NoSuchField = 1' } }]);
        if ('PagingRequestContext' in operation.request)
          variants.push([
            'INVALID_PAGING_TOKEN',
            { ...request, PagingRequestContext: { NumberOfRecordsToReturn: 1, Token: 'not-a-token' } },
          ]);
        for (const [code, variant] of variants) {
          const answer = await call(operation, variant);
          assert.equal(answer.statusCode, 400, `${answerKey(operation)}: ${answer.body}`);
          assert.equal(answer.json().code, code);
          assert.ok(codes.includes(code), `${answerKey(operation)} documents ${code}`);
          contract.assertDocumented(operation, answer);
          checked += 1;
        }
      }
      assert.ok(checked > 0);
    });

    test('an Idempotency-Key sent again with another body is the documented 422; a replay says so in a header', async () => {
      const write = OPERATIONS.find((operation) => operation.writes)!;
      const request = requestOf(write);
      const key = { 'idempotency-key': `contract-${randomBytes(4).toString('hex')}` };
      const first = await call(write, request, key);
      assert.equal(first.statusCode, 200);
      const replay = await call(write, request, key);
      assert.equal(replay.headers['idempotent-replayed'], 'true');
      contract.assertDocumented(write, replay);
      assert.ok(contract.response(write, 200)!.headers['Idempotent-Replayed'], 'the replay header is documented');
      const reused = await call(write, { ...request, AccountNumber: noMatch.accountNumber }, key);
      assert.equal(reused.statusCode, 422);
      contract.assertDocumented(write, reused);
    });

    test('a body over the size limit is the documented 413', async () => {
      const operation = OPERATIONS[0]!;
      const answer = await call(operation, { ...requestOf(operation), Padding: 'x'.repeat(config.bodyLimit) });
      assert.equal(answer.statusCode, 413);
      contract.assertDocumented(operation, answer);
    });
  });
}

describe('the OpenAPI document itself', () => {
  let h: Harness;
  let app: FastifyInstance;
  // One call a minute: the second is refused.
  before(async () => {
    h = await createHarness({ name: 'pglite' }, { rateLimitPerMinute: 1 });
    app = h.app;
  });
  after(() => h.close());

  test('is OpenAPI 3.1 with servers, a described tag per service and the scopes of the bearer scheme', async () => {
    const { document } = await documentOf(app);
    assert.equal(document.openapi, '3.1.0');
    assert.ok(document.servers.length > 0);
    // A tag per service; the admin API's is in its own document (test/admin-api.test.ts).
    const services = new Set(OPERATIONS.map((operation) => operation.service));
    assert.deepEqual(new Set(document.tags.map((tag: Json) => tag.name)), services);
    for (const tag of document.tags) assert.ok(tag.description, `${tag.name} is described`);
    const scheme = document.components.securitySchemes.bearerAuth;
    assert.deepEqual(Object.keys(scheme['x-scopes']).sort(), [...SCOPES].sort());
    // The Authorize dialog shows the scheme's description above the token field: the scopes are listed in the
    // document's description instead.
    for (const scope of SCOPES) assert.match(document.info.description, new RegExp(`- \`${scope}\`: `));
    assert.ok(scheme.description.length < 200, scheme.description);
  });

  test('each operation names its scope in its security requirement and documents its headers', async () => {
    const contract = await documentOf(app);
    for (const operation of OPERATIONS) {
      const documented = contract.operation(operation);
      const scopes: Scope[] = operation.scope ? [operation.scope] : [];
      assert.deepEqual(documented.security, [{ bearerAuth: scopes }], answerKey(operation));
      const parameters = documented.parameters.map((parameter: Json) => contract.resolve(parameter).name);
      assert.ok(parameters.includes('X-Request-Id'));
      assert.ok(parameters.includes(SANDBOX_FAULT_HEADER));
      assert.equal(parameters.includes('Idempotency-Key'), operation.writes === true, answerKey(operation));
      const success = contract.response(operation, 200)!;
      assert.notEqual(success.description, 'Default Response');
      assert.ok(success.headers['X-Request-Id'] && success.headers['RateLimit-Remaining']);
      assert.ok(contract.response(operation, 429)!.headers['Retry-After']);
      assert.deepEqual(Object.keys(documented.responses), ['200', '4XX', '5XX'], answerKey(operation));
      for (const range of ['4XX', '5XX']) {
        const { content } = contract.resolve(documented.responses[range]);
        assert.deepEqual(Object.keys(content), ['application/problem+json'], `${answerKey(operation)} ${range}`);
        const branches: Json[] = content['application/problem+json'].schema.allOf[1].anyOf;
        for (const { properties } of branches) {
          assert.equal(String(properties.status.const)[0], range[0], `${answerKey(operation)} ${range}`);
          assert.ok(properties.code.enum.length > 0, `${answerKey(operation)} ${properties.status.const} has codes`);
        }
      }
    }
  });

  test('too many calls is the documented 429 with Retry-After', async () => {
    const contract = await documentOf(app);
    const findBySSN = OPERATIONS.find((operation) => operation.name === 'findBySSN')!;
    assert.equal((await h.call(operationPath(findBySSN), { SSN: '123456789' })).statusCode, 200);
    const refused = await h.call(operationPath(findBySSN), { SSN: '123456789' });
    assert.equal(refused.statusCode, 429);
    assert.ok(Number(refused.headers['retry-after']) >= 1);
    contract.assertDocumented(findBySSN, refused);
  });

  test('the examples show a placeholder for the password of a database that is not the demo dataset', async () => {
    const { document } = await documentOf(app);
    for (const operation of OPERATIONS.filter((op) => op.service !== 'usermanagement')) {
      assert.deepEqual(documentedRequest(document as never, operation)!.Credentials, {
        AdministrativeCredentials: { Password: PLACEHOLDER.adminPassword },
      });
    }
  });

  test('an X-Request-Id sent is the one answered; one not sent is made up', async () => {
    const given = await app.inject({ method: 'GET', url: '/health', headers: { 'x-request-id': 'my-request.1' } });
    assert.equal(given.headers['x-request-id'], 'my-request.1');
    assert.match(String((await get(app, '/health')).headers['x-request-id']), /^[0-9a-f-]{36}$/);
  });
});

describe('the OpenAPI document of a sandbox with fault injection on', () => {
  let h: Harness;
  let contract: Contract;
  before(async () => {
    h = await createHarness({ name: 'pglite' }, { sandboxFaults: true });
    contract = await documentOf(h.app);
  });
  after(() => h.close());

  test('every problem the fault header can force is documented on every operation, and answered as documented', async () => {
    const sessions = new Set(OPERATIONS.filter((operation) => operation.service === 'usermanagement'));
    for (const operation of OPERATIONS.filter((op) => !sessions.has(op))) {
      const { Credentials: _placeholder, ...request } = documentedRequest(contract.document as never, operation)!;
      for (const [code, statuses] of Object.entries(SANDBOX_FAULT_PROBLEMS)) {
        for (const status of statuses) {
          assert.ok(
            contract.codes(operation, status).includes(code),
            `${answerKey(operation)} documents ${status} ${code}`,
          );
          const answer = await h.call(operationPath(operation), request, {
            [SANDBOX_FAULT_HEADER]: `status=${status}; code=${code}`,
          });
          assert.equal(answer.statusCode, status, `${answerKey(operation)}: ${answer.body}`);
          contract.assertDocumented(operation, answer);
        }
      }
    }
  });
});

describe("the demo's passwords an admin is given (GET /admin/demo-credentials)", () => {
  let h: Harness;
  let authenticator: Authenticator;
  before(async () => {
    h = await createHarness({ name: 'pglite' });
    authenticator = new Authenticator(h.database.db, h.secrets, h.config);
  });
  after(() => h.close());

  const given = { adminPassword: ADMIN_PASSWORD };
  const notFound = { status: 404, code: 'NOT_FOUND' };

  test('none on a database that is not the demo dataset, even the right password', async () => {
    await assert.rejects(demoCredentials(h.database.db, authenticator, given), notFound);
  });

  test('none once the demo store was given other records (an import forgets the demo)', async () => {
    await demoDataset.set(h.database.db, { seed: DEFAULT_SEED, accounts: DEFAULT_DEMO_ACCOUNTS });
    await demoDataset.set(h.database.db, undefined);
    await assert.rejects(demoCredentials(h.database.db, authenticator, given), notFound);
  });

  test('none on the demo dataset when it is not the administrative password (an operator set their own)', async () => {
    await demoDataset.set(h.database.db, { seed: DEFAULT_SEED, accounts: DEFAULT_DEMO_ACCOUNTS });
    await assert.rejects(
      demoCredentials(h.database.db, authenticator, { adminPassword: 'the-first-password' }),
      notFound,
    );
  });

  test('the password on the demo dataset whose administrative password it is, without a user password that opens nothing', async () => {
    await demoDataset.set(h.database.db, { seed: DEFAULT_SEED, accounts: DEFAULT_DEMO_ACCOUNTS });
    assert.deepEqual(
      await demoCredentials(h.database.db, authenticator, { ...given, userPassword: 'no user 1 here' }),
      given,
    );
  });
});

describe('the OpenAPI document in gateway mode', () => {
  let upstream: Upstream;
  let gateway: Harness;
  let contract: Contract;
  const findBySSN = OPERATIONS.find((operation) => operation.name === 'findBySSN')!;
  const logon = OPERATIONS.find((operation) => operation.name === 'logon')!;

  before(async () => {
    upstream = await startUpstream();
    const config = loadConfig({ COREGATE_CORE: 'symxchange', COREGATE_SYMXCHANGE_URL: upstream.url });
    gateway = await createHarness(
      { name: 'pglite' },
      { core: config.core, symxchange: { ...config.symxchange!, timeoutMs: 300, breakerFailures: 1000 } },
    );
    contract = await documentOf(gateway.app);
  });
  after(async () => {
    await gateway.close();
    await upstream.close();
  });

  const lookup = () => gateway.call(operationPath(findBySSN), { SSN: '123456789' });

  test("documents the core's problems on the operations the core answers", () => {
    assert.deepEqual(contract.codes(findBySSN, 502).sort(), ['CORE_BAD_RESPONSE', 'CORE_ERROR']);
    assert.ok(contract.codes(findBySSN, 503).includes('CORE_UNAVAILABLE'));
    assert.deepEqual(contract.codes(findBySSN, 504), ['CORE_TIMEOUT']);
    assert.ok(contract.codes(findBySSN, 403).includes('CORE_CREDENTIALS_REJECTED'));
    assert.deepEqual(contract.codes(logon, 501), ['STORE_ONLY']);
    assert.equal(contract.response(logon, 502), undefined, 'logon never reaches a core');
  });

  test("a core's fault, a page that is not SOAP, silence and a closed port are answered as documented", async () => {
    const fault =
      '<?xml version="1.0"?><S:Envelope xmlns:S="http://schemas.xmlsoap.org/soap/envelope/"><S:Body><S:Fault>' +
      '<faultcode>S:Server</faultcode><faultstring>Invalid share type</faultstring></S:Fault></S:Body></S:Envelope>';
    const cases: [(response: ServerResponse) => void, number, string][] = [
      [(response) => response.writeHead(500, { 'content-type': 'text/xml' }).end(fault), 502, 'CORE_ERROR'],
      [(response) => response.writeHead(404, { 'content-type': 'text/html' }).end('<html/>'), 502, 'CORE_BAD_RESPONSE'],
      [() => undefined, 504, 'CORE_TIMEOUT'],
    ];
    for (const [answer, status, code] of cases) {
      upstream.behave((_received, response) => answer(response));
      const response = await lookup();
      assert.equal(response.statusCode, status, response.body);
      assert.equal(response.json().code, code);
      contract.assertDocumented(findBySSN, response);
    }
    const unreachable = loadConfig({
      COREGATE_CORE: 'symxchange',
      COREGATE_SYMXCHANGE_URL: `http://127.0.0.1:${await closedPort()}`,
    });
    const closed = await createHarness(
      { name: 'pglite' },
      { core: unreachable.core, symxchange: unreachable.symxchange },
    );
    try {
      const response = await closed.call(operationPath(findBySSN), { SSN: '123456789' });
      assert.equal(response.statusCode, 503, response.body);
      assert.equal(response.json().code, 'CORE_UNAVAILABLE');
      contract.assertDocumented(findBySSN, response);
    } finally {
      await closed.close();
    }
  });

  test('logon is the documented 501 STORE_ONLY', async () => {
    const response = await gateway.call(operationPath(logon), {
      Credentials: { UserNumberCredentials: { UserNumber: 1, Password: 'x' } },
    });
    assert.equal(response.statusCode, 501, response.body);
    contract.assertDocumented(logon, response);
  });
});
