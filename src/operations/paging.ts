/**
 * Keyset paging (DESIGN: "Lists, paging, search"). A page is the next N records after a position in
 * locator order, so page N costs what page 1 costs. The `Token` handed out with a page is opaque and
 * HMAC-signed; it binds the operation, the parent keys, the filter and the selection, so it cannot be
 * altered or replayed against another request.
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { Type } from 'typebox';
import { INT4_MAX } from '../catalog/index.js';
import { canonicalJson } from '../contract/canonical-json.js';
import { TEXT_PATTERN } from '../contract/envelope.js';
import { Problem } from '../contract/problems.js';
import type { Secrets } from '../crypto/secrets.js';
import { recordTree, type Position, type ReadPlan } from '../store/record-tree.js';
import type { Row, WireRecord } from '../store/records.js';
import type { OperationContext } from './types.js';

export const PagingRequestContextSchema = Type.Object(
  {
    NumberOfRecordsToReturn: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: INT4_MAX,
        description: 'Page size; values above the configured maximum are capped to it',
      }),
    ),
    NumberOfRecordsToSkip: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: INT4_MAX,
        description: 'Records to skip after the token position (or the start)',
      }),
    ),
    Token: Type.Optional(Type.String({ pattern: TEXT_PATTERN, description: 'The Token of the previous page' })),
  },
  { $id: 'PagingRequestContext', additionalProperties: false },
);

export interface PagingRequest {
  NumberOfRecordsToReturn?: number;
  NumberOfRecordsToSkip?: number;
  Token?: string;
}

/** What a token is bound to: everything that shapes the sequence of records being paged. */
export interface PagingScope {
  readonly operation: string;
  readonly parentKey: readonly (string | number)[];
  readonly filter: unknown;
  readonly selection: unknown;
}

interface TokenPayload {
  /** Digest of the scope. */
  readonly s: string;
  /** Position of the last record returned. */
  readonly p: Position;
}

function scopeDigest(scope: PagingScope): string {
  return createHash('sha256').update(canonicalJson(scope)).digest('base64url').slice(0, 22);
}

function invalidToken(detail: string): Problem {
  return new Problem(400, 'INVALID_PAGING_TOKEN', detail, [{ pointer: '/PagingRequestContext/Token', detail }]);
}

export class PagingTokens {
  constructor(private readonly key: Buffer) {}

  private sign(body: string): string {
    return createHmac('sha256', this.key).update(body).digest('base64url').slice(0, 32);
  }

  /** A token that continues after `position` within `scope`. */
  issue(scope: PagingScope, position: Position): string {
    const body = Buffer.from(JSON.stringify({ s: scopeDigest(scope), p: position } satisfies TokenPayload)).toString(
      'base64url',
    );
    return `${body}.${this.sign(body)}`;
  }

  /** The position a token continues after; throws 400 INVALID_PAGING_TOKEN if forged or issued for another scope. */
  position(token: string, scope: PagingScope): Position {
    const [body, signature, extra] = token.split('.');
    if (!body || !signature || extra !== undefined) throw invalidToken('The paging token is malformed');
    const expected = Buffer.from(this.sign(body));
    const given = Buffer.from(signature);
    if (expected.length !== given.length || !timingSafeEqual(expected, given)) {
      throw invalidToken('The paging token was not issued by this service or has been altered');
    }
    const payload = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as TokenPayload;
    if (payload.s !== scopeDigest(scope)) {
      throw invalidToken('The paging token belongs to another operation, parent, filter or selection');
    }
    return payload.p;
  }
}

const pagingTokens = new WeakMap<Secrets, PagingTokens>();

/** The paging tokens of a service: one signing key per master secret. */
function tokensOf(secrets: Secrets): PagingTokens {
  let tokens = pagingTokens.get(secrets);
  if (!tokens) pagingTokens.set(secrets, (tokens = new PagingTokens(secrets.key('paging-token'))));
  return tokens;
}

/** A page of records and the Token of the next one. */
export interface RecordsPage {
  readonly records: WireRecord[];
  /** Empty on the last page (spec). */
  readonly token: string;
}

/**
 * One page of the records under `parentKey` that `plan` reads, from a request's `PagingRequestContext`:
 * its size capped to the configured maximum, continuing after its `Token` (checked against `scope`).
 * @example await readPage(context, plan, { collateral_number: '7000000011' }, scope, body.PagingRequestContext)
 */
export async function readPage(
  context: OperationContext,
  plan: ReadPlan,
  parentKey: Row,
  scope: PagingScope,
  paging: PagingRequest = {},
): Promise<RecordsPage> {
  const { config } = context;
  const size = Math.min(paging.NumberOfRecordsToReturn ?? config.defaultPageSize, config.pageMaximum);
  const tokens = tokensOf(context.secrets);
  const after = paging.Token ? tokens.position(paging.Token, scope) : undefined;
  const page = await recordTree.list(
    context.db,
    plan,
    parentKey,
    { limit: size, after, offset: paging.NumberOfRecordsToSkip },
    config.listMaximum,
  );
  return { records: page.records, token: page.more ? tokens.issue(scope, page.lastPosition!) : '' };
}
