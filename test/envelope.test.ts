/**
 * The envelope of every operation: bearer token (401), body credentials (403), validation (400), and
 * the HTTP errors (404, 405, 413, 415). No input, however malformed, produces a 500.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import fc from 'fast-check';
import type { TSchema } from 'typebox';
import { OPERATIONS } from '../src/operations/index.js';
import { operationPath, type AnyOperation } from '../src/operations/types.js';
import { hashPassword } from '../src/crypto/passwords.js';
import { tokens, users } from '../src/store/access.js';
import { adminCredentials, BACKENDS, createHarness, type Harness } from './support/harness.js';

const FIND_BY_CARD = '/gw/627/persistent/findby/findByActiveCard';
const CARD = { CardNumber: '4000000000000002' };
const TOKEN_CACHE_MS = 300;

function assertProblem(
  response: { statusCode: number; headers: Record<string, unknown>; json(): unknown },
  status: number,
  code: string,
) {
  assert.equal(response.statusCode, status);
  assert.match(String(response.headers['content-type']), /^application\/problem\+json/);
  assert.equal((response.json() as { code: string }).code, code);
}

for (const backend of BACKENDS) {
  describe(`authentication on ${backend.name}`, () => {
    let h: Harness;
    before(async () => {
      h = await createHarness(backend, { tokenCacheMs: TOKEN_CACHE_MS });
      await users.add(h.database.db, 42, 'Teller 42', await hashPassword('teller-pass'));
    });
    after(() => h.close());

    const post = (headers: Record<string, string>, body: unknown) =>
      h.app.inject({
        method: 'POST',
        url: FIND_BY_CARD,
        headers: { 'content-type': 'application/json', ...headers },
        payload: JSON.stringify(body),
      });

    test('a request without a bearer token is 401 with WWW-Authenticate', async () => {
      const response = await post({}, { Credentials: adminCredentials, ...CARD });
      assertProblem(response, 401, 'UNAUTHENTICATED');
      assert.match(String(response.headers['www-authenticate']), /^Bearer/);
    });

    test('an unknown, malformed, revoked or expired token is 401', async () => {
      const revoked = (await tokens.create(h.database.db, 'to-revoke', ['findby'])).token;
      await tokens.revoke(h.database.db, 'to-revoke');
      const expired = (await tokens.create(h.database.db, 'expired', ['findby'], new Date(Date.now() - 1000))).token;
      for (const authorization of [
        `Bearer cg_unknown`,
        `Basic ${h.token}`,
        'Bearer',
        `Bearer ${revoked}`,
        `Bearer ${expired}`,
      ]) {
        assertProblem(
          await post({ authorization }, { Credentials: adminCredentials, ...CARD }),
          401,
          'UNAUTHENTICATED',
        );
      }
    });

    test('a token revoked while in use stops working once the token cache expires, not before', async () => {
      // The route's first call compiles its validator: not inside the window measured below.
      assert.equal((await h.call(FIND_BY_CARD, CARD)).statusCode, 200);
      const { token } = await tokens.create(h.database.db, 'revoked-in-use', ['findby']);
      const lookUp = () => post({ authorization: `Bearer ${token}` }, { Credentials: adminCredentials, ...CARD });
      // The caller's first call verifies the admin password (a scrypt, slow on a loaded machine): not inside
      // the window either. Once the token is forgotten, a fast call remembers it again and opens the window.
      assert.equal((await lookUp()).statusCode, 200);
      await new Promise((resolve) => setTimeout(resolve, TOKEN_CACHE_MS + 50));
      assert.equal((await lookUp()).statusCode, 200);
      await tokens.revoke(h.database.db, 'revoked-in-use');
      assert.equal((await lookUp()).statusCode, 200, 'remembered for COREGATE_TOKEN_CACHE_MS');
      await new Promise((resolve) => setTimeout(resolve, TOKEN_CACHE_MS + 50));
      assertProblem(await lookUp(), 401, 'UNAUTHENTICATED');
    });

    test('a token without the operation scope is 403', async () => {
      const token = await h.tokenWith(['corptransfer:read']);
      assertProblem(
        await post({ authorization: `Bearer ${token}` }, { Credentials: adminCredentials, ...CARD }),
        403,
        'FORBIDDEN',
      );
    });

    test('a wrong administrative password is 403', async () => {
      const response = await h.call(FIND_BY_CARD, {
        Credentials: { AdministrativeCredentials: { Password: 'wrong' } },
        ...CARD,
      });
      assertProblem(response, 403, 'FORBIDDEN');
    });

    test('valid UserNumberCredentials are accepted; a wrong password or unknown user is 403', async () => {
      const ok = await h.call(FIND_BY_CARD, {
        Credentials: { UserNumberCredentials: { UserNumber: 42, Password: 'teller-pass' } },
        ...CARD,
      });
      assert.equal(ok.statusCode, 200, ok.body);
      for (const credentials of [
        { UserNumber: 42, Password: 'nope' },
        { UserNumber: 43, Password: 'teller-pass' },
      ]) {
        assertProblem(
          await h.call(FIND_BY_CARD, { Credentials: { UserNumberCredentials: credentials }, ...CARD }),
          403,
          'FORBIDDEN',
        );
      }
    });

    test('every credential given must verify: a good admin password with a bad user password is 403', async () => {
      const response = await h.call(FIND_BY_CARD, {
        Credentials: { ...adminCredentials, UserNumberCredentials: { UserNumber: 42, Password: 'nope' } },
        ...CARD,
      });
      assertProblem(response, 403, 'FORBIDDEN');
    });

    test('member-level credentials are refused on FindBy', async () => {
      const response = await h.call(FIND_BY_CARD, {
        Credentials: { CardCredentials: { CardNumber: '4000000000000002' } },
        ...CARD,
      });
      assertProblem(response, 403, 'FORBIDDEN');
    });

    test('empty credential objects, as the spec shows them, count as absent', async () => {
      const response = await h.call(FIND_BY_CARD, {
        Credentials: { ...adminCredentials, CardCredentials: {}, MICRCredentials: {} },
        ...CARD,
      });
      assert.equal(response.statusCode, 200, response.body);
      assertProblem(await h.call(FIND_BY_CARD, { Credentials: { CardCredentials: {} }, ...CARD }), 403, 'FORBIDDEN');
    });

    test('a credential object missing a field is 400 naming it', async () => {
      const response = await h.call(FIND_BY_CARD, {
        Credentials: { UserNumberCredentials: { UserNumber: 42 } },
        ...CARD,
      });
      assertProblem(response, 400, 'VALIDATION_FAILED');
      assert.equal(
        (response.json() as { errors: { pointer: string }[] }).errors[0]!.pointer,
        '/Credentials/UserNumberCredentials/Password',
      );
    });

    test('an empty AdministrativeCredentials, UserNumberCredentials or TokenCredentials is 400 naming what it lacks', async () => {
      const lacking = {
        AdministrativeCredentials: ['/Credentials/AdministrativeCredentials/Password'],
        UserNumberCredentials: [
          '/Credentials/UserNumberCredentials/Password',
          '/Credentials/UserNumberCredentials/UserNumber',
        ],
        TokenCredentials: ['/Credentials/TokenCredentials/TokenId'],
      };
      for (const [kind, pointers] of Object.entries(lacking)) {
        // Beside a member credential shown empty, as the spec shows them: that one still counts as absent.
        const response = await h.call(FIND_BY_CARD, { Credentials: { [kind]: {}, CardCredentials: {} }, ...CARD });
        assertProblem(response, 400, 'VALIDATION_FAILED');
        const errors = (response.json() as { errors: { pointer: string }[] }).errors;
        assert.deepEqual(errors.map((error) => error.pointer).sort(), pointers.sort(), response.body);
      }
    });
  });
}

/** A value of the wrong JSON type for a schema: a number where a string is expected, and so on. */
function wrongTypeValue(schema: TSchema): unknown {
  return (schema as { type?: unknown }).type === 'string' ? 12 : 'twelve';
}

describe('request validation of every operation', () => {
  let h: Harness;
  before(async () => (h = await createHarness({ name: 'pglite' })));
  after(() => h.close());

  test('CardNumber: 12 is a 400 naming /CardNumber', async () => {
    const response = await h.call(FIND_BY_CARD, { CardNumber: 12 });
    assertProblem(response, 400, 'VALIDATION_FAILED');
    assert.deepEqual((response.json() as { errors: unknown }).errors, [
      { pointer: '/CardNumber', detail: 'must be a JSON string' },
    ]);
  });

  const requiredFields = (operation: AnyOperation) =>
    Object.entries<TSchema>(operation.request).filter(([, schema]) => !('~optional' in schema));

  for (const operation of OPERATIONS) {
    const path = operationPath(operation);

    test(
      `${operation.family} ${operation.name}: each missing required field is reported with its pointer`,
      { skip: requiredFields(operation).length === 0 && 'no required fields' },
      async () => {
        const response = await h.call(path, {});
        assertProblem(response, 400, 'VALIDATION_FAILED');
        const pointers = (response.json() as { errors: { pointer: string }[] }).errors.map((e) => e.pointer).sort();
        assert.deepEqual(
          pointers,
          requiredFields(operation)
            .map(([name]) => `/${name}`)
            .sort(),
        );
      },
    );

    test(`${operation.family} ${operation.name}: a value of the wrong type is reported with its pointer`, async () => {
      for (const [name, schema] of Object.entries<TSchema>(operation.request)) {
        const response = await h.call(path, { [name]: wrongTypeValue(schema) });
        assert.equal(response.statusCode, 400);
        const pointers = (response.json() as { errors: { pointer: string }[] }).errors.map((e) => e.pointer);
        assert.ok(pointers.includes(`/${name}`), `${name}: ${response.body}`);
      }
    });

    test(`${operation.family} ${operation.name}: unknown properties are rejected, at the top and inside Credentials`, async () => {
      const response = await h.call(path, { Credentials: { ...adminCredentials, Extra: {} }, Typo: 1 });
      const pointers = (response.json() as { errors: { pointer: string }[] }).errors.map((e) => e.pointer);
      assert.ok(pointers.includes('/Typo') && pointers.includes('/Credentials/Extra'), response.body);
    });

    test(`${operation.family} ${operation.name}: missing or empty Credentials is 400`, async () => {
      for (const body of [{ Credentials: undefined }, { Credentials: {} }]) {
        const response = await h.app.inject({
          method: 'POST',
          url: path,
          headers: { authorization: `Bearer ${h.token}`, 'content-type': 'application/json' },
          payload: JSON.stringify(body),
        });
        assertProblem(response, 400, 'VALIDATION_FAILED');
      }
    });
  }

  test('no JSON body, however malformed, produces a 500', async () => {
    const paths = OPERATIONS.map((op) => operationPath(op));
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...paths),
        fc.oneof(
          fc.jsonValue().map((v) => JSON.stringify(v)),
          fc
            .dictionary(fc.string(), fc.jsonValue())
            .map((v) => JSON.stringify({ Credentials: adminCredentials, ...v })),
          fc.string(),
        ),
        async (path, payload) => {
          const response = await h.app.inject({
            method: 'POST',
            url: path,
            headers: { authorization: `Bearer ${h.token}`, 'content-type': 'application/json' },
            payload,
          });
          assert.ok(response.statusCode < 500, `${response.statusCode} for ${payload}`);
          if (response.statusCode !== 200) assert.match(String(response.headers['content-type']), /problem\+json/);
        },
      ),
      { numRuns: 400 },
    );
  });
});

describe('HTTP errors', () => {
  let h: Harness;
  before(async () => (h = await createHarness({ name: 'pglite' }, { bodyLimit: 2048 })));
  after(() => h.close());

  test('an unknown path is 404 NOT_FOUND', async () => {
    assertProblem(await h.call('/gw/627/persistent/findby/findByNothing', {}), 404, 'NOT_FOUND');
  });

  test('a wrong method is 405 with Allow', async () => {
    const response = await h.app.inject({ method: 'GET', url: FIND_BY_CARD });
    assertProblem(response, 405, 'METHOD_NOT_ALLOWED');
    assert.equal(response.headers.allow, 'POST');
  });

  test('a body that is not JSON is 415', async () => {
    for (const contentType of ['text/plain', 'application/xml', 'application/x-www-form-urlencoded']) {
      const response = await h.app.inject({
        method: 'POST',
        url: FIND_BY_CARD,
        headers: { authorization: `Bearer ${h.token}`, 'content-type': contentType },
        payload: 'CardNumber=1',
      });
      assertProblem(response, 415, 'UNSUPPORTED_MEDIA_TYPE');
    }
  });

  test('a body over the limit is 413', async () => {
    const response = await h.call(FIND_BY_CARD, { CardNumber: '4'.repeat(5000) });
    assertProblem(response, 413, 'PAYLOAD_TOO_LARGE');
  });

  test('syntactically broken JSON is 400 MALFORMED_JSON', async () => {
    const response = await h.app.inject({
      method: 'POST',
      url: FIND_BY_CARD,
      headers: { authorization: `Bearer ${h.token}`, 'content-type': 'application/json' },
      payload: '{"CardNumber": ',
    });
    assertProblem(response, 400, 'MALFORMED_JSON');
  });

  test('__proto__ and constructor payloads are rejected', async () => {
    for (const payload of ['{"__proto__": {"admin": true}}', '{"constructor": {"prototype": {"admin": true}}}']) {
      const response = await h.app.inject({
        method: 'POST',
        url: FIND_BY_CARD,
        headers: { authorization: `Bearer ${h.token}`, 'content-type': 'application/json' },
        payload,
      });
      assertProblem(response, 400, 'VALIDATION_FAILED');
    }
  });

  test('the request id is echoed, or generated when absent', async () => {
    const echoed = await h.call(FIND_BY_CARD, CARD, { 'x-request-id': 'abc-123' });
    assert.equal(echoed.headers['x-request-id'], 'abc-123');
    const generated = await h.call(FIND_BY_CARD, CARD);
    assert.match(String(generated.headers['x-request-id']), /^[0-9a-f-]{36}$/);
  });
});
