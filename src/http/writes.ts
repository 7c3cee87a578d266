/**
 * How a write operation runs: one transaction for the whole request (nothing half-applied), with an
 * optional `Idempotency-Key` reserved inside that same transaction, so a retry returns the first
 * response instead of applying the change again.
 */
import { createHash } from 'node:crypto';
import type { FastifyReply } from 'fastify';
import type { Db } from '../database/database.js';
import { idempotencyKeys } from '../store/idempotency.js';
import { canonicalJson } from '../contract/canonical-json.js';
import { Problem, validationFailed } from '../contract/problems.js';

const KEY = /^[\x21-\x7e]{1,255}$/;

/** What makes two requests "the same": the route and the body without its credentials. */
function requestHash(path: string, body: Record<string, unknown>): string {
  const { Credentials: _credentials, ...rest } = body;
  return createHash('sha256')
    .update(`${path}\n${canonicalJson(rest)}`)
    .digest('hex');
}

function idempotencyKeyOf(header: string | string[] | undefined): string | undefined {
  if (header === undefined) return undefined;
  if (typeof header !== 'string' || !KEY.test(header)) {
    throw validationFailed([
      { pointer: '', detail: 'the Idempotency-Key header must be 1 to 255 visible ASCII characters' },
    ]);
  }
  return header;
}

export interface WriteRequest {
  readonly db: Db;
  readonly path: string;
  readonly tokenName: string;
  /** How long a key is remembered (`config.idempotencyRetentionHours`). */
  readonly retentionHours: number;
  readonly idempotencyKeyHeader: string | string[] | undefined;
  readonly body: Record<string, unknown>;
  readonly reply: FastifyReply;
  /** Writes the call's audit event in the transaction, so an acknowledged write always has one. */
  readonly audit: (trx: Db) => Promise<void>;
}

/** Keys are per caller; a caller name longer than the column (a long JWT subject) is kept as its digest. */
const OWNER_MAX = 64;
function keyOwner(tokenName: string): string {
  return tokenName.length <= OWNER_MAX
    ? tokenName
    : `sha256:${createHash('sha256').update(tokenName).digest('base64url')}`;
}

export async function runWrite(request: WriteRequest, apply: (trx: Db) => Promise<unknown>): Promise<unknown> {
  const key = idempotencyKeyOf(request.idempotencyKeyHeader);
  const owner = keyOwner(request.tokenName);
  return request.db.transaction().execute(async (trx) => {
    if (key !== undefined) {
      const reservation = await idempotencyKeys.reserve(
        trx,
        owner,
        key,
        requestHash(request.path, request.body),
        request.retentionHours,
      );
      if (reservation.kind === 'conflict') {
        throw new Problem(422, 'IDEMPOTENCY_KEY_REUSED', 'This Idempotency-Key was used with a different request');
      }
      if (reservation.kind === 'replay') {
        request.reply.header('idempotent-replayed', 'true');
        await request.audit(trx);
        return reservation.response;
      }
    }
    const result = await apply(trx);
    if (key !== undefined) await idempotencyKeys.complete(trx, owner, key, 200, result);
    await request.audit(trx);
    return result;
  });
}
