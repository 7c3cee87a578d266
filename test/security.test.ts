/**
 * Security (DESIGN: "Authentication and authorization", "Sensitive data"): every route refuses each kind
 * of bad caller, members are confined to their own account, sessions expire and belong to the token that
 * logged on, passwords lock out per caller (the admin password with backoff, without a scrypt per guess),
 * tokens are rate limited across instances, and no card number or SSN is stored or logged in clear.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import type { TSchema } from 'typebox';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { sql } from 'kysely';
import { fieldOf, recordDef, RECORDS } from '../src/catalog/index.js';
import { updatableFieldsName } from '../src/catalog/schemas.js';
import { OPERATIONS } from '../src/operations/index.js';
import { locatorName } from '../src/operations/share-update.js';
import { operationPath, type AnyOperation } from '../src/operations/types.js';
import { Authenticator, lockoutSubject } from '../src/security/authenticator.js';
import { createJwtVerifier } from '../src/security/jwt.js';
import { hashPassword, verifyPassword } from '../src/crypto/passwords.js';
import { redisRateLimiter } from '../src/security/rate-limit.js';
import { buildApp } from '../src/http/app.js';
import { generateAccount } from '../src/seed/generate.js';
import { seedDatabase } from '../src/seed/load.js';
import { demoMemberSecret, seedMemberSecrets } from '../src/seed/member-secrets.js';
import { lockouts, users } from '../src/store/access.js';
import { lookups } from '../src/store/lookups.js';
import { readAudit } from '../src/store/audit.js';
import { recordTree } from '../src/store/record-tree.js';
import { adminCredentials, BACKENDS, createHarness, type Harness } from './support/harness.js';
import { insert } from './support/fixtures.js';
import { clearPans, clearSsns } from './support/sensitive.js';

const ACCOUNT_1 = '0000000001';
const ACCOUNT_2 = '0000000002';
const MEMBER_1_CARD = '4000000000000101';
const MEMBER_2_CARD = '4000000000000200';
const memberOf = (account: string) => ({
  AccountNumberCredentials: {
    AccountNumber: account,
    HomeBankingPassword: demoMemberSecret(account).homeBankingPassword,
  },
});

/** A body that passes validation for an operation, acting on account 1 where it names one. */
function validBody(operation: AnyOperation): Record<string, unknown> {
  switch (operation.service) {
    case 'findby':
      return {
        findByActiveCard: { CardNumber: MEMBER_1_CARD },
        findByAnyCard: { CardNumber: MEMBER_1_CARD },
        findByHomeUser: { HomeBankingUserName: 'someone' },
        findByMICR: { MICR: '123456789', Draft: '1' },
        findByLookup: { LookupType: 1, LookupNumber: 'X' },
        findBySSN: { SSN: '123456789' },
        findByShortName: { ShortName: 'SMITH J' },
      }[operation.name]!;
    case 'corptransfer':
      return { CorpTransferGlobalSequenceDate: '2024-01-01', CorpTransferGlobalSequence: 1 };
    case 'account': {
      // A read (get<Record>SelectFields, …) names its record or parent as its update does.
      if (!operation.name.startsWith('update'))
        return Object.fromEntries(
          Object.entries<TSchema>(operation.request)
            .filter(([, schema]) => !('~optional' in schema))
            .map(([name]) => [name, { AccountNumber: ACCOUNT_1, ShareId: '0000' }[name] ?? 1]),
        );
      const record = recordDef(operation.name.replace(/^update|ByID$/g, ''));
      const field = record.fields.find(
        (f) => f.families.includes(operation.family) && !f.readOnly && !f.repeating && !f.pattern,
      )!;
      const value = { string: 'X', integer: 1, money: 1, rate: 1, date: '2024-01-01' }[field.kind];
      const locator = locatorName(record);
      return {
        AccountNumber: ACCOUNT_1,
        ShareId: '0000',
        ...(locator ? { [locator]: 1 } : {}),
        [updatableFieldsName(record, operation.family)]: { [field.name]: value },
      };
    }
    case 'collateral':
      return Object.fromEntries(
        Object.entries<TSchema>(operation.request)
          .filter(([, schema]) => !('~optional' in schema))
          .map(([name]) => [name, name === 'CollateralNumber' ? '7000000011' : 1]),
      );
    case 'usermanagement':
      return {};
  }
}

/** Credentials of the right kind for the operation, but with a wrong secret. */
function wrongCredentials(operation: AnyOperation): Record<string, unknown> {
  if (operation.name === 'logon') return { UserNumberCredentials: { UserNumber: 7, Password: 'wrong' } };
  if (operation.name === 'logoff') return { TokenCredentials: { TokenId: 'no-such-session' } };
  return { AdministrativeCredentials: { Password: 'wrong' } };
}

for (const backend of BACKENDS) {
  describe(`security on ${backend.name}`, () => {
    let h: Harness;
    before(async () => {
      h = await createHarness(backend, { lockoutThreshold: 3, lockoutSeconds: 2, sessionIdleSeconds: 2 });
      await seedDatabase(h.database, h.secrets, { accounts: 3, seed: 627 });
      await seedMemberSecrets(h.database.db, 3);
      await users.add(h.database.db, 7, 'Teller 7', await hashPassword('teller-7'));
      await insert(h.database.db, h.secrets, 'Card', [
        {
          keys: { account_number: ACCOUNT_1 },
          Locator: 90,
          CardNumber: MEMBER_1_CARD,
          Status: 0,
          ExpirationDate: '2099-12-31',
        },
        {
          keys: { account_number: ACCOUNT_2 },
          Locator: 90,
          CardNumber: MEMBER_2_CARD,
          Status: 0,
          ExpirationDate: '2099-12-31',
        },
      ]);
      await insert(h.database.db, h.secrets, 'Lookup', [
        { keys: { account_number: ACCOUNT_1 }, Locator: 90, LookupType: 7, LookupNumber: 'MEMBER-1' },
      ]);
    });
    after(() => h.close());

    const post = (path: string, body: Record<string, unknown>, authorization: string | null = `Bearer ${h.token}`) =>
      h.app.inject({
        method: 'POST',
        url: path,
        headers: { 'content-type': 'application/json', ...(authorization ? { authorization } : {}) },
        payload: JSON.stringify(body),
      });
    const expect = (
      response: { statusCode: number; json(): { code: string } },
      status: number,
      code: string,
      label: string,
    ) => {
      assert.equal(response.statusCode, status, `${label}: ${JSON.stringify(response.json())}`);
      assert.equal(response.json().code, code, label);
    };

    describe('every route refuses every kind of bad caller', () => {
      let narrowToken: string;
      before(async () => (narrowToken = await h.tokenWith(['corptransfer:read'])));

      test('the matrix covers every operation route of the OpenAPI document (the admin routes: test/admin-api.test.ts)', async () => {
        const document = (await h.app.inject({ method: 'GET', url: '/openapi.json' })).json();
        const paths = Object.keys(document.paths);
        assert.deepEqual(
          paths.filter((path) => !path.startsWith('/admin/')).sort(),
          OPERATIONS.map((op) => operationPath(op)).sort(),
        );
      });

      for (const operation of OPERATIONS) {
        const path = operationPath(operation);
        const label = `${operation.family} ${operation.name}`;
        test(`${label}: no bearer 401, bad bearer 401, wrong scope 403, no credentials 400, wrong secret 403, other member 403`, async () => {
          const body = validBody(operation);
          expect(
            await post(path, { Credentials: adminCredentials, ...body }, null),
            401,
            'UNAUTHENTICATED',
            'no bearer',
          );
          expect(
            await post(path, { Credentials: adminCredentials, ...body }, 'Bearer cg_forged'),
            401,
            'UNAUTHENTICATED',
            'bad bearer',
          );
          if (operation.scope && operation.scope !== 'corptransfer:read') {
            expect(
              await post(path, { Credentials: adminCredentials, ...body }, `Bearer ${narrowToken}`),
              403,
              'FORBIDDEN',
              'wrong scope',
            );
          }
          expect(await post(path, body), 400, 'VALIDATION_FAILED', 'no credentials');
          expect(
            await post(path, { Credentials: wrongCredentials(operation), ...body }),
            403,
            'FORBIDDEN',
            'wrong secret',
          );
          expect(
            await post(path, { Credentials: memberOf(ACCOUNT_2), ...body }),
            403,
            'FORBIDDEN',
            "another member's credentials",
          );
        });
      }
    });

    describe('member confinement', () => {
      const hold = recordDef('ShareHold');
      const holdPath = '/gw/627/2022.01/account/updateShareHoldByID';
      const reference = async () =>
        (await recordTree.read(
          h.database.db,
          { record: hold, fields: [fieldOf(hold, 'Reference1')!] },
          { account_number: ACCOUNT_1, locator: 1 },
        ))!.Reference1;
      const holdBody = (value: string) => ({
        AccountNumber: ACCOUNT_1,
        ShareId: '0000',
        ShareHoldLocator: 1,
        ShareHoldUpdatableFields: { Reference1: value },
      });

      test("a member's CardCredentials cannot update another member's share: 403, nothing changed, audited", async () => {
        const before = await reference();
        const response = await h.call(holdPath, {
          ...holdBody('INTRUDER'),
          Credentials: { CardCredentials: { CardNumber: MEMBER_2_CARD } },
        });
        expect(response, 403, 'FORBIDDEN', 'other member');
        assert.equal(await reference(), before);
        await h.app.audit.flush();
        const rows = await readAudit(h.database.db, new Date(Date.now() - 60_000), { accountNumber: ACCOUNT_1 });
        const denied = rows.find((r) => r.requestId === response.headers['x-request-id']);
        assert.ok(denied, 'an audit row for the denied call');
        assert.equal(denied.status, 403);
        assert.equal(denied.code, 'FORBIDDEN');
        assert.equal(denied.memberAccount, ACCOUNT_2);
        assert.equal(denied.operation, 'P2:updateShareHoldByID');
        assert.equal(denied.tokenName, 'test');
      });

      test('member credentials of every kind reach their own account', async () => {
        const micrOf1 = await sql<{
          n: number;
        }>`select count(*) as n from micr where account_number = ${ACCOUNT_1}`.execute(h.database.db);
        const credentials = [
          { CardCredentials: { CardNumber: MEMBER_1_CARD } },
          memberOf(ACCOUNT_1),
          {
            AccountNumberCredentials: {
              AccountNumber: ACCOUNT_1,
              AudioAccessCode: demoMemberSecret(ACCOUNT_1).audioAccessCode,
            },
          },
        ];
        for (const [i, Credentials] of credentials.entries()) {
          const response = await h.call(holdPath, { ...holdBody(`MEMBER ${i}`), Credentials });
          assert.equal(response.statusCode, 200, `${JSON.stringify(Credentials)}: ${response.body}`);
          assert.equal(await reference(), `MEMBER ${i}`);
        }
        assert.ok(Number(micrOf1.rows[0]!.n) >= 0);
      });

      test('a member proves who they are with a home-banking password or an audio code, never both (the core takes one)', async () => {
        const { homeBankingPassword, audioAccessCode } = demoMemberSecret(ACCOUNT_1);
        const both = await h.call(holdPath, {
          ...holdBody('BOTH SECRETS'),
          Credentials: {
            AccountNumberCredentials: {
              AccountNumber: ACCOUNT_1,
              HomeBankingPassword: homeBankingPassword,
              AudioAccessCode: audioAccessCode,
            },
          },
        });
        expect(both, 400, 'VALIDATION_FAILED', 'both secrets');
        assert.deepEqual(
          both.json().errors.map((e: { pointer: string }) => e.pointer),
          ['/Credentials/AccountNumberCredentials/AudioAccessCode'],
        );
        const lookup = (secret: Record<string, string>) =>
          h.call(holdPath, {
            ...holdBody('BY LOOKUP'),
            Credentials: { LookupCredentials: { Type: 7, Value: 'MEMBER-1', ...secret } },
          });
        assert.equal((await lookup({ AudioAccessCode: audioAccessCode })).statusCode, 200);
        assert.equal((await lookup({ HomeBankingPassword: homeBankingPassword })).statusCode, 200);
        expect(await lookup({}), 400, 'VALIDATION_FAILED', 'no secret');
      });

      test("a second factor passes with the member's SSN or its last four digits; any other, or a second password the store cannot check, is 403", async () => {
        const [ssn] = await lookups.accountSsns(h.database.db, h.secrets, ACCOUNT_1);
        assert.ok(ssn, 'account 1 has a name record with an SSN');
        const other = ssn === '000000001' ? '000000002' : '000000001';
        const withSecond = (SecondaryVerification: Record<string, string>) =>
          h.call(holdPath, {
            ...holdBody('SECOND FACTOR'),
            Credentials: {
              AccountNumberCredentials: { ...memberOf(ACCOUNT_1).AccountNumberCredentials, SecondaryVerification },
            },
          });
        assert.equal((await withSecond({ SocialSecurityNumber: ssn })).statusCode, 200);
        assert.equal((await withSecond({ SSNLastFourDigits: ssn.slice(-4) })).statusCode, 200);
        expect(await withSecond({ SocialSecurityNumber: other }), 403, 'FORBIDDEN', 'another SSN');
        expect(await withSecond({ SecondaryHomeBankingPassword: 'anything' }), 403, 'FORBIDDEN', 'a second password');
        await lockouts.clear(
          h.database.db,
          lockoutSubject(`account:${ACCOUNT_1}:password`, { tokenName: 'test', address: '127.0.0.1' }),
        );
      });

      test('member credentials naming two different accounts are refused', async () => {
        const response = await h.call(holdPath, {
          ...holdBody('BOTH'),
          Credentials: { ...memberOf(ACCOUNT_1), CardCredentials: { CardNumber: MEMBER_2_CARD } },
        });
        expect(response, 403, 'FORBIDDEN', 'mixed members');
      });

      test('FindBy rejects member-level credentials even for the member', async () => {
        const response = await h.call('/gw/627/persistent/findby/findByActiveCard', {
          CardNumber: MEMBER_1_CARD,
          Credentials: memberOf(ACCOUNT_1),
        });
        expect(response, 403, 'FORBIDDEN', 'member on findby');
      });
    });

    describe('sessions', () => {
      const FIND = '/gw/627/persistent/findby/findByShortName';
      const logon = async () => {
        const response = await h.call('/gw/627/persistent/usermanagement/logon', {
          Credentials: { UserNumberCredentials: { UserNumber: 7, Password: 'teller-7' } },
        });
        assert.equal(response.statusCode, 200, response.body);
        assert.equal(response.json().MessageId, 'logon');
        return response.json().TokenId as string;
      };

      test('logon returns a TokenId that TokenCredentials then use; it is stored hashed', async () => {
        const TokenId = await logon();
        const response = await h.call(FIND, { ShortName: 'X', Credentials: { TokenCredentials: { TokenId } } });
        assert.equal(response.statusCode, 200);
        const { rows } = await sql<{ hash: string }>`select encode(token_hash, 'hex') as hash from session`.execute(
          h.database.db,
        );
        assert.ok(
          rows.length > 0 &&
            rows.every((r) => r.hash.length === 64 && !r.hash.includes(Buffer.from(TokenId).toString('hex'))),
        );
      });

      test('logoff ends the session at once', async () => {
        const TokenId = await logon();
        const off = await h.call('/gw/627/persistent/usermanagement/logoff', {
          Credentials: { TokenCredentials: { TokenId } },
        });
        assert.deepEqual(off.json(), { MessageId: 'logoff' });
        expect(
          await h.call(FIND, { ShortName: 'X', Credentials: { TokenCredentials: { TokenId } } }),
          403,
          'FORBIDDEN',
          'after logoff',
        );
      });

      test('a session dies after the idle time', async () => {
        const TokenId = await logon();
        await new Promise((resolve) => setTimeout(resolve, 2300));
        expect(
          await h.call(FIND, { ShortName: 'X', Credentials: { TokenCredentials: { TokenId } } }),
          403,
          'FORBIDDEN',
          'idle',
        );
      });

      test('logon takes only UserNumberCredentials', async () => {
        expect(await h.call('/gw/627/persistent/usermanagement/logon', {}), 403, 'FORBIDDEN', 'admin logon');
      });

      test('a TokenId works only under the API token that logged on: under another it is refused like an unknown TokenId', async () => {
        const TokenId = await logon();
        const other = `Bearer ${await h.tokenWith(['findby'])}`;
        const find = (tokenId: string, authorization: string) =>
          post(FIND, { ShortName: 'X', Credentials: { TokenCredentials: { TokenId: tokenId } } }, authorization);
        const foreign = await find(TokenId, other);
        const unknown = await find('no-such-session', other);
        expect(foreign, 403, 'FORBIDDEN', 'another token');
        assert.deepEqual(foreign.json(), unknown.json(), 'no hint that the TokenId exists');
        const logoff = await post(
          '/gw/627/persistent/usermanagement/logoff',
          { Credentials: { TokenCredentials: { TokenId } } },
          other,
        );
        expect(logoff, 403, 'FORBIDDEN', 'logoff under another token');
        assert.equal((await find(TokenId, `Bearer ${h.token}`)).statusCode, 200, 'still live under its own token');
      });
    });

    describe('lockout', () => {
      const FIND = '/gw/627/persistent/findby/findByShortName';
      test('repeated wrong passwords lock a user number, which the right password then cannot open until it expires', async () => {
        await users.add(h.database.db, 8, 'Teller 8', await hashPassword('teller-8'));
        const as = (Password: string) =>
          h.call(FIND, { ShortName: 'X', Credentials: { UserNumberCredentials: { UserNumber: 8, Password } } });
        for (let i = 0; i < 3; i += 1) expect(await as('guess'), 403, 'FORBIDDEN', `guess ${i}`);
        expect(await as('teller-8'), 403, 'FORBIDDEN', 'locked');
        await new Promise((resolve) => setTimeout(resolve, 2200));
        assert.equal((await as('teller-8')).statusCode, 200);
      });

      test('repeated wrong passwords lock a member credential', async () => {
        const holdPath = '/gw/627/2022.01/account/updateShareHoldByID';
        const body = {
          AccountNumber: ACCOUNT_2,
          ShareId: '0000',
          ShareHoldLocator: 1,
          ShareHoldUpdatableFields: { Reference2: 'Y' },
        };
        const as = (HomeBankingPassword: string) =>
          h.call(holdPath, {
            ...body,
            Credentials: { AccountNumberCredentials: { AccountNumber: ACCOUNT_2, HomeBankingPassword } },
          });
        for (let i = 0; i < 3; i += 1) expect(await as('guess'), 403, 'FORBIDDEN', `guess ${i}`);
        expect(await as(demoMemberSecret(ACCOUNT_2).homeBankingPassword), 403, 'FORBIDDEN', 'locked');
      });

      test('only failures in a row lock: a success starts the count again', async () => {
        await users.add(h.database.db, 9, 'Teller 9', await hashPassword('teller-9'));
        const as = (Password: string) =>
          h.call(FIND, { ShortName: 'X', Credentials: { UserNumberCredentials: { UserNumber: 9, Password } } });
        for (let round = 0; round < 3; round += 1) {
          for (let i = 0; i < 2; i += 1)
            expect(await as(`guess ${round}.${i}`), 403, 'FORBIDDEN', `guess ${round}.${i}`);
          assert.equal((await as('teller-9')).statusCode, 200, `round ${round}`);
        }
      });
    });

    describe('administrative password throttle', () => {
      const FIND = '/gw/627/persistent/findby/findByShortName';
      const asAdmin = (token: string, Password: string) =>
        post(FIND, { ShortName: 'X', Credentials: { AdministrativeCredentials: { Password } } }, `Bearer ${token}`);
      /**
       * An Authenticator on the suite's database that counts its scrypt checks and refuses at once (the time a
       * refusal takes is test/lockout.test.ts's).
       */
      const countingAuthenticator = (lockoutThreshold: number) => {
        const counter = { scrypts: 0 };
        const authenticator = new Authenticator(
          h.database.db,
          h.secrets,
          { ...h.config, lockoutThreshold, credentialRefusalMs: 0 },
          {
            verifyPassword: (password, stored) => {
              counter.scrypts += 1;
              return verifyPassword(password, stored);
            },
          },
        );
        const asAdminUnder = (tokenName: string, Password: string) =>
          authenticator.verifyCredentials(
            { AdministrativeCredentials: { Password } },
            ['AdministrativeCredentials'],
            tokenName,
            '127.0.0.1',
          );
        return { counter, asAdminUnder };
      };

      test('wrong passwords lock it under that token: the right one is refused during the backoff and accepted after it', async () => {
        const guesser = await h.tokenWith(['findby']);
        for (let i = 0; i < 3; i += 1) expect(await asAdmin(guesser, `guess ${i}`), 403, 'FORBIDDEN', `guess ${i}`);
        expect(await asAdmin(guesser, 'test-admin-password'), 403, 'FORBIDDEN', 'during the backoff, a plain 403');
        await new Promise((resolve) => setTimeout(resolve, 1_100));
        assert.equal((await asAdmin(guesser, 'test-admin-password')).statusCode, 200, 'after the first lock (1 s)');
      });

      test("one token's guesses never lock the password for another token", async () => {
        const guesser = await h.tokenWith(['findby']);
        const bystander = await h.tokenWith(['findby']);
        for (let i = 0; i < 4; i += 1) expect(await asAdmin(guesser, `guess ${i}`), 403, 'FORBIDDEN', `guess ${i}`);
        expect(await asAdmin(guesser, 'test-admin-password'), 403, 'FORBIDDEN', 'the guesser is locked');
        assert.equal((await asAdmin(bystander, 'test-admin-password')).statusCode, 200);
      });

      test('each further lock before a success lasts twice as long, up to COREGATE_LOCKOUT_SECONDS; a success clears them', async () => {
        const subject = `backoff-test:${backend.name}`;
        const lockedFor = async () => {
          const { rows } = await sql<{
            seconds: number;
          }>`select extract(epoch from locked_until - now())::float8 as seconds
            from credential_lockout where subject = ${subject}`.execute(h.database.db);
          return Math.round(rows[0]!.seconds);
        };
        const seconds = [];
        for (let lock = 0; lock < 5; lock += 1) {
          await lockouts.fail(h.database.db, subject, { threshold: 1, lockSeconds: 6, firstLockSeconds: 1 });
          seconds.push(await lockedFor());
        }
        assert.deepEqual(seconds, [1, 2, 4, 6, 6]);
        await lockouts.clear(h.database.db, subject);
        await lockouts.fail(h.database.db, subject, { threshold: 1, lockSeconds: 6, firstLockSeconds: 1 });
        assert.equal(await lockedFor(), 1);
      });

      test('a throttled attempt is refused without running scrypt', async () => {
        const { counter, asAdminUnder } = countingAuthenticator(3);
        const token = `throttled-${backend.name}`;
        for (let i = 0; i < 3; i += 1) await assert.rejects(asAdminUnder(token, `guess ${i}`), { status: 403 });
        assert.equal(counter.scrypts, 3);
        // Together, as the first lock lasts only 1 s.
        await Promise.all(
          Array.from({ length: 10 }, (_, i) =>
            assert.rejects(asAdminUnder(token, i % 2 ? 'test-admin-password' : `more ${i}`), { status: 403 }),
          ),
        );
        assert.equal(counter.scrypts, 3, 'no scrypt while locked');
      });

      test('a repeated wrong password costs one scrypt, not one per attempt', async () => {
        const { counter, asAdminUnder } = countingAuthenticator(1_000);
        const token = `repeated-${backend.name}`;
        for (let i = 0; i < 50; i += 1)
          await assert.rejects(asAdminUnder(token, 'the same wrong password'), { status: 403 });
        assert.equal(counter.scrypts, 1);
        await assert.rejects(asAdminUnder(token, 'another wrong password'), { status: 403 });
        assert.equal(counter.scrypts, 2, 'a different password is checked');
        for (let i = 0; i < 5; i += 1) assert.equal((await asAdminUnder(token, 'test-admin-password')).userNumber, 0);
        assert.equal(counter.scrypts, 3, 'the right one is checked once too');
      });

      test('calls with the same credentials that arrive together share one scrypt, right or wrong', async () => {
        const { counter, asAdminUnder } = countingAuthenticator(1_000);
        const token = `together-${backend.name}`;
        const right = await Promise.all(Array.from({ length: 20 }, () => asAdminUnder(token, 'test-admin-password')));
        assert.ok(right.every((caller) => caller.userNumber === 0));
        assert.equal(counter.scrypts, 1);
        const wrong = await Promise.allSettled(
          Array.from({ length: 20 }, () => asAdminUnder(token, 'wrong, together')),
        );
        assert.ok(wrong.every((outcome) => outcome.status === 'rejected'));
        assert.equal(counter.scrypts, 2);
      });

      test('a bearer name too long for the lockout subject column is hashed, so it neither fails nor collides', () => {
        const under = (tokenName: string) => lockoutSubject('admin', { tokenName, address: '127.0.0.1' });
        const long = (tail: string) => `jwt:${'s'.repeat(200)}${tail}`;
        assert.equal(under('test'), 'admin@127.0.0.1/test');
        assert.ok(under(long('a')).length <= 160);
        assert.notEqual(under(long('a')), under(long('b')));
      });
    });

    test('every response carries the security headers', async () => {
      const response = await h.call('/gw/627/persistent/findby/findByShortName', { ShortName: 'X' });
      for (const [name, value] of Object.entries({
        'x-content-type-options': 'nosniff',
        'x-frame-options': 'DENY',
        'content-security-policy': "default-src 'none'; frame-ancestors 'none'",
        'cache-control': 'no-store',
        'referrer-policy': 'no-referrer',
      })) {
        assert.equal(response.headers[name], value, name);
      }
    });

    test('the logs hold requests but never the bearer token or passwords', async () => {
      await h.call('/gw/627/persistent/findby/findBySSN', { SSN: '123-45-6789' });
      const logs = h.logs().join('\n');
      assert.ok(h.logs().length > 0);
      assert.ok(!logs.includes(h.token));
      assert.ok(!logs.includes('test-admin-password'));
    });
  });
}

describe('rate limits', () => {
  test('a token over its limit gets 429 with Retry-After, and FindBy has a stricter limit', async () => {
    const h = await createHarness({ name: 'pglite' }, { rateLimitPerMinute: 6, findByRateLimitPerMinute: 3 });
    try {
      const find = () => h.call('/gw/627/persistent/findby/findByShortName', { ShortName: 'X' });
      const statuses = [];
      for (let i = 0; i < 4; i += 1) statuses.push((await find()).statusCode);
      assert.deepEqual(statuses, [200, 200, 200, 429]);
      const refused = await find();
      assert.equal(refused.json().code, 'RATE_LIMITED');
      assert.ok(Number(refused.headers['retry-after']) >= 1);
      const other = await h.call('/gw/627/persistent/corptransfer/getCorpTransferSelectFields', {
        CorpTransferGlobalSequenceDate: '2024-01-01',
        CorpTransferGlobalSequence: 1,
      });
      assert.equal(other.statusCode, 404, 'the general budget is not spent yet');
    } finally {
      await h.close();
    }
  });

  test('limits hold across two instances sharing Redis', async (t) => {
    const url = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
    const prefix = `coregate:test:${process.pid}:${Date.now()}:`;
    const failedOpen: unknown[] = [];
    const limiterOptions = { prefix, timeoutMs: 1000, onError: (error: unknown) => failedOpen.push(error) };
    const probe = redisRateLimiter(url, limiterOptions);
    const reachable = await probe.hit('probe', { limit: 1000, windowSeconds: 1 }).then(() => true);
    if (!reachable) return t.skip('Redis is not reachable');
    const first = await createHarness({ name: 'pglite' }, { rateLimitPerMinute: 10 }, { limiter: probe });
    const secondLimiter = redisRateLimiter(url, limiterOptions);
    // A limiter lets requests through until its connection is up (it never blocks the API): warm it.
    await new Promise((resolve) => setTimeout(resolve, 300));
    await secondLimiter.hit('warm-up', { limit: 1000, windowSeconds: 1 });
    const second = await buildApp({
      db: first.database.db,
      databaseKind: first.database.kind,
      secrets: first.secrets,
      config: first.config,
      limiter: secondLimiter,
    });
    // Started before the count begins: a window of 10 a minute refills a slot every 6 s, which is less
    // than the first request of an app that is not ready yet can take on a loaded machine.
    await second.ready();
    try {
      const request = (app: typeof second) =>
        app.inject({
          method: 'POST',
          url: '/gw/627/persistent/findby/findByShortName',
          headers: { authorization: `Bearer ${first.token}`, 'content-type': 'application/json' },
          payload: JSON.stringify({ Credentials: adminCredentials, ShortName: 'X' }),
        });
      // Alternating between the instances; concurrent atomicity of the shared counter is covered in rate-limit.test.ts.
      const responses = [];
      for (let i = 0; i < 24; i += 1) responses.push(await request(i % 2 ? second : first.app));
      assert.deepEqual(failedOpen.map(String), [], 'no hit fell back to letting the request through');
      assert.equal(responses.filter((r) => r.statusCode === 200).length, 10);
      assert.equal(responses.filter((r) => r.statusCode === 429).length, 14);
    } finally {
      await second.close();
      await secondLimiter.close();
      await first.close();
      await probe.close();
    }
  });
});

describe('JWT bearer tokens from an identity provider', () => {
  let server: Server;
  let h: Harness;
  let sign: (claims: Record<string, unknown>) => Promise<string>;
  before(async () => {
    const { publicKey, privateKey } = await generateKeyPair('RS256');
    const jwk = { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' };
    server = createServer((_req, res) =>
      res.setHeader('content-type', 'application/json').end(JSON.stringify({ keys: [jwk] })),
    );
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const jwksUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/jwks`;
    sign = (claims) =>
      new SignJWT(claims)
        .setProtectedHeader({ alg: 'RS256', kid: 'k1' })
        .setIssuer('https://idp.test')
        .setAudience('coregate')
        .setSubject('lending-app')
        .setIssuedAt()
        .setExpirationTime('5m')
        .sign(privateKey);
    h = await createHarness(
      { name: 'pglite' },
      {},
      { jwt: createJwtVerifier({ jwksUrl, issuer: 'https://idp.test', audience: 'coregate' }) },
    );
  });
  after(async () => {
    await h.close();
    server.close();
  });

  const find = (token: string) =>
    h.app.inject({
      method: 'POST',
      url: '/gw/627/persistent/findby/findByShortName',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      payload: JSON.stringify({ Credentials: adminCredentials, ShortName: 'X' }),
    });

  test('a valid JWT with the scope is accepted and audited under its subject', async () => {
    const response = await find(await sign({ scope: 'findby' }));
    assert.equal(response.statusCode, 200, response.body);
    await h.app.audit.flush();
    const rows = await readAudit(h.database.db, new Date(Date.now() - 60_000));
    assert.ok(rows.some((r) => r.tokenName === 'jwt:lending-app' && r.status === 200));
  });

  test('a JWT without the scope is 403; one for another audience is 401', async () => {
    assert.equal((await find(await sign({ scope: 'collateral:read' }))).statusCode, 403);
    const foreign = await new SignJWT({ scope: 'findby' })
      .setProtectedHeader({ alg: 'HS256' })
      .setAudience('coregate')
      .setIssuer('https://idp.test')
      .setSubject('x')
      .setExpirationTime('5m')
      .sign(new TextEncoder().encode('k'.repeat(32)));
    assert.equal((await find(foreign)).statusCode, 401);
  });
});

describe('sensitive data at rest', () => {
  for (const backend of BACKENDS) {
    test(`after seeding on ${backend.name}, no table holds a Luhn-valid card number or an SSN in clear`, async () => {
      const h = await createHarness(backend);
      try {
        await seedDatabase(h.database, h.secrets, { accounts: 200, seed: 627 });
        const ssns = new Set<string>();
        for (let index = 1; index <= 200; index += 1) {
          for (const name of generateAccount(627, index).records.ShareName) ssns.add(String(name.values.Ssn));
        }
        for (const record of RECORDS) {
          const { rows } = await sql<{
            row: string;
          }>`select row_to_json(t)::text as row from ${sql.table(record.table)} t`.execute(h.database.db);
          const dump = rows.map((r) => r.row).join('\n');
          assert.deepEqual(clearPans(dump), [], `${record.table} holds card numbers`);
          assert.deepEqual(clearSsns(dump, ssns), [], `${record.table} holds SSNs`);
        }
      } finally {
        await h.close();
      }
    });
  }
});
