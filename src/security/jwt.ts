/**
 * Bearer JWTs from an external identity provider (DESIGN: "accept JWTs … by JWKS URL (`jose`, explicit
 * algorithms, issuer, audience)"). Keys come from the provider's JWKS; a token is accepted only when its
 * signature, algorithm, issuer, audience and lifetime all check out. Scopes are the token's OAuth scopes
 * that name one of ours.
 */
import { createRemoteJWKSet, errors, jwtVerify, type JWTPayload, type JWTVerifyGetKey } from 'jose';
import { API_TOKEN_ONLY_SCOPES, SCOPES, type Scope } from '../contract/scopes.js';

export interface JwtSettings {
  /** The provider's JWKS: `https://…`, or plain `http://` on a loopback host only (tests). */
  readonly jwksUrl: string;
  readonly issuer: string;
  readonly audience: string;
  /** Accepted algorithms; default ['RS256', 'ES256', 'EdDSA']. Never 'none', never HS*. */
  readonly algorithms?: readonly string[];
  /** Allowed clock skew in seconds (default 30). */
  readonly clockToleranceSeconds?: number;
}

export interface JwtIdentity {
  /** `jwt:<sub>`: the prefix keeps JWT subjects apart from the names of our own API tokens. */
  readonly tokenName: string;
  readonly scopes: readonly Scope[];
}

export interface JwtVerifier {
  /** The identity of a valid token; undefined for any invalid token or when the provider's keys cannot be had. */
  verify(token: string): Promise<JwtIdentity | undefined>;
}

/**
 * Asymmetric algorithms only: with HS* the "secret" would be shared with the provider, and a verifier that
 * accepts HS* beside RS* can be fooled into using a public key as an HMAC secret (algorithm confusion).
 */
const ALLOWED_ALGORITHMS = [
  'RS256',
  'RS384',
  'RS512',
  'PS256',
  'PS384',
  'PS512',
  'ES256',
  'ES384',
  'ES512',
  'EdDSA',
  'Ed25519',
] as const;
const DEFAULT_ALGORITHMS = ['RS256', 'ES256', 'EdDSA'] as const;
const DEFAULT_CLOCK_TOLERANCE_SECONDS = 30;
const LOOPBACK_HOSTS = new Set(['127.0.0.1', 'localhost', '[::1]']);

/** jose's defaults, spelled out so the reader sees how often the provider is asked for its keys. */
const JWKS_OPTIONS = {
  timeoutDuration: 5_000,
  /** An unknown `kid` refetches the JWKS (key rotation), but at most this often: random kids cannot flood the provider. */
  cooldownDuration: 30_000,
  cacheMaxAge: 600_000,
} as const;

/** Header and payload, then a signature that is empty only in an unsecured (`alg: none`) token. */
const JWT_SHAPE = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/;

type SettingNames = Readonly<Record<keyof JwtSettings, string>>;
const FIELD_NAMES: SettingNames = {
  jwksUrl: 'jwksUrl',
  issuer: 'issuer',
  audience: 'audience',
  algorithms: 'algorithms',
  clockToleranceSeconds: 'clockToleranceSeconds',
};
const ENV_NAMES: SettingNames = {
  ...FIELD_NAMES,
  jwksUrl: 'COREGATE_JWT_JWKS_URL',
  issuer: 'COREGATE_JWT_ISSUER',
  audience: 'COREGATE_JWT_AUDIENCE',
  algorithms: 'COREGATE_JWT_ALGORITHMS',
};

/** Failing to fetch or import the provider's keys: the token cannot be verified, so it is not accepted. */
class KeySetUnavailable extends Error {}

/**
 * Reads JwtSettings from COREGATE_JWT_JWKS_URL, COREGATE_JWT_ISSUER, COREGATE_JWT_AUDIENCE and
 * COREGATE_JWT_ALGORITHMS (comma list). Undefined when COREGATE_JWT_JWKS_URL is unset or empty; throws when
 * it is set but the issuer or audience is missing, the URL is not https, or an algorithm is not allowed.
 *
 * @example
 * jwtSettingsFromEnv({
 *   COREGATE_JWT_JWKS_URL: 'https://idp.example.org/.well-known/jwks.json',
 *   COREGATE_JWT_ISSUER: 'https://idp.example.org/',
 *   COREGATE_JWT_AUDIENCE: 'coregate',
 * }); // { jwksUrl: 'https://idp…', issuer: 'https://idp.example.org/', audience: 'coregate' }
 * jwtSettingsFromEnv({}); // undefined: JWTs are not accepted
 */
export function jwtSettingsFromEnv(env: NodeJS.ProcessEnv = process.env): JwtSettings | undefined {
  const jwksUrl = env.COREGATE_JWT_JWKS_URL?.trim();
  if (!jwksUrl) return undefined;
  const algorithms = env.COREGATE_JWT_ALGORITHMS?.split(',')
    .map((alg) => alg.trim())
    .filter((alg) => alg !== '');
  const settings: JwtSettings = {
    jwksUrl,
    issuer: env.COREGATE_JWT_ISSUER?.trim() ?? '',
    audience: env.COREGATE_JWT_AUDIENCE?.trim() ?? '',
    ...(algorithms && algorithms.length > 0 ? { algorithms } : {}),
  };
  assertValidSettings(settings, ENV_NAMES);
  return settings;
}

/**
 * A verifier for one provider. Throws at once on invalid settings (a configuration error, not a bad token).
 * Keys are fetched on first use, cached for 10 minutes and refetched when a token names an unknown `kid`.
 *
 * @example
 * const verifier = createJwtVerifier({ jwksUrl, issuer: 'https://idp.example.org/', audience: 'coregate' });
 * await verifier.verify(token); // { tokenName: 'jwt:alice', scopes: ['findby'] } or undefined
 */
export function createJwtVerifier(settings: JwtSettings): JwtVerifier {
  assertValidSettings(settings, FIELD_NAMES);
  const keySet = createRemoteJWKSet(new URL(settings.jwksUrl), JWKS_OPTIONS);
  // Errors of jose are about the token or the key set; anything else here is the fetch failing (provider down).
  const getKey: JWTVerifyGetKey = async (header, token) => {
    try {
      return await keySet(header, token);
    } catch (error) {
      if (error instanceof errors.JOSEError) throw error;
      throw new KeySetUnavailable('The JWKS could not be fetched', { cause: error });
    }
  };
  const options = {
    algorithms: [...(settings.algorithms ?? DEFAULT_ALGORITHMS)],
    issuer: settings.issuer,
    audience: settings.audience,
    clockTolerance: settings.clockToleranceSeconds ?? DEFAULT_CLOCK_TOLERANCE_SECONDS,
    // jose checks exp only when present: a token without it would never expire.
    requiredClaims: ['exp', 'sub'],
  };
  return {
    async verify(token) {
      let payload: JWTPayload;
      try {
        ({ payload } = await jwtVerify(token, getKey, options));
      } catch (error) {
        if (error instanceof errors.JOSEError || error instanceof KeySetUnavailable) return undefined;
        throw error;
      }
      // requiredClaims checks presence only.
      if (typeof payload.sub !== 'string' || payload.sub === '') return undefined;
      return { tokenName: `jwt:${payload.sub}`, scopes: scopesOf(payload) };
    },
  };
}

/**
 * Cheap syntactic check, used to tell a JWT from an opaque API token (`cg_…`, which has no dots).
 * It says nothing about validity.
 *
 * @example
 * looksLikeJwt('eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJl'); // true
 * looksLikeJwt('cg_3q2-7wAAAAB'); // false
 */
export function looksLikeJwt(token: string): boolean {
  return JWT_SHAPE.test(token);
}

/**
 * Our scopes named by `scope` (OAuth 2: space-separated) or `scp` (array or string); others are ignored, and
 * so is `admin`, which only coregate's own API tokens carry (contract/scopes.ts).
 */
function scopesOf(payload: JWTPayload): Scope[] {
  const granted = new Set([...claimValues(payload.scope), ...claimValues(payload.scp)]);
  return SCOPES.filter((scope) => granted.has(scope) && !API_TOKEN_ONLY_SCOPES.includes(scope));
}

function claimValues(claim: unknown): string[] {
  if (typeof claim === 'string') return claim.split(' ');
  if (Array.isArray(claim)) return claim.filter((value): value is string => typeof value === 'string');
  return [];
}

function assertValidSettings(settings: JwtSettings, names: SettingNames): void {
  let url: URL;
  try {
    url = new URL(settings.jwksUrl);
  } catch {
    throw new Error(`${names.jwksUrl} must be a URL, got "${settings.jwksUrl}"`);
  }
  // Keys fetched over plain HTTP could be swapped in transit; loopback is allowed for tests.
  if (!(url.protocol === 'https:' || (url.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname)))) {
    throw new Error(`${names.jwksUrl} must be an https URL, got "${settings.jwksUrl}"`);
  }
  if (!settings.issuer) throw new Error(`${names.issuer} must be set when ${names.jwksUrl} is set`);
  if (!settings.audience) throw new Error(`${names.audience} must be set when ${names.jwksUrl} is set`);
  const algorithms = settings.algorithms ?? DEFAULT_ALGORITHMS;
  if (algorithms.length === 0) throw new Error(`${names.algorithms} must name at least one algorithm`);
  for (const alg of algorithms) {
    if (!(ALLOWED_ALGORITHMS as readonly string[]).includes(alg)) {
      throw new Error(`${names.algorithms}: "${alg}" is not allowed; use one of ${ALLOWED_ALGORITHMS.join(', ')}`);
    }
  }
  const tolerance = settings.clockToleranceSeconds;
  if (tolerance !== undefined && !(Number.isFinite(tolerance) && tolerance >= 0)) {
    throw new Error(`${names.clockToleranceSeconds} must be a non-negative number of seconds, got ${tolerance}`);
  }
}
