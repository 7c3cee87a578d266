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
] as const;
export type Scope = (typeof SCOPES)[number];

/**
 * What a token gets when none are named: every scope but `store:reset`, which may put a demo store's records
 * back to the seeded dataset (`POST /admin/reset`) and is given only when asked for (and to the demo token).
 */
export const DEFAULT_SCOPES: readonly Scope[] = SCOPES.filter((scope) => scope !== 'store:reset');
