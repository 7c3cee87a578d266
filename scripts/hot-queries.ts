/**
 * The hot queries whose SQL is committed in src/generated/sql/<module>.sql (one file per store module): each FindBy lookup, the corporate
 * transfer read, the share updates, the collateral tree read, a later page of a paged child list, a
 * search, and the fixed-table queries of every call (bearer token, credentials, idempotency, audit).
 * Each runs the real operation (or store function) on a capturing database (src/store/query-snapshot.ts),
 * answered with rows where the code needs some to go on, so the snapshot is what the service sends.
 */
import { loadConfig } from '../src/config.js';
import { secretsFromMaster } from '../src/crypto/secrets.js';
import { OPERATIONS } from '../src/operations/index.js';
import type { OperationContext } from '../src/operations/types.js';
import { lockouts, sessions, tokens } from '../src/store/access.js';
import { auditEvents } from '../src/store/audit.js';
import type { Db } from '../src/database/database.js';
import { faultRules } from '../src/store/fault-rules.js';
import { idempotencyKeys } from '../src/store/idempotency.js';
import { lookups } from '../src/store/lookups.js';
import { capturingDatabase, type HotQuery } from '../src/store/query-snapshot.js';
import type { Row } from '../src/store/records.js';

const secrets = secretsFromMaster(Buffer.alloc(32, 7));
const config = loadConfig({});
const adminCredentials = { AdministrativeCredentials: { Password: 'not checked here' } };

/**
 * Runs an operation's handler on `db` as the administrator (the route's checks are not part of its SQL).
 * The share updates run on the 2022.01 family (their bodies name `<Record>UpdatableFields`); every other
 * hot operation has one family.
 */
function call(db: Db, name: string, body: Record<string, unknown>): Promise<unknown> {
  const operation = OPERATIONS.find((op) => op.name === name && (op.family === 'P2' || !name.startsWith('update')));
  if (!operation) throw new Error(`no operation ${name}`);
  const context: OperationContext = {
    db,
    secrets,
    config,
    caller: { tokenName: 'snapshot', userNumber: 0, kinds: ['AdministrativeCredentials'] },
  };
  return operation.handle(context, { Credentials: adminCredentials, ...body });
}

/** An operation's request as a hot query of a store module. */
const request = (
  module: string,
  name: string,
  body: Record<string, unknown>,
  answers?: readonly (readonly Row[])[],
): HotQuery => ({
  name,
  module,
  run: (db) => call(db, name, body),
  answers,
});

/**
 * A lookup and a read of a collateral record first read their generation (store/answer-cache.ts), then,
 * with nothing in memory, their tables.
 */
const GENERATION = [{ generation: '0|2024-01-31' }];
const LOOKUP_GENERATION = [GENERATION];

const COLLATERAL = '7000000001';
/** Rows of a list read: their positions (the reader's bookkeeping column). */
const positions = (...list: number[]): Row[] => list.map((position) => ({ __position: position }));

/** The Token of the first page of getCollateralDocumentPagedList (two records and more): the SQL of a later page needs one. */
async function secondPageToken(): Promise<string> {
  const { db } = capturingDatabase([positions(1, 2, 3), []]);
  const page = (await call(db, 'getCollateralDocumentPagedList', {
    CollateralNumber: COLLATERAL,
    PagingRequestContext: { NumberOfRecordsToReturn: 2 },
  })) as { Token: string };
  return page.Token;
}

export const HOT_QUERIES: readonly HotQuery[] = [
  request('lookups', 'findByActiveCard', { CardNumber: '4000000000000002' }, LOOKUP_GENERATION),
  request('lookups', 'findByAnyCard', { CardNumber: '4000000000000002' }, LOOKUP_GENERATION),
  request('lookups', 'findByHomeUser', { HomeBankingUserName: 'jsmith42' }, LOOKUP_GENERATION),
  request('lookups', 'findByMICR', { MICR: '123456789012', Draft: '1' }, LOOKUP_GENERATION),
  request('lookups', 'findByLookup', { LookupType: 5, LookupNumber: 'EMP-100' }, LOOKUP_GENERATION),
  request('lookups', 'findBySSN', { SSN: '123-45-6789' }, LOOKUP_GENERATION),
  request('lookups', 'findByShortName', { ShortName: 'SMITH J' }, LOOKUP_GENERATION),
  {
    name: 'MICRCredentials: lookups.micrAccount',
    module: 'lookups',
    run: (db) => lookups.micrAccount(db, secrets.lookupHash('micr', '123456789012')),
  },
  request(
    'record-tree',
    'getCorpTransferSelectFields',
    { CorpTransferGlobalSequenceDate: '2024-01-31', CorpTransferGlobalSequence: 7 },
    [[{}]],
  ),
  request(
    'share-records',
    'updateShareByID',
    {
      AccountNumber: '0000000001',
      ShareId: '0000',
      ShareUpdatableFields: { Description: 'HOLIDAY SAVINGS', DivRate: 1.25 },
    },
    [[{ account_number: '0000000001', share_id: '0000', description: 'SAVINGS', div_rate: 0.5 }]],
  ),
  request(
    'share-records',
    'updateShareHoldByID',
    { AccountNumber: '0000000001', ShareHoldLocator: 3, ShareHoldUpdatableFields: { Reference1: 'CHECK 1041' } },
    [[{ account_number: '0000000001', share_id: '0000', locator: 3, reference1: null }]],
  ),
  request('record-tree', 'getCollateralSelectFields', { CollateralNumber: COLLATERAL }, [GENERATION, [{}]]),
  {
    name: 'getCollateralDocumentPagedList (a later page)',
    module: 'record-tree',
    run: async (db) =>
      call(db, 'getCollateralDocumentPagedList', {
        CollateralNumber: COLLATERAL,
        PagingRequestContext: { NumberOfRecordsToReturn: 2, Token: await secondPageToken() },
      }),
    answers: [positions(3, 4), []],
  },
  request(
    'record-tree',
    'searchCollateralCollHoldSelectFields',
    {
      CollateralNumber: COLLATERAL,
      SelectableFields: { CollateralCollHoldFields: { Amount: true, EffectiveDate: true, AccountNumber: true } },
      SearchFilter: { Query: "Amount > 100 AND EffectiveDate >= {date:'2024-01-01'}" },
    },
    [positions(2)],
  ),
  { name: 'bearer token: tokens.findActive', module: 'access', run: (db) => tokens.findActive(db, 'cg_snapshot') },
  {
    name: 'TokenCredentials: sessions.findLive',
    module: 'access',
    run: (db) => sessions.findLive(db, 'token-id', 'snapshot', 900),
  },
  {
    name: 'password lockout: lockouts.state',
    module: 'access',
    run: (db) => lockouts.state(db, 'user:7@192.0.2.1/snapshot', 'user#17', { threshold: 100, windowSeconds: 900 }),
    answers: [[{ failures: 0, locks: 0, locked: false, slowed: false }]],
  },
  {
    name: 'password failure: lockouts.fail',
    module: 'access',
    run: (db) => lockouts.fail(db, 'user:7@192.0.2.1/snapshot', { threshold: 5, lockSeconds: 900 }),
  },
  {
    name: 'password failure: lockouts.slowDown',
    module: 'access',
    run: (db) => lockouts.slowDown(db, 'user#17', { threshold: 100, windowSeconds: 900 }),
  },
  {
    name: 'Idempotency-Key: idempotencyKeys.reserve (a retry)',
    module: 'idempotency',
    run: (db) => idempotencyKeys.reserve(db, 'snapshot', 'key-1', 'a'.repeat(64), 24),
    answers: [[], [], [{ request_hash: 'a'.repeat(64), status: 200, response: {} }]],
  },
  {
    name: 'audit trail: auditEvents.insert',
    module: 'audit',
    run: (db) =>
      auditEvents.insert(db, [
        {
          requestId: 'req-1',
          tokenName: 'snapshot',
          userNumber: 0,
          memberAccount: null,
          operation: 'findBySSN',
          accountNumbers: [],
          collateralNumber: null,
          status: 200,
          code: null,
          coreLatencyMs: null,
          coreOutcome: null,
        },
      ]),
  },
  // A sandbox with fault rules: each process reads the set once a second, and each firing is one statement.
  { name: 'fault rule set: faultRules.live', module: 'fault-rules', run: (db) => faultRules.live(db) },
  { name: 'fault rule fired: faultRules.fire', module: 'fault-rules', run: (db) => faultRules.fire(db, 7) },
];
