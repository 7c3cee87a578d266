/**
 * CorpTransferService: getCorpTransferSelectFields with field selection (spec document 1).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { recordDef } from '../src/catalog/index.js';
import { BACKENDS, createHarness, type Harness } from './support/harness.js';
import { insert } from './support/fixtures.js';

const PATH = '/gw/627/persistent/corptransfer/getCorpTransferSelectFields';
const KEY = { CorpTransferGlobalSequenceDate: '2024-03-15', CorpTransferGlobalSequence: 4711 };

const TRANSFER = {
  GlobalSequenceDate: '2024-03-15',
  GlobalSequence: 4711,
  Amount: 1250.5,
  InterestAmount: 10.25,
  PrincipalAmount: 1240.25,
  Status: 2,
  Type: 1,
  EffectiveDate: '2024-03-16',
  FromAccount: '0000000042',
  FromId: '0001',
  ToAccount: '0000000043',
  ToId: '0000',
  OriginatorStatementDesc: 'PAYROLL MARCH',
  Memo: [
    { EntryId: 1, Memo: 'first line' },
    { EntryId: 2, Memo: 'second line' },
  ],
};

for (const backend of BACKENDS) {
  describe(`getCorpTransferSelectFields on ${backend.name}`, () => {
    let h: Harness;
    before(async () => {
      h = await createHarness(backend);
      await insert(h.database.db, h.secrets, 'CorpTransfer', [TRANSFER]);
    });
    after(() => h.close());

    test('IncludeAllCorpTransferFields true returns every field of the record', async () => {
      const response = await h.call(PATH, { ...KEY, SelectableFields: { IncludeAllCorpTransferFields: true } });
      assert.equal(response.statusCode, 200, response.body);
      const record = response.json().CorpTransfer;
      assert.deepEqual(
        Object.keys(record).sort(),
        recordDef('CorpTransfer')
          .fields.map((f) => f.name)
          .sort(),
      );
      assert.deepEqual({ ...record, ...TRANSFER }, record, 'stored values come back unchanged');
      assert.equal(record.CompletedDate, null, 'unset fields are null');
    });

    test('IncludeAllCorpTransferFields false returns the flagged fields plus the two key fields', async () => {
      const response = await h.call(PATH, {
        ...KEY,
        SelectableFields: {
          IncludeAllCorpTransferFields: false,
          CorpTransferFields: { Amount: true, Status: true, Type: false },
        },
      });
      assert.deepEqual(response.json(), {
        CorpTransfer: { Amount: 1250.5, Status: 2, GlobalSequenceDate: '2024-03-15', GlobalSequence: 4711 },
      });
    });

    test('a repeating field flag may list the EntryIds to return', async () => {
      const response = await h.call(PATH, { ...KEY, SelectableFields: { CorpTransferFields: { Memo: [2] } } });
      assert.deepEqual(response.json().CorpTransfer.Memo, [{ EntryId: 2, Memo: 'second line' }]);
    });

    test('without SelectableFields the whole record is returned', async () => {
      const response = await h.call(PATH, KEY);
      assert.equal(Object.keys(response.json().CorpTransfer).length, recordDef('CorpTransfer').fields.length);
    });

    test('an unknown key pair is 404 RECORD_NOT_FOUND', async () => {
      const response = await h.call(PATH, { ...KEY, CorpTransferGlobalSequence: 4712 });
      assert.equal(response.statusCode, 404);
      assert.equal(response.json().code, 'RECORD_NOT_FOUND');
    });

    test('both key fields are required', async () => {
      const response = await h.call(PATH, { CorpTransferGlobalSequence: 4711 });
      assert.equal(response.statusCode, 400);
      assert.deepEqual(response.json().errors, [{ pointer: '/CorpTransferGlobalSequenceDate', detail: 'is required' }]);
    });

    test('an impossible date is a 400 naming the field', async () => {
      const response = await h.call(PATH, { ...KEY, CorpTransferGlobalSequenceDate: '2023-02-30' });
      assert.equal(response.statusCode, 400);
      assert.equal(response.json().errors[0].pointer, '/CorpTransferGlobalSequenceDate');
    });

    test('a flag for a field the record does not have is a 400 naming it', async () => {
      const response = await h.call(PATH, {
        ...KEY,
        SelectableFields: { CorpTransferFields: { Amount: true, Bogus: true } },
      });
      assert.equal(response.statusCode, 400);
      assert.deepEqual(response.json().errors, [
        { pointer: '/SelectableFields/CorpTransferFields/Bogus', detail: 'is not a known property' },
      ]);
    });
  });
}
