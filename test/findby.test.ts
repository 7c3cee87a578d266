/**
 * FindByService: every lookup's match and no-match shapes (spec document 1, "FindByService"), on each database.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { BACKENDS, createHarness, type Harness } from './support/harness.js';
import { account, insert } from './support/fixtures.js';

const P1 = '/gw/627/persistent/findby';

async function loadFixtures(h: Harness): Promise<void> {
  const { db } = h.database;
  const keys = (n: number) => ({ account_number: account(n) });
  await insert(db, h.secrets, 'Card', [
    { keys: keys(1), Locator: 1, CardNumber: '4000000000000002', Status: 0, ExpirationDate: '2099-12-31' },
    { keys: keys(2), Locator: 1, CardNumber: '4000000000000010', Status: 1, ExpirationDate: '2099-12-31' },
    { keys: keys(3), Locator: 1, CardNumber: '4000000000000028', Status: 0, ExpirationDate: '2020-01-31' },
    // A reissued number: inactive on account 4, active on account 5.
    { keys: keys(4), Locator: 1, CardNumber: '4000000000000036', Status: 1, ExpirationDate: '2099-12-31' },
    { keys: keys(5), Locator: 2, CardNumber: '4000000000000036', Status: 0, ExpirationDate: '2099-12-31' },
  ]);
  await insert(db, h.secrets, 'HomeBankingUser', [{ keys: keys(6), Locator: 1, UserName: 'JSmith42', Status: 0 }]);
  await insert(db, h.secrets, 'Micr', [
    { keys: keys(7), Locator: 1, MicrNumber: '123456789012', Draft: '1', ShareId: '0010' },
  ]);
  await insert(db, h.secrets, 'Lookup', [
    { keys: keys(8), Locator: 1, LookupType: 5, LookupNumber: 'EMP-100', ShareId: '0001' },
    { keys: keys(9), Locator: 1, LookupType: 5, LookupNumber: 'EMP-200', ShareId: null },
  ]);
  await insert(db, h.secrets, 'ShareName', [
    { keys: { ...keys(11), share_id: null }, Locator: 1, Ssn: '123456789', ShortName: 'SMITH J', Last: 'Smith' },
    { keys: { ...keys(10), share_id: null }, Locator: 1, Ssn: '123456789', ShortName: 'SMITH J', Last: 'Smith' },
    { keys: { ...keys(10), share_id: '0000' }, Locator: 2, Ssn: '987654321', ShortName: 'DOE A' },
    { keys: { ...keys(12), share_id: '0001' }, Locator: 3, Ssn: '555443333', ShortName: 'smith j' },
  ]);
}

for (const backend of BACKENDS) {
  describe(`FindBy lookups on ${backend.name}`, () => {
    let h: Harness;
    before(async () => {
      h = await createHarness(backend);
      await loadFixtures(h);
    });
    after(() => h.close());

    const find = async (operation: string, body: Record<string, unknown>) => {
      const response = await h.call(`${P1}/${operation}`, body);
      assert.equal(response.statusCode, 200, response.body);
      return response.json();
    };

    test('findByActiveCard returns the account of an active, unexpired card', async () => {
      assert.deepEqual(await find('findByActiveCard', { CardNumber: '4000000000000002' }), {
        AccountNumber: account(1),
        MessageId: 'findByActiveCard',
      });
    });

    test('findByActiveCard returns null for inactive, expired and unknown cards', async () => {
      for (const CardNumber of ['4000000000000010', '4000000000000028', '4111111111111111']) {
        assert.deepEqual(await find('findByActiveCard', { CardNumber }), {
          AccountNumber: null,
          MessageId: 'findByActiveCard',
        });
      }
    });

    test('findByActiveCard picks the active holder of a reissued number', async () => {
      assert.equal((await find('findByActiveCard', { CardNumber: '4000000000000036' })).AccountNumber, account(5));
    });

    test('findByAnyCard returns every account with the card, active or not, with Version_1 and _value_1', async () => {
      assert.deepEqual(await find('findByAnyCard', { CardNumber: '4000000000000036' }), {
        AccountNumber: [account(4), account(5)],
        MessageId: 'findByAnyCard',
        Version_1: null,
        _value_1: null,
      });
      assert.deepEqual((await find('findByAnyCard', { CardNumber: '4000000000000028' })).AccountNumber, [account(3)]);
    });

    test('findByAnyCard returns an empty array when nothing matches', async () => {
      assert.deepEqual((await find('findByAnyCard', { CardNumber: '4111111111111111' })).AccountNumber, []);
    });

    test('findByHomeUser matches the user name case-insensitively', async () => {
      assert.deepEqual(await find('findByHomeUser', { HomeBankingUserName: 'jsmith42' }), {
        AccountNumber: account(6),
        MessageId: 'findByHomeUser',
      });
      assert.equal((await find('findByHomeUser', { HomeBankingUserName: 'nobody' })).AccountNumber, null);
    });

    test('findByMICR returns the share of a MICR number and draft', async () => {
      assert.deepEqual(await find('findByMICR', { MICR: '123456789012', Draft: '1' }), {
        Result: { AccountNumber: account(7), IdType: 'SHARE', Id: '0010' },
        MessageId: 'findByMICR',
      });
    });

    test('findByMICR returns a null Result for an unknown MICR or another draft', async () => {
      for (const body of [
        { MICR: '123456789012', Draft: '2' },
        { MICR: '999999999999', Draft: '1' },
      ]) {
        assert.deepEqual(await find('findByMICR', body), { Result: null, MessageId: 'findByMICR' });
      }
    });

    test('findByLookup returns the account and share of a lookup record', async () => {
      assert.deepEqual(await find('findByLookup', { LookupType: 5, LookupNumber: 'EMP-100' }), {
        Result: { AccountNumber: account(8), IdType: 'SHARE', Id: '0001' },
        AccountNumber: account(8),
        MessageId: 'findByLookup',
      });
    });

    test('findByLookup reports IdType NONE when the lookup names no share', async () => {
      assert.deepEqual(await find('findByLookup', { LookupType: 5, LookupNumber: 'EMP-200' }), {
        Result: { AccountNumber: account(9), IdType: 'NONE', Id: null },
        AccountNumber: account(9),
        MessageId: 'findByLookup',
      });
    });

    test('findByLookup returns nulls when nothing matches', async () => {
      assert.deepEqual(await find('findByLookup', { LookupType: 6, LookupNumber: 'EMP-100' }), {
        Result: null,
        AccountNumber: null,
        MessageId: 'findByLookup',
      });
    });

    test('findBySSN returns distinct accounts in ascending order, from account- and share-level names', async () => {
      assert.deepEqual(await find('findBySSN', { SSN: '123456789' }), {
        AccountNumber: [account(10), account(11)],
        MessageId: 'findBySSN',
      });
      assert.deepEqual((await find('findBySSN', { SSN: '987654321' })).AccountNumber, [account(10)]);
      assert.deepEqual((await find('findBySSN', { SSN: '000000000' })).AccountNumber, []);
    });

    test('findBySSN takes the SSN as the core does, exactly 9 characters: dashes are a 400', async () => {
      const response = await h.call(`${P1}/findBySSN`, { SSN: '987-65-4321' });
      assert.equal(response.statusCode, 400);
      assert.deepEqual(response.json().errors, [{ pointer: '/SSN', detail: 'must NOT have more than 9 characters' }]);
    });

    test('findByShortName matches case-insensitively and returns only AccountNumber', async () => {
      assert.deepEqual(await find('findByShortName', { ShortName: 'Smith J' }), {
        AccountNumber: [account(10), account(11), account(12)],
      });
      assert.deepEqual(await find('findByShortName', { ShortName: 'NOBODY' }), { AccountNumber: [] });
    });

    test('findBySSN stops at the configured list maximum', async () => {
      const limited = await createHarness(backend, { listMaximum: 1 });
      try {
        await loadFixtures(limited);
        const response = await limited.call(`${P1}/findBySSN`, { SSN: '123456789' });
        assert.deepEqual(response.json().AccountNumber, [account(10)]);
      } finally {
        await limited.close();
      }
    });
  });
}
