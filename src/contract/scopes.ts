/**
 * API token scopes: what a bearer token may call. Each operation names the scope it needs.
 */

/** @example SCOPES.includes('findby') // true */
export const SCOPES = [
  'findby',
  'corptransfer:read',
  'share:read',
  'share:write',
  'collateral:read',
  'store:reset',
  'admin',
] as const;
export type Scope = (typeof SCOPES)[number];

/**
 * Scopes given only when asked for (and to the demo token): `store:reset` puts a demo store's records back to
 * the seeded dataset (`POST /admin/reset`); `admin` administers the running service (the admin API: tokens,
 * users, the audit trail, export, import and reset).
 */
export const ON_REQUEST_SCOPES: readonly Scope[] = ['store:reset', 'admin'];

/** What a token gets when none are named: every scope but those given only when asked for. */
export const DEFAULT_SCOPES: readonly Scope[] = SCOPES.filter((scope) => !ON_REQUEST_SCOPES.includes(scope));

/**
 * Scopes an identity provider's JWT never grants, whatever its claims say: identity providers hand out an
 * `admin` scope for their own purposes, so the admin API takes coregate's own API tokens only.
 */
export const API_TOKEN_ONLY_SCOPES: readonly Scope[] = ['admin'];
