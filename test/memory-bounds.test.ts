/**
 * Memory is bounded by configuration, never by traffic: a server driven with thousands of distinct keys of
 * every kind a request can carry (bearer tokens, lookup values, paging tokens, search queries, selections,
 * collateral numbers) keeps its caches within their settings and its resident memory flat. One real
 * `coregate serve` process on its demo dataset, with small cache settings so that each is driven well past
 * its bound.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { rssMb, serve, stop, type Served } from './support/serve-process.js';

const LOOKUP_CACHE_ENTRIES = 200;
const COLLATERAL_CACHE_MB = 1;

/** Sends `count` requests, 16 at a time; `check` sees each status. */
async function drive(
  count: number,
  send: (i: number) => Promise<Response>,
  check: (status: number, i: number) => void,
): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < count) {
      const i = next++;
      const response = await send(i);
      await response.arrayBuffer();
      check(response.status, i);
    }
  };
  await Promise.all(Array.from({ length: 16 }, worker));
}

describe('memory under distinct keys', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'coregate-memory-'));
  let served: Served;
  let token: string;
  let password: string;

  const post = (path: string, body: Record<string, unknown>, bearer = token) =>
    fetch(`${served.baseUrl}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${bearer}`, 'content-type': 'application/json' },
      body: JSON.stringify({ Credentials: { AdministrativeCredentials: { Password: password } }, ...body }),
    });
  const metric = async (name: string) => {
    const text = await (await fetch(`${served.baseUrl}/metrics`)).text();
    return Number(new RegExp(`^${name} ([0-9.e+]+)$`, 'm').exec(text)?.[1]);
  };

  /** Every kind of distinct key, `count` of each, numbered from `from`. */
  const everyKind = async (from: number, count: number) => {
    await drive(
      count,
      (i) => post('/gw/627/persistent/findby/findBySSN', {}, `cg_unknown${from + i}`),
      (status) => assert.equal(status, 401),
    );
    await drive(
      count,
      (i) => post('/gw/627/persistent/findby/findBySSN', { SSN: String(100_000_000 + from + i) }),
      (status) => assert.equal(status, 200),
    );
    await drive(
      count,
      (i) =>
        post('/gw/627/2022.01/collateral/getCollateralFmHistoryPagedList', {
          CollateralNumber: '7000000011',
          PagingRequestContext: { Token: `forged-${from + i}` },
        }),
      (status) => assert.equal(status, 400),
    );
    await drive(
      count,
      (i) =>
        post('/gw/627/2022.01/collateral/searchCollateralFmHistoryPagedSelectFields', {
          CollateralNumber: '7000000011',
          Query: `NewNumber > ${from + i}${' OR OldNumber = 1'.repeat(i % 30)}`,
          SelectableFields: { IncludeAllCollateralFmHistoryFields: true },
          PagingRequestContext: { NumberOfRecordsToReturn: 1 },
        }),
      (status) => assert.equal(status, 200),
    );
    await drive(
      count,
      (i) =>
        post('/gw/627/2022.01/collateral/getCollateralSelectFields', {
          CollateralNumber: String(7_000_000_000 + ((from + i) % 50_000)).padStart(10, '0'),
        }),
      (status) => assert.ok(status === 200 || status === 404, String(status)),
    );
  };

  before(async () => {
    served = await serve({
      env: {
        COREGATE_DATA_DIR: dataDir,
        DATABASE_URL: '',
        PORT: '0',
        LOG_LEVEL: 'warn',
        COREGATE_RATE_LIMIT: '100000000',
        COREGATE_FINDBY_RATE_LIMIT: '100000000',
        COREGATE_LOOKUP_CACHE_ENTRIES: String(LOOKUP_CACHE_ENTRIES),
        COREGATE_COLLATERAL_CACHE_MB: String(COLLATERAL_CACHE_MB),
      },
      ready: /Try it:\n.*\n/,
    });
    const credentials = JSON.parse(readFileSync(join(dataDir, 'demo-credentials.json'), 'utf8')) as {
      apiToken: string;
      adminPassword: string;
    };
    token = credentials.apiToken;
    password = credentials.adminPassword;
  });
  after(async () => {
    await stop(served.child);
    rmSync(dataDir, { recursive: true, force: true });
  });

  test('caches stay within their settings and RSS stays flat through 2,500 distinct keys of each kind', async () => {
    await everyKind(0, 300);
    const warmed = rssMb(served.child.pid!);
    await everyKind(300, 2_500);
    const grown = rssMb(served.child.pid!) - warmed;
    assert.ok(
      (await metric('coregate_lookup_cache_entries')) <= LOOKUP_CACHE_ENTRIES,
      'FindBy answers kept within COREGATE_LOOKUP_CACHE_ENTRIES',
    );
    // The collateral cache is bounded by the megabytes of the answers' JSON it holds.
    assert.ok((await metric('coregate_collateral_cache_entries')) >= 1, 'collateral answers were kept');
    assert.ok(grown < 64, `RSS grew ${grown.toFixed(1)} MB from ${warmed.toFixed(1)} MB`);
  });
});
