/**
 * The record catalog: the spec's records and version variants, and the schema derived from them.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import { fieldOf, recordDef, RECORDS, toColumnName } from '../src/catalog/index.js';
import {
  protectedColumns,
  protectedText,
  protectedValue,
  renderSchemaSnapshot,
  SCHEMA_SNAPSHOT_FILE,
  tableColumns,
} from '../src/database/schema.js';

const names = (recordName: string, family?: 'P1' | 'P2') =>
  recordDef(recordName)
    .fields.filter((f) => !family || f.families.includes(family))
    .map((f) => f.name);

describe('record catalog', () => {
  test('holds every record type of both spec documents', () => {
    const expected = [
      'CorpTransfer',
      'Share',
      'ShareAnalysis',
      'ShareAnalysisGroup',
      'ShareAnalysisPlan',
      'ShareCheckOrder',
      'ShareHold',
      'ShareNote',
      'ShareTransfer',
      'ShareName',
      'ShareTracking',
      'Card',
      'HomeBankingUser',
      'Micr',
      'Lookup',
      'Account',
      'Collateral',
      'CollateralCollHold',
      'CollateralDocument',
      'CollateralDocumentTracking',
      'CollateralFmHistory',
      'CollateralTracking',
    ];
    for (const name of expected) assert.ok(recordDef(name), name);
  });

  test('the spec fields of the share update objects are present', () => {
    const shown: Record<string, string[]> = {
      Share: ['Description', 'UserChar1'],
      ShareAnalysis: ['CashAmtTotal', 'StatementGroup'],
      ShareAnalysisGroup: ['Comment1'],
      ShareAnalysisPlan: ['Description', 'DefinedCode'],
      ShareCheckOrder: ['Quantity', 'Status'],
      ShareHold: ['Amount', 'Reference1'],
      ShareNote: ['Text'],
      ShareTransfer: ['PaymentType', 'RegE'],
    };
    for (const [record, fields] of Object.entries(shown)) {
      for (const field of fields) assert.ok(names(record, 'P2').includes(field), `${record}.${field}`);
    }
    assert.ok(recordDef('ShareNote').fields.find((f) => f.name === 'Text')?.repeating);
  });

  test('ShareNameUpdatableFields (2022.01) omits exactly the fields the spec lists', () => {
    const omitted = names('ShareName').filter((n) => !names('ShareName', 'P2').includes(n));
    assert.deepEqual(
      omitted.sort(),
      [
        'AddrCreateDate',
        'AddrDisconnectDate',
        'AddrFmLastDate',
        'AddrFmLastPurgeDate',
        'AddrRecordChangeDate',
        'CrAddrChgDate',
        'CrNameChgDate',
        'CrSsnChgDate',
        'CurrMonthPayChgDate',
        'DbaLongName',
        'DbaShortName',
        'FmLastPurgeDate',
        'LastAddrChgDate',
        'LastFmDate',
        'License',
        'Locator',
        'LongName',
        'MbrActivityDate',
        'MbrAddrFileType',
        'MbrAddrNumLinkChgDate',
        'MbrAddrNumber',
        'MbrCreateDate',
        'MbrDisconnectDate',
        'MbrFileType',
        'MbrFmLastDate',
        'MbrFmLastPurgeDate',
        'MbrRecordChangeDate',
        'MbrStatusFmDate',
        'MemberNumLinkChgDate',
        'MemberNumber',
        'PreferredContact',
        'RecordChangeDate',
        'ShortName',
      ].sort(),
    );
  });

  test('ShareName has the spec field families, including the seven repeating Ident entries', () => {
    const name = recordDef('ShareName');
    assert.equal(name.fields.filter((f) => f.repeating).length, 7);
    assert.equal(name.fields.find((f) => f.name === 'BirthDate')?.kind, 'date');
    assert.equal(name.fields.find((f) => f.name === 'Ssn')?.protection, 'ssn');
  });

  test("ShareCheckOrder has the core's two SSNs printed on checks, updatable on both families, with a name's Ssn rules", () => {
    const checkSsn = fieldOf(recordDef('ShareCheckOrder'), 'Ssn')!;
    const nameSsn = fieldOf(recordDef('ShareName'), 'Ssn')!;
    assert.deepEqual(checkSsn.repeating, { maxEntries: 2 });
    assert.deepEqual(
      [checkSsn.kind, checkSsn.maxLength, checkSsn.pattern, checkSsn.protection],
      [nameSsn.kind, nameSsn.maxLength, nameSsn.pattern, 'ssn'],
    );
    assert.deepEqual([checkSsn.families, checkSsn.readOnly], [['P1', 'P2'], undefined]);
  });

  test('a protected field is stored as its HMAC and its ciphertext only, never in a clear column', () => {
    const protectedFields = RECORDS.flatMap((record) =>
      record.fields.filter((f) => f.protection).map((f) => ({ record, f })),
    );
    assert.ok(protectedFields.some(({ record, f }) => record.name === 'ShareCheckOrder' && f.name === 'Ssn'));
    for (const { record, f } of protectedFields) {
      const columns = new Map(tableColumns(record).map((column) => [column.name, column.sqlType]));
      const { hmac, cipher } = protectedColumns(f);
      assert.deepEqual([columns.get(hmac), columns.get(cipher)], ['bytea', 'bytea'], `${record.name}.${f.name}`);
      assert.ok(!columns.has(f.column), `${record.name}.${f.name} has a clear column`);
    }
  });

  test('repeating protected entries are sealed as one list in EntryId order, and opened to the same entries', () => {
    const checkSsn = fieldOf(recordDef('ShareCheckOrder'), 'Ssn')!;
    const entries = [
      { EntryId: 2, Ssn: '987654321' },
      { EntryId: 1, Ssn: '123456789' },
    ];
    const clear = protectedText(checkSsn, entries);
    assert.equal(clear, '[{"EntryId":1,"Ssn":"123456789"},{"EntryId":2,"Ssn":"987654321"}]');
    assert.deepEqual(protectedValue(checkSsn, clear!), [entries[1], entries[0]]);
    // Nothing left to seal leaves both columns null, as a cleared scalar does.
    assert.equal(protectedText(checkSsn, []), null);
    assert.equal(protectedText(checkSsn, [{ EntryId: 1, Ssn: null }]), null);
    assert.equal(protectedText(fieldOf(recordDef('ShareName'), 'Ssn')!, '123456789'), '123456789');
  });

  test('tracking records have the five numbered families 1..20 and the 2022.01 share variant omits five fields', () => {
    for (const record of ['ShareTracking', 'CollateralTracking', 'CollateralDocumentTracking']) {
      for (const family of ['UserAmount', 'UserChar', 'UserCode', 'UserDate', 'UserNumber', 'UserRate']) {
        assert.ok(names(record).includes(`${family}1`) && names(record).includes(`${family}20`), `${record}.${family}`);
        assert.ok(!names(record).includes(`${family}21`));
      }
    }
    const omitted = names('ShareTracking').filter((n) => !names('ShareTracking', 'P2').includes(n));
    assert.deepEqual(omitted.sort(), ['FmLastDate', 'Id', 'IdType', 'Locator', 'RecordChangeDate']);
  });

  test('field names and columns are unique within each record', () => {
    for (const record of RECORDS) {
      const fieldNames = record.fields.map((f) => f.name);
      assert.equal(new Set(fieldNames).size, fieldNames.length, record.name);
      const columns = record.fields.map((f) => f.column);
      assert.equal(new Set(columns).size, columns.length, record.name);
    }
  });

  test('every table leads its primary key with the distribution key', () => {
    for (const record of RECORDS.filter((r) => r.name !== 'CorpTransfer')) {
      assert.match(record.primaryKey[0]!, /^(account_number|collateral_number)$/, record.name);
    }
  });

  test('column names are the snake_case of field names', () => {
    assert.equal(toColumnName('UserChar1'), 'user_char1');
    assert.equal(toColumnName('ExcpNoticeCountCpWork'), 'excp_notice_count_cp_work');
    assert.equal(toColumnName('GIin'), 'g_iin');
    assert.equal(toColumnName('Irs1042SAmendNum'), 'irs1042_s_amend_num');
  });

  test('the committed schema snapshot matches the catalog (run npm run schema:snapshot after a catalog change)', () => {
    assert.equal(readFileSync(SCHEMA_SNAPSHOT_FILE, 'utf8'), renderSchemaSnapshot());
  });
});

describe('field rules', () => {
  test('decimal places are counted exactly, also for large amounts and tiny values', async () => {
    const { decimalPlaces } = await import('../src/catalog/field-rules.js');
    assert.equal(decimalPlaces(1234567890123.45), 2);
    assert.equal(decimalPlaces(9999999999999.99), 2);
    assert.equal(decimalPlaces(1.005), 3);
    assert.equal(decimalPlaces(12), 0);
    assert.equal(decimalPlaces(1e-7), 7);
    assert.equal(decimalPlaces(1e21), 0);
  });

  test('calendar dates are checked day by day, leap years included', async () => {
    const { isCalendarDate } = await import('../src/catalog/field-rules.js');
    assert.ok(isCalendarDate('2024-02-29'));
    assert.ok(!isCalendarDate('2023-02-29'));
    assert.ok(!isCalendarDate('2023-02-30'));
    assert.ok(!isCalendarDate('2023-13-01'));
    assert.ok(!isCalendarDate('2023-1-01'));
  });
});
