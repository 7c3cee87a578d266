/**
 * Password lockout per credential and caller (docs/decisions.md, "Security"): one caller's wrong guesses
 * (an address and a bearer token) lock a credential for that caller only, over real connections from
 * distinct loopback addresses and through the SOAP face's credentials mode; every caller's failures of one
 * credential slow its checks but never refuse the right password; lockout rows stay few under a flood of
 * made-up names and expire; after a burst of guesses, an unknown user, a locked one and a known user's wrong
 * password are refused after the same time.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { Agent, request } from 'node:http';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import { hashPassword } from '../src/crypto/passwords.js';
import { Authenticator, callerAddress, SLOWDOWN_BUCKETS } from '../src/security/authenticator.js';
import { memberSecrets, users } from '../src/store/access.js';
import type { Db } from '../src/database/database.js';
import { ADMIN_PASSWORD, BACKENDS, createHarness, type Harness } from './support/harness.js';

const FIND = '/gw/627/persistent/findby/findByShortName';
const HOLD = '/gw/627/2022.01/account/updateShareHoldByID';
const LOGON = '/gw/627/persistent/usermanagement/logon';
const FINDBY_NS = 'http://www.symxchange.generated.symitar.com/noncrud/findby';
const COMMON_NS = 'http://www.symxchange.generated.symitar.com/symxcommon';
const USER = 21;
const USER_PASSWORD = 'teller-21';
const MEMBER = '0000000009';
const MEMBER_PASSWORD = 'member-9';
/** Loopback addresses Linux answers from without configuration: each is another caller. */
const ADDRESS_A = '127.0.0.2';
const ADDRESS_B = '127.0.0.3';
/** Failures in a row that lock a credential for the caller, in the suites here. */
const THRESHOLD = 3;

interface Answer {
  readonly status: number;
  readonly text: string;
  readonly requestId: string;
}

/** HTTP clients bound to a local address each, so the service sees calls from that address. */
class Callers {
  private readonly agents = new Map<string, Agent>();

  constructor(readonly base: URL) {}

  post(from: string, path: string, body: string, headers: Record<string, string>): Promise<Answer> {
    let agent = this.agents.get(from);
    if (!agent) this.agents.set(from, (agent = new Agent({ keepAlive: true })));
    const { hostname: host, port } = this.base;
    return new Promise((resolve, reject) => {
      const call = request({ host, port, path, method: 'POST', headers, agent, localAddress: from }, (response) => {
        let text = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => (text += chunk));
        response.on('end', () =>
          resolve({ status: response.statusCode!, text, requestId: String(response.headers['x-request-id']) }),
        );
      });
      call.on('error', reject);
      call.end(body);
    });
  }

  /** A JSON call with `Credentials` under the bearer `token`, from the address `from`. */
  json(from: string, token: string, path: string, body: Record<string, unknown>): Promise<Answer> {
    return this.post(from, path, JSON.stringify(body), {
      authorization: `Bearer ${token}`,
      'content-type': 'application/json',
    });
  }

  close(): void {
    for (const agent of this.agents.values()) agent.destroy();
  }
}

/** A findBySSN SOAP envelope carrying the administrative password. */
const findBySsnEnvelope = (password: string) => `<?xml version="1.0" encoding="UTF-8"?>
<soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/" xmlns:fin="${FINDBY_NS}" xmlns:cmn="${COMMON_NS}">
  <soapenv:Body>
    <fin:findBySSN>
      <Request cmn:MessageId="lockout">
        <SSN>123456789</SSN>
        <Credentials><AdministrativeCredentials><Password>${password}</Password></AdministrativeCredentials></Credentials>
      </Request>
    </fin:findBySSN>
  </soapenv:Body>
</soapenv:Envelope>`;

/** A credential kind, its right and a wrong secret, and the call that presents it. */
interface CredentialCase {
  readonly name: string;
  readonly path: string;
  readonly body: (secret: string) => Record<string, unknown>;
  readonly right: string;
}

const CASES: readonly CredentialCase[] = [
  {
    name: 'the administrative password',
    path: FIND,
    body: (Password) => ({ ShortName: 'X', Credentials: { AdministrativeCredentials: { Password } } }),
    right: ADMIN_PASSWORD,
  },
  {
    name: 'a user number',
    path: FIND,
    body: (Password) => ({ ShortName: 'X', Credentials: { UserNumberCredentials: { UserNumber: USER, Password } } }),
    right: USER_PASSWORD,
  },
  {
    name: "a member's home-banking password",
    path: HOLD,
    body: (HomeBankingPassword) => ({
      AccountNumber: MEMBER,
      ShareId: '0000',
      ShareHoldLocator: 1,
      ShareHoldUpdatableFields: { Reference2: 'Y' },
      Credentials: { AccountNumberCredentials: { AccountNumber: MEMBER, HomeBankingPassword } },
    }),
    right: MEMBER_PASSWORD,
  },
];

/** Through the credentials check: the call went on (200, or 404 for a share hold the store does not have). */
const admitted = (answer: Answer) => answer.status === 200 || answer.status === 404;

const median = (values: readonly number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

const rowCount = async (db: Db, table: 'credential_lockout' | 'credential_slowdown', where = sql`true`) => {
  const { rows } = await sql<{
    count: number;
  }>`select count(*)::int as count from ${sql.table(table)} where ${where}`.execute(db);
  return rows[0]!.count;
};

for (const backend of BACKENDS) {
  describe(`password lockout on ${backend.name}`, () => {
    let h: Harness;
    let callers: Callers;
    before(async () => {
      h = await createHarness(backend, { lockoutThreshold: THRESHOLD, lockoutSeconds: 2, soapAuth: 'credentials' });
      await users.add(h.database.db, USER, 'Teller 21', await hashPassword(USER_PASSWORD));
      await memberSecrets.set(h.database.db, MEMBER, { homeBankingPasswordHash: await hashPassword(MEMBER_PASSWORD) });
      callers = new Callers(new URL(await h.app.listen({ port: 0, host: '127.0.0.1' })));
    });
    after(async () => {
      callers.close();
      await h.close();
    });

    for (const credential of CASES) {
      test(`${credential.name}: one caller's wrong guesses lock it for that caller only; another address under the same token, or another token at the same address, still gets in`, async () => {
        const [token, otherToken] = [
          await h.tokenWith(['findby', 'share:write']),
          await h.tokenWith(['findby', 'share:write']),
        ];
        const as = (from: string, bearer: string, secret: string) =>
          callers.json(from, bearer, credential.path, credential.body(secret));
        // Exactly the threshold: the administrative password's first lock lasts only 1 s.
        for (let i = 0; i < THRESHOLD; i += 1)
          assert.equal((await as(ADDRESS_A, token, `guess ${i}`)).status, 403, `guess ${i}`);
        assert.equal((await as(ADDRESS_A, token, credential.right)).status, 403, 'the guessing caller is locked');
        assert.ok(admitted(await as(ADDRESS_B, token, credential.right)), 'another address, the same token');
        assert.ok(admitted(await as(ADDRESS_A, otherToken, credential.right)), 'the same address, another token');
      });
    }

    test('the caller that guessed is refused with the plain 403 of a wrong password while locked, and gets in once the lock is over', async () => {
      const token = await h.tokenWith(['findby']);
      const [admin] = CASES;
      const as = (secret: string) => callers.json(ADDRESS_A, token, admin!.path, admin!.body(secret));
      const wrong = await as('guess 0');
      for (let i = 1; i < THRESHOLD; i += 1) await as(`guess ${i}`);
      const locked = await as(ADMIN_PASSWORD);
      assert.equal(locked.status, 403);
      assert.deepEqual(JSON.parse(locked.text), JSON.parse(wrong.text), 'nothing tells a lock from a wrong password');
      // The administrative password's first lock lasts 1 s.
      await new Promise((resolve) => setTimeout(resolve, 1_100));
      assert.equal((await as(ADMIN_PASSWORD)).status, 200);
    });

    test("with COREGATE_SOAP_AUTH=credentials, one address's wrong SOAP guesses of the administrative password do not lock it for another address", async () => {
      const soap = (from: string, password: string) =>
        callers.post(from, '/SymXchange/findby', findBySsnEnvelope(password), {
          'content-type': 'text/xml; charset=utf-8',
          soapaction: `${FINDBY_NS}/findBySSN`,
        });
      for (let i = 0; i < THRESHOLD; i += 1) {
        const guess = await soap(ADDRESS_A, `guess ${i}`);
        assert.equal(guess.status, 500, `guess ${i}`);
        assert.match(guess.text, /<code>FORBIDDEN<\/code>/);
      }
      assert.match(
        (await soap(ADDRESS_A, ADMIN_PASSWORD)).text,
        /<code>FORBIDDEN<\/code>/,
        'the guessing address is locked',
      );
      const other = await soap(ADDRESS_B, ADMIN_PASSWORD);
      assert.equal(other.status, 200, other.text);
    });

    /**
     * An Authenticator on the suite's database that forgets failures after 1 s and whose password check and
     * refusal answer at once (the rows, not time, are under test).
     */
    const quickAuthenticator = () =>
      new Authenticator(
        h.database.db,
        h.secrets,
        { ...h.config, lockoutThreshold: 1_000, lockoutSeconds: 1, credentialRefusalMs: 0 },
        { verifyPassword: async () => false },
      );
    const homeBanking = (authenticator: Authenticator, UserName: string, ip: string) =>
      authenticator.verifyCredentials(
        { HomeBankingCredentials: { UserName, Password: 'guess' } },
        ['HomeBankingCredentials'],
        'flood',
        ip,
      );
    const homeBankingSlowdowns = sql`credential like ${'homebanking#%'}`;

    test('a flood of made-up user names adds one lockout row for the caller and at most one slow-down row per bucket', async () => {
      const authenticator = quickAuthenticator();
      for (let i = 0; i < 400; i += 1) {
        await assert.rejects(homeBanking(authenticator, randomBytes(9).toString('base64url'), '192.0.2.10'), {
          status: 403,
        });
      }
      assert.equal(await rowCount(h.database.db, 'credential_lockout', sql`subject like ${'%@192.0.2.10/%'}`), 1);
      assert.ok((await rowCount(h.database.db, 'credential_slowdown', homeBankingSlowdowns)) <= SLOWDOWN_BUCKETS);
    });

    test('rows neither locked nor failed within the lockout time are swept, and slow-downs whose failures ran out', async () => {
      const authenticator = quickAuthenticator();
      for (let i = 0; i < 20; i += 1)
        await assert.rejects(homeBanking(authenticator, `gone-soon-${i}`, '192.0.2.20'), { status: 403 });
      const old = sql`subject like ${'%@192.0.2.20/%'}`;
      assert.equal(await rowCount(h.database.db, 'credential_lockout', old), 1);
      assert.ok((await rowCount(h.database.db, 'credential_slowdown', homeBankingSlowdowns)) > 1);
      // A slow-down runs at most two lockout times ahead.
      await new Promise((resolve) => setTimeout(resolve, 2_100));
      // A new Authenticator sweeps at its first failure.
      await assert.rejects(homeBanking(quickAuthenticator(), 'fresh', '192.0.2.30'), { status: 403 });
      assert.equal(await rowCount(h.database.db, 'credential_lockout', old), 0);
      assert.equal(await rowCount(h.database.db, 'credential_lockout', sql`subject like ${'%@192.0.2.30/%'}`), 1);
      // The fresh failure's own slow-down runs out a hundredth of the lockout time after it.
      assert.ok((await rowCount(h.database.db, 'credential_slowdown', homeBankingSlowdowns)) <= 1);
    });
  });

  describe(`lockouts seen by the operator, never by the caller, on ${backend.name}`, () => {
    let h: Harness;
    let callers: Callers;
    before(async () => {
      // Locks long enough that no slow machine sees one end within the test.
      h = await createHarness(backend, { lockoutThreshold: THRESHOLD, lockoutSeconds: 600, auditFlushMs: 0 });
      await users.add(h.database.db, USER, 'Teller 21', await hashPassword(USER_PASSWORD));
      callers = new Callers(new URL(await h.app.listen({ port: 0, host: '127.0.0.1' })));
    });
    after(async () => {
      callers.close();
      await h.close();
    });

    test("a locked caller's refusal is recorded as LOCKED_OUT naming the user, and the user list shows the lock and the failures; the caller's answer is a wrong password's", async () => {
      const token = await h.tokenWith(['findby']);
      const user = CASES[1]!;
      const as = (from: string, secret: string) => callers.json(from, token, user.path, user.body(secret));
      const wrong: Answer[] = [];
      for (let i = 0; i < THRESHOLD; i += 1) wrong.push(await as(ADDRESS_A, `guess ${i}`));
      const locked = await as(ADDRESS_A, USER_PASSWORD);
      assert.equal(locked.status, 403);
      assert.deepEqual(JSON.parse(locked.text), JSON.parse(wrong[0]!.text), 'the caller is told nothing more');
      // Another caller's wrong password counts towards its own lock: the list adds it up.
      assert.equal((await as(ADDRESS_B, 'guess 0')).status, 403);
      const recorded = async (requestId: string) => {
        for (;;) {
          const { rows } = await sql<{ code: string; user_number: number | null }>`
            select code, user_number from audit_event where request_id = ${requestId}`.execute(h.database.db);
          if (rows[0]) return rows[0];
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
      };
      assert.deepEqual(await recorded(locked.requestId), { code: 'LOCKED_OUT', user_number: USER });
      assert.equal((await recorded(wrong[0]!.requestId)).code, 'FORBIDDEN');
      const admin = await h.tokenWith(['admin']);
      const listed = await fetch(`${callers.base.href.replace(/\/$/, '')}/admin/users`, {
        headers: { authorization: `Bearer ${admin}` },
      });
      assert.equal(listed.status, 200);
      const { users: entries } = (await listed.json()) as {
        users: { userNumber: number; lockedUntil: string | null; failures: number }[];
      };
      const entry = entries.find((candidate) => candidate.userNumber === USER)!;
      assert.ok(entry.lockedUntil !== null && Date.parse(entry.lockedUntil) > Date.now(), String(entry.lockedUntil));
      // The lock set the guessing caller's count back to 0; the other caller's one failure counts.
      assert.equal(entry.failures, 1);
    });
  });

  describe(`the time a refused password takes, on ${backend.name}`, () => {
    const LOCKED_ADDRESS = '203.0.113.1';
    /** A floor far above a check on a loaded test machine: the floor alone must decide when each is answered. */
    const REFUSAL_MS = 1_000;
    let h: Harness;
    let calls = 0;
    before(async () => {
      // The slow-down stays out of the way: its wait is the same for all, and not what is measured here.
      h = await createHarness(backend, {
        lockoutThreshold: THRESHOLD,
        lockoutSeconds: 600,
        lockoutSlowdownThreshold: 100_000,
        credentialRefusalMs: REFUSAL_MS,
      });
      await users.add(h.database.db, USER, 'Teller 21', await hashPassword(USER_PASSWORD));
    });
    after(() => h.close());

    /** A logon refused with 403, from `address` (by default one of its own, which has no failures yet), in ms. */
    const refusedLogon = async (
      UserNumber: number,
      Password: string,
      address = `198.51.${++calls >> 8}.${calls & 255}`,
    ) => {
      const started = performance.now();
      const response = await h.app.inject({
        method: 'POST',
        url: LOGON,
        remoteAddress: address,
        headers: { authorization: `Bearer ${h.token}`, 'content-type': 'application/json' },
        payload: JSON.stringify({ Credentials: { UserNumberCredentials: { UserNumber, Password } } }),
      });
      assert.equal(response.statusCode, 403, response.body);
      return performance.now() - started;
    };

    test("after a burst of guesses, an unknown user, a locked user and a known user's wrong password take the same time", async () => {
      // The burst: many wrong passwords at once, each hash waiting its turn for the machine's cores.
      await Promise.all(Array.from({ length: 40 }, (_, i) => refusedLogon(USER, `burst ${i}`)));
      for (let i = 0; i < THRESHOLD; i += 1) await refusedLogon(USER, `lock ${i}`, LOCKED_ADDRESS);
      const samples = { unknown: [] as number[], locked: [] as number[], known: [] as number[] };
      const kinds = Object.keys(samples) as (keyof typeof samples)[];
      // Interleaved, in a turning order, each with a new password (a repeated one is remembered): load on
      // the machine meets every kind alike.
      for (let round = 0; round < 7; round += 1) {
        for (let k = 0; k < kinds.length; k += 1) {
          const kind = kinds[(round + k) % kinds.length]!;
          const password = `wrong ${round}`;
          samples[kind].push(
            await (kind === 'unknown'
              ? refusedLogon(9_000 + round, password)
              : kind === 'locked'
                ? refusedLogon(USER, password, LOCKED_ADDRESS)
                : refusedLogon(USER, password)),
          );
        }
      }
      const medians = Object.fromEntries(kinds.map((kind) => [kind, median(samples[kind])]));
      const said = kinds.map((kind) => `${kind} ${medians[kind]!.toFixed(0)} ms`).join(', ');
      const [fastest, slowest] = [Math.min(...Object.values(medians)), Math.max(...Object.values(medians))];
      assert.ok(slowest <= 1.2 * fastest, `medians within 20% of each other: ${said}`);
      assert.ok(fastest >= REFUSAL_MS, `none before the floor: ${said}`);
    });

    test('by default a refusal waits the floor measured at start, even when its check answered at once', async () => {
      // The password check answers at once; the floor is four checks' time timed at start, at least 250 ms.
      const authenticator = new Authenticator(
        h.database.db,
        h.secrets,
        { ...h.config, credentialRefusalMs: undefined },
        { verifyPassword: async () => false },
      );
      const started = performance.now();
      await assert.rejects(
        authenticator.verifyCredentials(
          { AdministrativeCredentials: { Password: 'wrong' } },
          ['AdministrativeCredentials'],
          'floor',
          '192.0.2.40',
        ),
        { status: 403 },
      );
      const ms = performance.now() - started;
      assert.ok(ms >= 250, `refused after ${ms.toFixed(0)} ms`);
    });
  });

  describe(`the slow-down of a credential failing from every caller on ${backend.name}`, () => {
    const SLOWDOWN_MS = 300;
    let h: Harness;
    let callers: Callers;
    before(async () => {
      h = await createHarness(backend, {
        lockoutThreshold: 3,
        lockoutSeconds: 5,
        lockoutSlowdownThreshold: 4,
        lockoutSlowdownMs: SLOWDOWN_MS,
      });
      callers = new Callers(new URL(await h.app.listen({ port: 0, host: '127.0.0.1' })));
    });
    after(async () => {
      callers.close();
      await h.close();
    });

    const [admin] = CASES;
    const as = (from: string, secret: string) => callers.json(from, h.token, admin!.path, admin!.body(secret));
    /**
     * Nine failures from four addresses (over twice the slow-down threshold, so that the slow-down outlasts
     * the test's own calls): two of the addresses locked, none past its own threshold alone.
     */
    const failEverywhere = async (addresses: readonly string[]) => {
      for (const [from, guesses] of [3, 3, 1, 2].map((guesses, i) => [addresses[i]!, guesses] as const)) {
        for (let i = 0; i < guesses; i += 1) assert.equal((await as(from, `guess ${i}`)).status, 403);
      }
    };
    const timed = async (from: string) => {
      const started = performance.now();
      const answer = await as(from, ADMIN_PASSWORD);
      return { ...answer, ms: performance.now() - started };
    };

    test('past the threshold each check waits, yet the right password gets in, for a caller that never failed and one that failed without being locked', async () => {
      await failEverywhere([ADDRESS_A, ADDRESS_B, '127.0.0.4', '127.0.0.5']);
      for (const from of ['127.0.0.6', '127.0.0.4']) {
        const answer = await timed(from);
        assert.equal(answer.status, 200, `${from}: ${answer.text}`);
        assert.ok(answer.ms >= SLOWDOWN_MS, `${from} waited ${Math.round(answer.ms)} ms`);
      }
    });

    test('a caller that proved the password within the credential cache time passes without waiting', async () => {
      assert.equal((await as('127.0.0.7', ADMIN_PASSWORD)).status, 200);
      await failEverywhere(['127.0.0.8', '127.0.0.9', '127.0.0.10', '127.0.0.11']);
      const remembered = await timed('127.0.0.7');
      assert.equal(remembered.status, 200);
      assert.ok(
        remembered.ms < SLOWDOWN_MS,
        `a remembered verification is not a guess: ${Math.round(remembered.ms)} ms`,
      );
      assert.ok((await timed('127.0.0.12')).ms >= SLOWDOWN_MS, 'a caller that did not prove it waits');
    });
  });
}

test('a caller is counted by its IPv4 address (also when written IPv4-mapped), or by the /64 network of an IPv6 address', () => {
  assert.equal(callerAddress('192.0.2.7'), '192.0.2.7');
  assert.equal(callerAddress('::ffff:192.0.2.7'), '192.0.2.7');
  assert.equal(callerAddress('2001:db8:1:2:a:b:c:d'), '2001:db8:1:2::/64');
  assert.equal(callerAddress('2001:db8:1:2::99'), '2001:db8:1:2::/64');
  assert.equal(callerAddress('2001:db8::1'), '2001:db8:0:0::/64');
});
