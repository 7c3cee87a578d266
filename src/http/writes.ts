/**
 * How a write operation runs. On coregate's own store: one transaction for the whole request (nothing
 * half-applied), with an optional `Idempotency-Key` reserved inside that same transaction, so a retry
 * returns the first response instead of applying the change again. In gateway mode, where the core applies
 * the change: the key's reservation is committed first, the core is called with no transaction open, and
 * the answer and the audit event are committed together after it (`runKeyedCoreWrite`), so a slow core
 * holds no database connection.
 */
import { createHash } from 'node:crypto';
import type { FastifyReply } from 'fastify';
import type { CompiledQuery } from 'kysely';
import { idempotencyKeys, type Reservation, type ReservationStamp } from '../store/idempotency.js';
import type { KeyWrites } from '../store/key-writes.js';
import { isConnectionFailure, type Db } from '../database/database.js';
import { canonicalJson } from '../contract/canonical-json.js';
import { databaseUnavailable, Problem, validationFailed, type ProblemCode } from '../contract/problems.js';
import { mayHaveBeenApplied } from '../core/index.js';

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
  /**
   * Writes the call's audit event in the transaction, so an acknowledged write always has one; given a
   * change as a statement (`prior`), in one statement with it.
   */
  readonly audit: (trx: Db, prior?: CompiledQuery) => Promise<void>;
}

/** Keys are per caller; a caller name longer than the column (a long JWT subject) is kept as its digest. */
const OWNER_MAX = 64;
function keyOwner(tokenName: string): string {
  return tokenName.length <= OWNER_MAX
    ? tokenName
    : `sha256:${createHash('sha256').update(tokenName).digest('base64url')}`;
}

/** What a key's reservation means for the call, whatever the mode: go on, replay the first answer, or refuse. */
async function settle(
  request: WriteRequest,
  reservation: Reservation,
  audit: () => Promise<void>,
): Promise<{ readonly replay: unknown } | undefined> {
  if (reservation.kind === 'conflict') {
    throw new Problem(422, 'IDEMPOTENCY_KEY_REUSED', 'This Idempotency-Key was used with a different request');
  }
  if (reservation.kind === 'pending') {
    request.reply.header('retry-after', String(IN_PROGRESS_RETRY_AFTER_SECONDS));
    throw new Problem(
      409,
      'IDEMPOTENCY_KEY_IN_PROGRESS',
      'A request with this Idempotency-Key is still being applied; retry it to get its answer',
    );
  }
  if (reservation.kind === 'replay') {
    request.reply.header('idempotent-replayed', 'true');
    // A first attempt whose outcome was unknown is answered the same way again, never sent again.
    if (reservation.status !== null && reservation.status !== 200) throw storedProblem(reservation);
    await audit();
    return { replay: reservation.response };
  }
  return undefined;
}

/** The problem a key's first attempt was answered with, as `complete` stored it. */
function storedProblem(reservation: { readonly status: number | null; readonly response: unknown }): Problem {
  const { code, detail } = (reservation.response ?? {}) as { code?: ProblemCode; detail?: string };
  return new Problem(reservation.status ?? 500, code ?? 'INTERNAL', detail ?? '');
}

/** What a retry of a write whose first attempt died with its key is told: it may have been applied. */
const ABANDONED_WRITE =
  'The first attempt with this Idempotency-Key ended without an answer; the update may have been applied: ' +
  'read the record, then send it again with a new key if it was not';

/** Seconds a retry is told to wait while the first attempt with its key is still at the core. */
const IN_PROGRESS_RETRY_AFTER_SECONDS = 1;

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
      const settled = await settle(request, reservation, () => request.audit(trx));
      if (settled) return settled.replay;
    }
    const result = await apply(trx);
    if (key !== undefined) await idempotencyKeys.complete(trx, owner, key, 200, result);
    await request.audit(trx);
    return result;
  });
}

/**
 * A keyed write answered by a core over the network (gateway mode): the reservation is committed before
 * the call, so a retry meanwhile is told 409 `IDEMPOTENCY_KEY_IN_PROGRESS` rather than waiting on a
 * database lock; the answer and the audit event are committed together after it; a failed call releases
 * the key, so a retry runs afresh. A reservation older than `abandonedAfterMs` (its holder died mid-call)
 * is taken over. A change to the key the database cannot take after the call (it went away meanwhile) is
 * kept by `keyWrites` and written once it is back; the caller is told what the call met.
 */
export async function runKeyedCoreWrite(
  request: WriteRequest & { readonly abandonedAfterMs: number; readonly keyWrites: KeyWrites },
  call: () => Promise<unknown>,
): Promise<unknown> {
  const key = idempotencyKeyOf(request.idempotencyKeyHeader);
  if (key === undefined) throw new Error('runKeyedCoreWrite needs an Idempotency-Key');
  const owner = keyOwner(request.tokenName);
  const { db, keyWrites } = request;
  const reservation = await idempotencyKeys.reserve(
    db,
    owner,
    key,
    requestHash(request.path, request.body),
    request.retentionHours,
    request.abandonedAfterMs,
  );
  /** Keeps `problem` as the answer of the reservation held, and throws it. */
  const settleUnsure = async (stamp: ReservationStamp, problem: Problem): Promise<never> => {
    const answer = { code: problem.code, detail: problem.detail };
    await keyWrites.run(owner, key, () => idempotencyKeys.complete(db, owner, key, problem.status, answer, stamp));
    throw problem;
  };
  if (reservation.kind === 'abandoned') {
    await settleUnsure(reservation.stamp, new Problem(504, 'CORE_TIMEOUT', ABANDONED_WRITE));
  }
  const settled = await settle(request, reservation, () => request.audit(db));
  if (settled) return settled.replay;
  const { stamp } = reservation as Extract<Reservation, { kind: 'reserved' }>;
  let result: unknown;
  try {
    result = await call();
  } catch (error) {
    // Sent and unanswered, the write may have been applied: its key keeps that answer, so no retry with
    // it sends the write twice. Any other failure frees the key, and a retry runs afresh.
    if (mayHaveBeenApplied(error)) await settleUnsure(stamp, error as Problem);
    await keyWrites.run(owner, key, () => idempotencyKeys.release(db, owner, key, stamp));
    throw error;
  }
  // The key's answer and the audit event in one statement: they commit together, in one round trip. When
  // the database is away, the answer is kept for later and the caller told so (503, audited as such, with
  // the core's outcome); a retry with the key replays the answer once it is written.
  const completion = idempotencyKeys.completion(db, owner, key, 200, result, stamp);
  try {
    await request.audit(db, completion);
  } catch (error) {
    if (!isConnectionFailure(error)) throw error;
    keyWrites.keep(owner, key, () => db.executeQuery(completion).then(() => undefined), error);
    throw answerKept();
  }
  return result;
}

/** What a caller is told when the core applied its update but the database could not keep the answer yet. */
function answerKept(): Problem {
  return new Problem(
    503,
    'UNAVAILABLE',
    'The core applied the update, but the database is not reachable to record its answer: retry with the same ' +
      'Idempotency-Key shortly to get it',
    undefined,
    databaseUnavailable().headers,
  );
}
