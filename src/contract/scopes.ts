/**
 * API token scopes: what a bearer token may call. Each operation names the scope it needs.
 */

/** @example SCOPES.includes('findby') // true */
export const SCOPES = ['findby', 'corptransfer:read', 'share:read', 'share:write', 'collateral:read'] as const;
export type Scope = (typeof SCOPES)[number];
