/**
 * JWT bearer tokens from an external identity provider, verified against a JWKS this test serves.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import {
  base64url,
  exportJWK,
  exportSPKI,
  generateKeyPair,
  SignJWT,
  type CryptoKey,
  type JWK,
  type JWTPayload,
} from 'jose';
import { createJwtVerifier, jwtSettingsFromEnv, looksLikeJwt, type JwtSettings } from '../src/security/jwt.js';

const ISSUER = 'https://idp.test/';
const AUDIENCE = 'coregate';

interface SigningKey {
  readonly kid: string;
  readonly privateKey: CryptoKey;
  readonly publicKey: CryptoKey;
  /** The public key as the provider publishes it. */
  readonly jwk: JWK;
}

async function signingKey(kid: string): Promise<SigningKey> {
  const { privateKey, publicKey } = await generateKeyPair('RS256');
  return { kid, privateKey, publicKey, jwk: { ...(await exportJWK(publicKey)), kid, alg: 'RS256', use: 'sig' } };
}

const nowSeconds = () => Math.floor(Date.now() / 1000);

/** Claims the verifier accepts, with overrides; an override set to undefined leaves the claim out. */
function claims(overrides: JWTPayload = {}): JWTPayload {
  const all: JWTPayload = {
    iss: ISSUER,
    aud: AUDIENCE,
    sub: 'alice',
    iat: nowSeconds(),
    exp: nowSeconds() + 300,
    ...overrides,
  };
  return Object.fromEntries(Object.entries(all).filter(([, value]) => value !== undefined));
}

/** A token as the provider would issue it, signed RS256 by `signer` and naming its kid. */
function mint(overrides: JWTPayload = {}, signer: SigningKey = published): Promise<string> {
  return new SignJWT(claims(overrides)).setProtectedHeader({ alg: 'RS256', kid: signer.kid }).sign(signer.privateKey);
}

const encodeJson = (value: object) => base64url.encode(JSON.stringify(value));

function listen(server: Server): Promise<number> {
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)));
}

let published: SigningKey;
let rotated: SigningKey;
let stranger: SigningKey;
/** What the JWKS endpoint serves at the moment; tests that change it put it back. */
let served: JWK[] = [];
let jwksRequests = 0;
let jwksUrl: string;

const jwks = createServer((request, response) => {
  if (request.url !== '/jwks') {
    response.writeHead(500).end();
    return;
  }
  jwksRequests++;
  response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: served }));
});

const verifierFor = (overrides: Partial<JwtSettings> = {}) =>
  createJwtVerifier({ jwksUrl, issuer: ISSUER, audience: AUDIENCE, ...overrides });

before(async () => {
  [published, rotated, stranger] = await Promise.all([signingKey('key-1'), signingKey('key-2'), signingKey('key-x')]);
  served = [published.jwk];
  jwksUrl = `http://127.0.0.1:${await listen(jwks)}/jwks`;
});

after(() => {
  jwks.closeAllConnections();
  jwks.close();
});

describe('JWT verification: accepted tokens', () => {
  test('a valid token gives `jwt:<sub>` and those of its `scope` values that are ours', async () => {
    const token = await mint({ sub: 'alice', scope: 'openid findby share:write admin' });
    assert.deepEqual(await verifierFor().verify(token), { tokenName: 'jwt:alice', scopes: ['findby', 'share:write'] });
  });

  test('`scp` names scopes as an array or as a space-separated string', async () => {
    const verifier = verifierFor();
    const fromArray = await verifier.verify(await mint({ scp: ['collateral:read', 'email', 'corptransfer:read'] }));
    const fromString = await verifier.verify(await mint({ scp: 'collateral:read email' }));
    assert.deepEqual(fromArray?.scopes, ['corptransfer:read', 'collateral:read']);
    assert.deepEqual(fromString?.scopes, ['collateral:read']);
  });

  test('a token without any scope of ours is valid but has no scopes', async () => {
    assert.deepEqual(await verifierFor().verify(await mint({ scope: 'openid profile' })), {
      tokenName: 'jwt:alice',
      scopes: [],
    });
  });

  test('a token expired within the clock tolerance is accepted', async () => {
    const token = await mint({ exp: nowSeconds() - 10 });
    assert.equal((await verifierFor({ clockToleranceSeconds: 30 }).verify(token))?.tokenName, 'jwt:alice');
  });

  test('the JWKS is fetched once and its keys are reused', async () => {
    const verifier = verifierFor();
    const before = jwksRequests;
    for (const sub of ['alice', 'bob', 'carol']) assert.ok(await verifier.verify(await mint({ sub })));
    assert.equal(jwksRequests - before, 1);
  });

  test('after key rotation a token with the new kid verifies (once the refetch cooldown has passed)', async (t) => {
    t.mock.timers.enable({ apis: ['Date'], now: Date.now() });
    const verifier = verifierFor();
    assert.ok(await verifier.verify(await mint()));
    served = [published.jwk, rotated.jwk];
    try {
      const token = await mint({ sub: 'bob' }, rotated);
      // An unknown kid refetches at most every 30 s, so a flood of made-up kids cannot hammer the provider.
      assert.equal(await verifier.verify(token), undefined);
      t.mock.timers.tick(31_000);
      assert.equal((await verifier.verify(token))?.tokenName, 'jwt:bob');
    } finally {
      served = [published.jwk];
    }
  });
});

describe('JWT verification: rejected tokens', () => {
  const rejected: Record<string, () => Promise<string>> = {
    'a token from another issuer': () => mint({ iss: 'https://other-idp.test/' }),
    'a token for another audience': () => mint({ aud: 'someone-else' }),
    'a token expired beyond the clock tolerance': () => mint({ exp: nowSeconds() - 60 }),
    'a token whose nbf is in the future': () => mint({ nbf: nowSeconds() + 120 }),
    'a token without exp': () => mint({ exp: undefined }),
    'a token without sub': () => mint({ sub: undefined }),
    'a token with an empty sub': () => mint({ sub: '' }),
    'a token signed by a key not in the JWKS (naming a published kid)': () =>
      mint({}, { ...stranger, kid: published.kid }),
    'a token naming a kid the JWKS does not have': () => mint({}, stranger),
    'an unsecured token (alg: none)': async () => `${encodeJson({ alg: 'none', typ: 'JWT' })}.${encodeJson(claims())}.`,
    'an HS256 token keyed with the public key (algorithm confusion)': async () =>
      new SignJWT(claims())
        .setProtectedHeader({ alg: 'HS256', kid: published.kid })
        .sign(new TextEncoder().encode(await exportSPKI(published.publicKey))),
    'a token whose payload was changed after signing': async () => {
      const [header, , signature] = (await mint({ scope: 'findby' })).split('.');
      return `${header}.${encodeJson(claims({ scope: 'findby share:write' }))}.${signature}`;
    },
    'a malformed token': async () => 'eyJhbGciOiJSUzI1NiJ9.not-json.c2ln',
    'an opaque API token': async () => 'cg_3q2-7wAAAAB',
  };

  for (const [behaviour, token] of Object.entries(rejected)) {
    test(`${behaviour} is rejected`, async () => {
      assert.equal(await verifierFor().verify(await token()), undefined);
    });
  }

  test('a token whose algorithm is not in the configured list is rejected', async () => {
    assert.equal(await verifierFor({ algorithms: ['ES256'] }).verify(await mint()), undefined);
  });

  test('a JWKS server that is down rejects the token instead of throwing', async () => {
    const down = createServer();
    const port = await listen(down);
    await new Promise((resolve) => down.close(resolve));
    assert.equal(await verifierFor({ jwksUrl: `http://127.0.0.1:${port}/jwks` }).verify(await mint()), undefined);
  });

  test('a JWKS endpoint answering an error rejects the token', async () => {
    assert.equal(await verifierFor({ jwksUrl: jwksUrl.replace('/jwks', '/missing') }).verify(await mint()), undefined);
  });
});

describe('looksLikeJwt', () => {
  test('is true for three base64url segments', async () => {
    assert.equal(looksLikeJwt(await mint()), true);
  });

  test('is false for opaque API tokens and other strings', () => {
    for (const token of ['cg_3q2-7wAAAAB', 'cg_a.b', '', 'a.b', 'a.b.c.d', 'a b.c.d', 'a+b.c.d']) {
      assert.equal(looksLikeJwt(token), false, token);
    }
  });
});

describe('JWT settings', () => {
  const env = {
    COREGATE_JWT_JWKS_URL: 'https://idp.test/.well-known/jwks.json',
    COREGATE_JWT_ISSUER: ISSUER,
    COREGATE_JWT_AUDIENCE: AUDIENCE,
  };

  test('are absent when COREGATE_JWT_JWKS_URL is unset or empty', () => {
    assert.equal(jwtSettingsFromEnv({}), undefined);
    assert.equal(jwtSettingsFromEnv({ COREGATE_JWT_JWKS_URL: '' }), undefined);
  });

  test('are read from the environment, with the algorithms as a comma list', () => {
    assert.deepEqual(jwtSettingsFromEnv({ ...env, COREGATE_JWT_ALGORITHMS: 'ES256, RS256' }), {
      jwksUrl: env.COREGATE_JWT_JWKS_URL,
      issuer: ISSUER,
      audience: AUDIENCE,
      algorithms: ['ES256', 'RS256'],
    });
  });

  const invalid: Record<string, [NodeJS.ProcessEnv, RegExp]> = {
    'a missing issuer': [{ ...env, COREGATE_JWT_ISSUER: undefined }, /COREGATE_JWT_ISSUER must be set/],
    'a missing audience': [{ ...env, COREGATE_JWT_AUDIENCE: '' }, /COREGATE_JWT_AUDIENCE must be set/],
    'an HMAC algorithm': [{ ...env, COREGATE_JWT_ALGORITHMS: 'RS256,HS256' }, /"HS256" is not allowed/],
    'the none algorithm': [{ ...env, COREGATE_JWT_ALGORITHMS: 'none' }, /"none" is not allowed/],
    'a plain-http JWKS URL off loopback': [
      { ...env, COREGATE_JWT_JWKS_URL: 'http://idp.test/jwks' },
      /COREGATE_JWT_JWKS_URL must be an https URL/,
    ],
    'a JWKS URL that is not a URL': [
      { ...env, COREGATE_JWT_JWKS_URL: 'idp.test' },
      /COREGATE_JWT_JWKS_URL must be a URL/,
    ],
  };

  for (const [problem, [badEnv, message]] of Object.entries(invalid)) {
    test(`reading them fails clearly on ${problem}`, () => {
      assert.throws(() => jwtSettingsFromEnv(badEnv), message);
    });
  }

  test('a verifier cannot be created with a disallowed algorithm', () => {
    assert.throws(() => verifierFor({ algorithms: ['HS256'] }), /algorithms: "HS256" is not allowed/);
  });
});
