/**
 * CollateralService (spec document 2): all thirty-three operations, field selection at every level,
 * search queries, list limits and keyset paging, on each database.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import { recordDef } from '../src/catalog/index.js';
import { COLLATERAL_OPERATION_TABLE } from '../src/operations/collateral.js';
import { listQuery } from '../src/store/record-tree.js';
import { BACKENDS, createHarness, type Harness } from './support/harness.js';
import { insert } from './support/fixtures.js';

const P2 = '/gw/627/2022.01/collateral';
const COLLATERAL = '7000000001';
const BIG = '7000000002';
const DOCUMENTS_IN_BIG = 2500;

const keys = (extra: Record<string, unknown> = {}) => ({ collateral_number: COLLATERAL, ...extra });

async function loadFixtures(h: Harness): Promise<void> {
  const { db } = h.database;
  await insert(db, h.secrets, 'Collateral', [
    { keys: keys(), Number: COLLATERAL, Description: 'TEST VEHICLE', Value: 25000, Type: 1, CreateDate: '2022-05-01' },
    { keys: { collateral_number: BIG }, Number: BIG, Description: 'MANY DOCUMENTS', Value: 1, Type: 2 },
  ]);
  await insert(db, h.secrets, 'CollateralCollHold', [
    { keys: keys(), Locator: 1, Amount: 50, EffectiveDate: '2023-06-01', AccountNumber: '0000000042', Id: '0001' },
    { keys: keys(), Locator: 2, Amount: 150, EffectiveDate: '2023-12-31', AccountNumber: '0000000042', Id: '0001' },
    { keys: keys(), Locator: 3, Amount: 250, EffectiveDate: '2024-01-01', AccountNumber: '0000000042', Id: '0002' },
    { keys: keys(), Locator: 4, Amount: 350, EffectiveDate: '2024-06-15', AccountNumber: '0000000043', Id: '0002' },
  ]);
  await insert(
    db,
    h.secrets,
    'CollateralDocument',
    [1, 2, 3].map((n) => ({
      keys: keys(),
      Locator: n,
      Description: `DOCUMENT ${n}`,
      Type: n,
      Status: n % 2,
      Location: 'VAULT',
    })),
  );
  await insert(
    db,
    h.secrets,
    'CollateralDocumentTracking',
    [1, 2, 3].flatMap((document) =>
      [1, 2].map((n) => ({
        keys: keys({ document_locator: document }),
        Locator: n,
        Type: n,
        UserChar1: `D${document}T${n}`,
      })),
    ),
  );
  await insert(
    db,
    h.secrets,
    'CollateralFmHistory',
    [1, 2, 3].map((n) => ({
      keys: keys(),
      SequenceNumber: n,
      FieldName: n === 2 ? 'Value' : 'Description',
      RecordName: 'Collateral',
      NewMoney: n * 10,
      PostDate: `2024-0${n}-15`,
    })),
  );
  await insert(
    db,
    h.secrets,
    'CollateralTracking',
    [1, 2].map((n) => ({ keys: keys(), Locator: n, Type: 5, UserChar1: `T${n}` })),
  );
  await insert(
    db,
    h.secrets,
    'CollateralDocument',
    Array.from({ length: DOCUMENTS_IN_BIG }, (_, i) => ({
      keys: { collateral_number: BIG },
      Locator: i + 1,
      Description: `DOC ${i + 1}`,
    })),
  );
}

/** A valid request of an operation against the small fixture collateral. */
function validBody(entry: (typeof COLLATERAL_OPERATION_TABLE)[number]): Record<string, unknown> {
  const { record, kind } = entry;
  return {
    CollateralNumber: COLLATERAL,
    ...(record.name === 'CollateralDocumentTracking' ? { CollateralDocumentLocator: 1 } : {}),
    ...(kind.shape === 'single' && record.name !== 'Collateral' ? { [`${record.name}Locator`]: 1 } : {}),
  };
}

for (const backend of BACKENDS) {
  describe(`collateral operations on ${backend.name}`, () => {
    let h: Harness;
    before(async () => {
      h = await createHarness(backend);
      await loadFixtures(h);
    });
    after(() => h.close());

    const call = async (operation: string, body: Record<string, unknown>) => h.call(`${P2}/${operation}`, body);
    const ok = async (operation: string, body: Record<string, unknown>) => {
      const response = await call(operation, body);
      assert.equal(response.statusCode, 200, `${operation}: ${response.body}`);
      return response.json();
    };

    test('there are thirty-three collateral operations', () => {
      assert.equal(COLLATERAL_OPERATION_TABLE.length, 33);
    });

    for (const entry of COLLATERAL_OPERATION_TABLE) {
      const { operation, record, kind } = entry;
      test(`${operation.name} returns the ${kind.shape} shape`, async () => {
        const body = await ok(operation.name, validBody(entry));
        if (kind.shape === 'single') {
          assert.deepEqual(Object.keys(body), [record.name]);
          assert.equal(typeof body[record.name], 'object');
        } else if (kind.shape === 'list') {
          assert.deepEqual(Object.keys(body), [`${record.name}List`]);
          assert.equal(body[`${record.name}List`].hasReachedMaximumListSize, false);
          assert.ok(body[`${record.name}List`][record.name].length > 0);
        } else {
          assert.deepEqual(Object.keys(body).sort(), [record.name, 'Token'].sort());
          assert.ok(body[record.name].length > 0);
          assert.equal(body.Token, '', 'one page holds the whole small fixture');
        }
      });

      test(`${operation.name}: an unknown CollateralNumber is 404 RECORD_NOT_FOUND`, async () => {
        const response = await call(operation.name, { ...validBody(entry), CollateralNumber: '7999999999' });
        assert.equal(response.statusCode, 404, response.body);
        assert.equal(response.json().code, 'RECORD_NOT_FOUND');
      });

      if (kind.shape === 'single' && record.name !== 'Collateral') {
        test(`${operation.name}: an unknown locator is 404 RECORD_NOT_FOUND`, async () => {
          const response = await call(operation.name, { ...validBody(entry), [`${record.name}Locator`]: 999 });
          assert.equal(response.statusCode, 404);
        });
      }
    }

    test('getCollateral returns every field and the children nested, documents with their tracking', async () => {
      const { Collateral } = await ok('getCollateral', { CollateralNumber: COLLATERAL });
      assert.equal(Collateral.Number, COLLATERAL);
      assert.equal(Collateral.Value, 25000);
      assert.deepEqual(
        Collateral.CollateralCollHoldList.CollateralCollHold.map((x: { Locator: number }) => x.Locator),
        [1, 2, 3, 4],
      );
      assert.equal(Collateral.CollateralFmHistoryList.CollateralFmHistory.length, 3);
      assert.equal(Collateral.CollateralTrackingList.CollateralTracking.length, 2);
      const [document] = Collateral.CollateralDocumentList.CollateralDocument;
      assert.deepEqual(document.CollateralDocumentTrackingList, {
        hasReachedMaximumListSize: false,
        CollateralDocumentTracking: document.CollateralDocumentTrackingList.CollateralDocumentTracking,
      });
      assert.deepEqual(
        document.CollateralDocumentTrackingList.CollateralDocumentTracking.map(
          (t: { UserChar1: string }) => t.UserChar1,
        ),
        ['D1T1', 'D1T2'],
      );
    });

    describe('SelectableFields', () => {
      test('a CollateralDocumentFields selection of two fields returns records with only those two', async () => {
        const body = await ok('getCollateralDocumentListSelectFields', {
          CollateralNumber: COLLATERAL,
          SelectableFields: { CollateralDocumentFields: { Description: true, Status: true, Type: false } },
        });
        for (const document of body.CollateralDocumentList.CollateralDocument) {
          assert.deepEqual(Object.keys(document).sort(), ['Description', 'Status']);
        }
      });

      test('selectors work at every level: root, child, and nested document tracking', async () => {
        const { Collateral } = await ok('getCollateralSelectFields', {
          CollateralNumber: COLLATERAL,
          SelectableFields: {
            CollateralFields: { Description: true },
            CollateralCollHoldSelectableFields: { CollateralCollHoldFields: { Amount: true } },
            CollateralDocumentSelectableFields: {
              CollateralDocumentFields: { Locator: true },
              CollateralDocumentTrackingSelectableFields: {
                IncludeAllCollateralDocumentTrackingFields: false,
                CollateralDocumentTrackingFields: { UserChar1: true },
              },
            },
          },
        });
        assert.deepEqual(Object.keys(Collateral).sort(), [
          'CollateralCollHoldList',
          'CollateralDocumentList',
          'Description',
        ]);
        assert.deepEqual(Collateral.CollateralCollHoldList.CollateralCollHold[0], { Amount: 50 });
        assert.deepEqual(Collateral.CollateralDocumentList.CollateralDocument[2], {
          Locator: 3,
          CollateralDocumentTrackingList: {
            hasReachedMaximumListSize: false,
            CollateralDocumentTracking: [{ UserChar1: 'D3T1' }, { UserChar1: 'D3T2' }],
          },
        });
      });

      test('IncludeAll returns every field and the child lists that have no selector of their own', async () => {
        const { Collateral } = await ok('getCollateralSelectFields', {
          CollateralNumber: COLLATERAL,
          SelectableFields: {
            IncludeAllCollateralFields: true,
            CollateralTrackingSelectableFields: { CollateralTrackingFields: { Locator: true } },
          },
        });
        assert.equal(Collateral.Description, 'TEST VEHICLE');
        assert.deepEqual(Collateral.CollateralTrackingList.CollateralTracking, [{ Locator: 1 }, { Locator: 2 }]);
        assert.equal(Collateral.CollateralCollHoldList.CollateralCollHold[0].Amount, 50);
      });

      test('the document operations nest the tracking selector', async () => {
        const { CollateralDocument } = await ok('getCollateralDocumentSelectFields', {
          CollateralNumber: COLLATERAL,
          CollateralDocumentLocator: 2,
          SelectableFields: {
            CollateralDocumentFields: { Description: true },
            CollateralDocumentTrackingSelectableFields: { CollateralDocumentTrackingFields: { Type: true } },
          },
        });
        assert.deepEqual(CollateralDocument, {
          Description: 'DOCUMENT 2',
          CollateralDocumentTrackingList: {
            hasReachedMaximumListSize: false,
            CollateralDocumentTracking: [{ Type: 1 }, { Type: 2 }],
          },
        });
      });

      test('a flag for a field the record does not have is 400 naming it, at any level', async () => {
        for (const [selectable, pointer] of [
          [{ CollateralFields: { Colour: true } }, '/SelectableFields/CollateralFields/Colour'],
          [
            {
              CollateralDocumentSelectableFields: {
                CollateralDocumentTrackingSelectableFields: { CollateralDocumentTrackingFields: { UserChar21: true } },
              },
            },
            '/SelectableFields/CollateralDocumentSelectableFields/CollateralDocumentTrackingSelectableFields/CollateralDocumentTrackingFields/UserChar21',
          ],
        ] as const) {
          const response = await call('getCollateralSelectFields', {
            CollateralNumber: COLLATERAL,
            SelectableFields: selectable,
          });
          assert.equal(response.statusCode, 400);
          assert.deepEqual(
            response.json().errors.map((e: { pointer: string }) => e.pointer),
            [pointer],
          );
        }
      });
    });

    describe('search', () => {
      test("Amount > 100 AND EffectiveDate >= {date:'2024-01-01'} on holds returns exactly the matching rows", async () => {
        const body = await ok('searchCollateralCollHoldSelectFields', {
          CollateralNumber: COLLATERAL,
          SelectableFields: { CollateralCollHoldFields: { Locator: true, Amount: true } },
          SearchFilter: { Query: "Amount > 100 AND EffectiveDate >= {date:'2024-01-01'}" },
        });
        assert.deepEqual(body.CollateralCollHoldList.CollateralCollHold, [
          { Locator: 3, Amount: 250 },
          { Locator: 4, Amount: 350 },
        ]);
      });

      test('Amount > is 400 INVALID_QUERY with the position', async () => {
        const response = await call('searchCollateralCollHoldSelectFields', {
          CollateralNumber: COLLATERAL,
          SearchFilter: { Query: 'Amount >' },
        });
        assert.equal(response.statusCode, 400);
        const problem = response.json();
        assert.equal(problem.code, 'INVALID_QUERY');
        assert.equal(problem.errors[0].pointer, '/SearchFilter/Query');
        assert.match(problem.detail, /position 8/);
      });

      test('type errors and unknown fields are 400 INVALID_QUERY', async () => {
        for (const Query of [
          "Amount = 'big'",
          'EffectiveDate > 2024',
          'Colour = 1',
          "AccountNumber = '1' OR",
          "Id = 'x''",
        ]) {
          const response = await call('searchCollateralCollHoldSelectFields', {
            CollateralNumber: COLLATERAL,
            SearchFilter: { Query },
          });
          assert.equal(response.statusCode, 400, Query);
          assert.equal(response.json().code, 'INVALID_QUERY', Query);
        }
      });

      test('an empty query matches everything', async () => {
        const body = await ok('searchCollateralCollHoldSelectFields', {
          CollateralNumber: COLLATERAL,
          SearchFilter: { Query: '  ' },
        });
        assert.equal(body.CollateralCollHoldList.CollateralCollHold.length, 4);
      });

      test('the paged search takes a top-level Query', async () => {
        const body = await ok('searchCollateralCollHoldPagedSelectFields', {
          CollateralNumber: COLLATERAL,
          Query: "AccountNumber = '0000000042' AND NOT Amount < 100",
          SelectableFields: { CollateralCollHoldFields: { Locator: true } },
        });
        assert.deepEqual(body.CollateralCollHold, [{ Locator: 2 }, { Locator: 3 }]);
      });

      test("file-maintenance history takes the core's StartPostDate and EndPostDate beside Query, in every filter", async () => {
        const sequences = (records: { SequenceNumber: number }[]) => records.map((r) => r.SequenceNumber);
        const selection = { CollateralFmHistoryFields: { SequenceNumber: true } };
        const listed = await ok('searchCollateralFmHistorySelectFields', {
          CollateralNumber: COLLATERAL,
          SelectableFields: selection,
          SearchFilter: { StartPostDate: '2024-02-01', EndPostDate: '2024-03-31', Query: "FieldName = 'Description'" },
        });
        assert.deepEqual(sequences(listed.CollateralFmHistoryList.CollateralFmHistory), [3]);
        const paged = await ok('searchCollateralFmHistoryPagedSelectFields', {
          CollateralNumber: COLLATERAL,
          SelectableFields: selection,
          EndPostDate: '2024-02-15',
        });
        assert.deepEqual(sequences(paged.CollateralFmHistory), [1, 2]);
        const tree = await ok('getCollateralSelectFieldsFilterChildren', {
          CollateralNumber: COLLATERAL,
          SelectableFields: { CollateralFields: {}, CollateralFmHistorySelectableFields: selection },
          ChildrenSearchFilter: { CollateralFmHistoryFilter: { StartPostDate: '2024-02-15' } },
        });
        assert.deepEqual(sequences(tree.Collateral.CollateralFmHistoryList.CollateralFmHistory), [2, 3]);
        const bad = await call('searchCollateralFmHistorySelectFields', {
          CollateralNumber: COLLATERAL,
          SearchFilter: { StartPostDate: '2024-02-30' },
        });
        assert.equal(bad.statusCode, 400);
      });

      test('ChildrenSearchFilter filters each child list, down to document tracking', async () => {
        const { Collateral } = await ok('getCollateralSelectFieldsFilterChildren', {
          CollateralNumber: COLLATERAL,
          SelectableFields: {
            CollateralCollHoldSelectableFields: { CollateralCollHoldFields: { Locator: true } },
            CollateralDocumentSelectableFields: {
              CollateralDocumentFields: { Locator: true },
              CollateralDocumentTrackingSelectableFields: { CollateralDocumentTrackingFields: { UserChar1: true } },
            },
          },
          ChildrenSearchFilter: {
            CollateralCollHoldFilter: { Query: 'Amount >= 250' },
            CollateralDocumentFilter: {
              Query: 'Type <> 2',
              CollateralDocumentChildrenFilter: { CollateralDocumentTrackingFilter: { Query: 'Type = 2' } },
            },
          },
        });
        assert.deepEqual(Collateral.CollateralCollHoldList.CollateralCollHold, [{ Locator: 3 }, { Locator: 4 }]);
        assert.deepEqual(Collateral.CollateralDocumentList.CollateralDocument, [
          {
            Locator: 1,
            CollateralDocumentTrackingList: {
              hasReachedMaximumListSize: false,
              CollateralDocumentTracking: [{ UserChar1: 'D1T2' }],
            },
          },
          {
            Locator: 3,
            CollateralDocumentTrackingList: {
              hasReachedMaximumListSize: false,
              CollateralDocumentTracking: [{ UserChar1: 'D3T2' }],
            },
          },
        ]);
      });

      test('a bad query in a children filter names its pointer', async () => {
        const response = await call('getCollateralDocumentSelectFieldsFilterChildren', {
          CollateralNumber: COLLATERAL,
          CollateralDocumentLocator: 1,
          SelectableFields: {
            CollateralDocumentTrackingSelectableFields: { IncludeAllCollateralDocumentTrackingFields: true },
          },
          ChildrenSearchFilter: { CollateralDocumentTrackingFilter: { Query: 'UserChar1 = ' } },
        });
        assert.equal(response.statusCode, 400);
        assert.equal(response.json().errors[0].pointer, '/ChildrenSearchFilter/CollateralDocumentTrackingFilter/Query');
      });

      test('document search filters the nested tracking lists too', async () => {
        const body = await ok('searchCollateralDocumentSelectFields', {
          CollateralNumber: COLLATERAL,
          SelectableFields: {
            CollateralDocumentFields: { Locator: true },
            CollateralDocumentTrackingSelectableFields: { CollateralDocumentTrackingFields: { Locator: true } },
          },
          SearchFilter: {
            Query: 'Status = 1',
            CollateralDocumentChildrenFilter: { CollateralDocumentTrackingFilter: { Query: 'Locator = 1' } },
          },
        });
        assert.deepEqual(body.CollateralDocumentList.CollateralDocument, [
          {
            Locator: 1,
            CollateralDocumentTrackingList: {
              hasReachedMaximumListSize: false,
              CollateralDocumentTracking: [{ Locator: 1 }],
            },
          },
          {
            Locator: 3,
            CollateralDocumentTrackingList: {
              hasReachedMaximumListSize: false,
              CollateralDocumentTracking: [{ Locator: 1 }],
            },
          },
        ]);
      });
    });

    describe('paging', () => {
      const page = (body: Record<string, unknown>, operation = 'getCollateralDocumentPagedListSelectFields') =>
        ok(operation, {
          CollateralNumber: BIG,
          SelectableFields: { CollateralDocumentFields: { Locator: true } },
          ...body,
        });

      test('following tokens from the first page visits every one of 2,500 documents once, in locator order', async () => {
        const seen: number[] = [];
        let token: string | undefined;
        let pages = 0;
        do {
          const body = await page({
            PagingRequestContext: { NumberOfRecordsToReturn: 100, ...(token ? { Token: token } : {}) },
          });
          seen.push(...body.CollateralDocument.map((d: { Locator: number }) => d.Locator));
          token = body.Token;
          pages += 1;
        } while (token);
        assert.equal(pages, 25);
        assert.deepEqual(
          seen,
          Array.from({ length: DOCUMENTS_IN_BIG }, (_, i) => i + 1),
        );
      });

      test('records inserted between calls are visited once and nothing is repeated', async () => {
        const seen: number[] = [];
        let token: string | undefined;
        let inserted = DOCUMENTS_IN_BIG + 1000;
        do {
          const body = await page({
            PagingRequestContext: { NumberOfRecordsToReturn: 250, ...(token ? { Token: token } : {}) },
          });
          seen.push(...body.CollateralDocument.map((d: { Locator: number }) => d.Locator));
          token = body.Token;
          inserted += 1;
          await insert(h.database.db, h.secrets, 'CollateralDocument', [
            { keys: { collateral_number: BIG }, Locator: inserted, Description: 'LATE' },
          ]);
        } while (token);
        assert.equal(new Set(seen).size, seen.length, 'no record twice');
        assert.deepEqual(
          [...seen].sort((a, b) => a - b),
          seen,
          'locator order',
        );
        for (let locator = 1; locator <= DOCUMENTS_IN_BIG; locator += 1) assert.ok(seen.includes(locator));
        assert.ok(seen.includes(DOCUMENTS_IN_BIG + 1001), 'a record inserted ahead of the position is reached');
      });

      test('NumberOfRecordsToSkip skips from the start without a token and after the position with one', async () => {
        const first = await page({ PagingRequestContext: { NumberOfRecordsToReturn: 3, NumberOfRecordsToSkip: 5 } });
        assert.deepEqual(
          first.CollateralDocument.map((d: { Locator: number }) => d.Locator),
          [6, 7, 8],
        );
        const next = await page({
          PagingRequestContext: { NumberOfRecordsToReturn: 3, NumberOfRecordsToSkip: 2, Token: first.Token },
        });
        assert.deepEqual(
          next.CollateralDocument.map((d: { Locator: number }) => d.Locator),
          [11, 12, 13],
        );
      });

      test('NumberOfRecordsToReturn is validated and capped at the page maximum', async () => {
        const zero = await call('getCollateralDocumentPagedList', {
          CollateralNumber: BIG,
          PagingRequestContext: { NumberOfRecordsToReturn: 0 },
        });
        assert.equal(zero.statusCode, 400);
        assert.equal(zero.json().errors[0].pointer, '/PagingRequestContext/NumberOfRecordsToReturn');
        const huge = await page({ PagingRequestContext: { NumberOfRecordsToReturn: 50_000 } });
        assert.equal(huge.CollateralDocument.length, h.config.pageMaximum);
        const defaulted = await page({});
        assert.equal(defaulted.CollateralDocument.length, h.config.defaultPageSize);
      });

      test('a tampered, foreign or garbage token is 400 INVALID_PAGING_TOKEN', async () => {
        const { Token } = await page({ PagingRequestContext: { NumberOfRecordsToReturn: 10 } });
        const [body, signature] = Token.split('.');
        const forged = `${Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(body, 'base64url').toString()), p: 2000 })).toString('base64url')}.${signature}`;
        const attempts: [string, Record<string, unknown>][] = [
          [
            'getCollateralDocumentPagedListSelectFields',
            {
              CollateralNumber: BIG,
              SelectableFields: { CollateralDocumentFields: { Locator: true } },
              PagingRequestContext: { Token: forged },
            },
          ],
          [
            'getCollateralDocumentPagedListSelectFields',
            {
              CollateralNumber: BIG,
              SelectableFields: { CollateralDocumentFields: { Locator: true } },
              PagingRequestContext: { Token: 'not-a-token' },
            },
          ],
          [
            'getCollateralDocumentPagedListSelectFields',
            {
              CollateralNumber: BIG,
              SelectableFields: { CollateralDocumentFields: { Locator: true } },
              PagingRequestContext: { Token: `${Token}x` },
            },
          ],
          [
            'getCollateralDocumentPagedListSelectFields',
            {
              CollateralNumber: BIG,
              SelectableFields: { CollateralDocumentFields: { Description: true } },
              PagingRequestContext: { Token },
            },
          ],
          [
            'getCollateralDocumentPagedListSelectFields',
            {
              CollateralNumber: COLLATERAL,
              SelectableFields: { CollateralDocumentFields: { Locator: true } },
              PagingRequestContext: { Token },
            },
          ],
          ['getCollateralDocumentPagedList', { CollateralNumber: BIG, PagingRequestContext: { Token } }],
          ['getCollateralCollHoldPagedList', { CollateralNumber: BIG, PagingRequestContext: { Token } }],
        ];
        for (const [operation, request] of attempts) {
          const response = await call(operation, request);
          assert.equal(response.statusCode, 400, `${operation} ${JSON.stringify(request)}: ${response.body}`);
          assert.equal(response.json().code, 'INVALID_PAGING_TOKEN');
        }
      });

      test('the SQL of a later page reads no more rows than the first page does', async () => {
        const document = recordDef('CollateralDocument');
        const plan = async (after: number | undefined) => {
          const query = listQuery({ record: document, fields: [] }, { collateral_number: BIG }, { after, limit: 100 });
          const { rows } = await sql<{ 'QUERY PLAN': unknown }>`explain (analyze, format json) ${query}`.execute(
            h.database.db,
          );
          const planText = JSON.stringify(rows[0]!['QUERY PLAN']);
          const scanned = [...planText.matchAll(/"Actual Rows":\s*(\d+)/g)].map((m) => Number(m[1]));
          return Math.max(...scanned);
        };
        const firstPage = await plan(undefined);
        const pageTwentyFour = await plan(2300);
        assert.ok(firstPage <= 101, `page 1 read ${firstPage} rows`);
        assert.ok(pageTwentyFour <= 101, `page 24 read ${pageTwentyFour} rows`);
      });
    });
  });
}

describe('list limits', () => {
  let h: Harness;
  before(async () => {
    h = await createHarness({ name: 'pglite' }, { listMaximum: 2 });
    await loadFixtures(h);
  });
  after(() => h.close());

  test('a list stops at the configured maximum and sets hasReachedMaximumListSize', async () => {
    const response = await h.call(`${P2}/getCollateralCollHoldListSelectFields`, { CollateralNumber: COLLATERAL });
    assert.deepEqual(response.json().CollateralCollHoldList.hasReachedMaximumListSize, true);
    assert.equal(response.json().CollateralCollHoldList.CollateralCollHold.length, 2);
  });

  test('nested child lists stop at the maximum too', async () => {
    const { Collateral } = (await h.call(`${P2}/getCollateral`, { CollateralNumber: COLLATERAL })).json();
    assert.equal(Collateral.CollateralCollHoldList.hasReachedMaximumListSize, true);
    assert.equal(Collateral.CollateralTrackingList.hasReachedMaximumListSize, false);
    assert.equal(
      Collateral.CollateralDocumentList.CollateralDocument[0].CollateralDocumentTrackingList.hasReachedMaximumListSize,
      false,
    );
  });
});
