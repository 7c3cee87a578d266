/**
 * The admin API while serving, on each database: tokens, users, the audit trail, export, import and reset
 * over HTTP with a token of the `admin` scope; every call audited and rate limited; every bad request a 4xx
 * problem naming what is wrong; NDJSON streamed for the audit trail and the export; the routes documented
 * under their own tag.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { loadConfig } from '../src/config.js';
import type { AuditPage } from '../src/contract/admin.js';
import { SCOPES } from '../src/contract/scopes.js';
import { OPERATIONS } from '../src/operations/index.js';
import { operationPath } from '../src/operations/types.js';
import { DEFAULT_SEED, seedDatabase } from '../src/seed/load.js';
import { seedMemberSecrets } from '../src/seed/member-secrets.js';
import { demoDataset } from '../src/store/access.js';
import { exportRecords } from '../src/store/record-transfer.js';
import { BACKENDS, createHarness, type Harness } from './support/harness.js';
import { resolveRef } from './support/openapi-document.js';

const DEMO = { seed: DEFAULT_SEED, accounts: 3 };
const NDJSON = 'application/x-ndjson';
const findBySSN = operationPath(OPERATIONS.find((operation) => operation.name === 'findBySSN')!);

interface Call {
  readonly method: 'GET' | 'POST' | 'DELETE';
  readonly url: string;
  readonly body?: unknown;
  readonly token?: string | null;
  readonly headers?: Record<string, string>;
}

/** An admin call with the harness's token (every scope), or another, or none (`token: null`). */
function admin(h: Harness, { method, url, body, token, headers = {} }: Call): Promise<LightMyRequestResponse> {
  const bearer = token === undefined ? h.token : token;
  return h.app.inject({
    method,
    url,
    headers: {
      ...(bearer === null ? {} : { authorization: `Bearer ${bearer}` }),
      ...(body === undefined ? {} : { 'content-type': typeof body === 'string' ? NDJSON : 'application/json' }),
      ...headers,
    },
    ...(body === undefined ? {} : { payload: typeof body === 'string' ? body : JSON.stringify(body) }),
  });
}

/** A problem+json answer with this status and code (and a pointer at fault, when given). */
function assertProblem(answer: LightMyRequestResponse, status: number, code: string, pointer?: string): void {
  const where = `${answer.statusCode} ${answer.body.slice(0, 400)}`;
  assert.equal(answer.statusCode, status, where);
  assert.match(String(answer.headers['content-type']), /^application\/problem\+json/, where);
  const problem = answer.json();
  assert.equal(problem.code, code, where);
  assert.ok(problem.detail, where);
  if (pointer !== undefined) {
    assert.ok(
      (problem.errors ?? []).some((error: { pointer: string }) => error.pointer === pointer),
      `${where}: names ${pointer}`,
    );
  }
}

/** Every admin route, with a request it would accept (on a seeded store, with its user 4001). */
const ROUTES: readonly Call[] = [
  { method: 'GET', url: '/admin/tokens' },
  { method: 'POST', url: '/admin/tokens', body: { name: 'scope-probe' } },
  { method: 'DELETE', url: '/admin/tokens/nobody' },
  { method: 'GET', url: '/admin/users' },
  { method: 'POST', url: '/admin/users', body: { userNumber: 4999, name: 'Probe' } },
  { method: 'POST', url: '/admin/users/4001/disable' },
  { method: 'POST', url: '/admin/users/4001/enable' },
  { method: 'POST', url: '/admin/users/4001/unlock' },
  { method: 'POST', url: '/admin/users/4001/password' },
  { method: 'GET', url: '/admin/audit' },
  { method: 'GET', url: '/admin/demo-credentials' },
  { method: 'GET', url: '/admin/export' },
  { method: 'POST', url: '/admin/import', body: '{}\n' },
  { method: 'POST', url: '/admin/reset' },
];

/** Bad requests of every route: each a 4xx problem with a stable code, naming the field at fault. */
const BAD: readonly (Call & { status: number; code: string; pointer?: string })[] = [
  { method: 'POST', url: '/admin/tokens', body: {}, status: 400, code: 'VALIDATION_FAILED', pointer: '/name' },
  {
    method: 'POST',
    url: '/admin/tokens',
    body: { name: 'has space' },
    status: 400,
    code: 'VALIDATION_FAILED',
    pointer: '/name',
  },
  {
    method: 'POST',
    url: '/admin/tokens',
    body: { name: 'x', scopes: ['everything'] },
    status: 400,
    code: 'VALIDATION_FAILED',
    pointer: '/scopes/0',
  },
  {
    method: 'POST',
    url: '/admin/tokens',
    body: { name: 'x', scopes: [] },
    status: 400,
    code: 'VALIDATION_FAILED',
    pointer: '/scopes',
  },
  {
    method: 'POST',
    url: '/admin/tokens',
    body: { name: 'x', color: 'red' },
    status: 400,
    code: 'VALIDATION_FAILED',
    pointer: '/color',
  },
  {
    method: 'POST',
    url: '/admin/tokens',
    body: { name: 'x', expiresAt: 'tomorrow' },
    status: 400,
    code: 'VALIDATION_FAILED',
    pointer: '/expiresAt',
  },
  {
    method: 'POST',
    url: '/admin/tokens',
    body: { name: 'x', expiresAt: '2001-01-01T00:00:00Z' },
    status: 400,
    code: 'VALIDATION_FAILED',
    pointer: '/expiresAt',
  },
  {
    method: 'POST',
    url: '/admin/tokens',
    body: { name: 'x', expiresAt: '2099-01-01T00:00:00Z', expiresInDays: 3 },
    status: 400,
    code: 'VALIDATION_FAILED',
    pointer: '/expiresInDays',
  },
  {
    method: 'POST',
    url: '/admin/tokens',
    body: { name: 'x', expiresInDays: 0 },
    status: 400,
    code: 'VALIDATION_FAILED',
    pointer: '/expiresInDays',
  },
  {
    method: 'POST',
    url: '/admin/tokens',
    body: 'not json',
    headers: { 'content-type': 'application/json' },
    status: 400,
    code: 'MALFORMED_JSON',
  },
  {
    method: 'POST',
    url: '/admin/tokens',
    body: '{}',
    headers: { 'content-type': 'text/plain' },
    status: 415,
    code: 'UNSUPPORTED_MEDIA_TYPE',
  },
  { method: 'POST', url: '/admin/tokens', body: '{"name":"x"}\n', status: 415, code: 'UNSUPPORTED_MEDIA_TYPE' },
  { method: 'POST', url: '/admin/tokens', body: { name: 'test' }, status: 409, code: 'ALREADY_EXISTS' },
  { method: 'DELETE', url: '/admin/tokens/no%20such', status: 400, code: 'VALIDATION_FAILED', pointer: '/name' },
  { method: 'DELETE', url: '/admin/tokens/never-created', status: 404, code: 'NOT_FOUND' },
  {
    method: 'POST',
    url: '/admin/users',
    body: { userNumber: 0, name: 'Zero' },
    status: 400,
    code: 'VALIDATION_FAILED',
    pointer: '/userNumber',
  },
  {
    method: 'POST',
    url: '/admin/users',
    body: { userNumber: '12', name: 'Text' },
    status: 400,
    code: 'VALIDATION_FAILED',
    pointer: '/userNumber',
  },
  {
    method: 'POST',
    url: '/admin/users',
    body: { userNumber: 12 },
    status: 400,
    code: 'VALIDATION_FAILED',
    pointer: '/name',
  },
  {
    method: 'POST',
    url: '/admin/users',
    body: { userNumber: 12, name: 'Long', password: 'x'.repeat(21) },
    status: 400,
    code: 'VALIDATION_FAILED',
    pointer: '/password',
  },
  {
    method: 'POST',
    url: '/admin/users',
    body: { userNumber: 4001, name: 'Again' },
    status: 409,
    code: 'ALREADY_EXISTS',
  },
  { method: 'POST', url: '/admin/users/0/disable', status: 400, code: 'VALIDATION_FAILED', pointer: '/number' },
  { method: 'POST', url: '/admin/users/abc/enable', status: 400, code: 'VALIDATION_FAILED', pointer: '/number' },
  { method: 'POST', url: '/admin/users/12345/unlock', status: 400, code: 'VALIDATION_FAILED', pointer: '/number' },
  { method: 'POST', url: '/admin/users/4002/disable', status: 404, code: 'NOT_FOUND' },
  { method: 'POST', url: '/admin/users/4002/unlock', status: 404, code: 'NOT_FOUND' },
  { method: 'POST', url: '/admin/users/4002/password', status: 404, code: 'NOT_FOUND' },
  {
    method: 'POST',
    url: '/admin/users/4001/disable',
    body: { now: true },
    status: 400,
    code: 'VALIDATION_FAILED',
    pointer: '/now',
  },
  {
    method: 'POST',
    url: '/admin/users/4001/password',
    body: { password: '' },
    status: 400,
    code: 'VALIDATION_FAILED',
    pointer: '/password',
  },
  { method: 'GET', url: '/admin/audit?from=yesterday', status: 400, code: 'VALIDATION_FAILED', pointer: '/from' },
  { method: 'GET', url: '/admin/audit?to=2026-13-45', status: 400, code: 'VALIDATION_FAILED', pointer: '/to' },
  { method: 'GET', url: '/admin/audit?limit=0', status: 400, code: 'VALIDATION_FAILED', pointer: '/limit' },
  { method: 'GET', url: '/admin/audit?limit=5000', status: 400, code: 'VALIDATION_FAILED', pointer: '/limit' },
  { method: 'GET', url: '/admin/audit?status=999', status: 400, code: 'VALIDATION_FAILED', pointer: '/status' },
  { method: 'GET', url: '/admin/audit?account=12', status: 400, code: 'VALIDATION_FAILED', pointer: '/account' },
  { method: 'GET', url: '/admin/audit?color=red', status: 400, code: 'VALIDATION_FAILED', pointer: '/color' },
  { method: 'GET', url: '/admin/audit?order=sideways', status: 400, code: 'VALIDATION_FAILED', pointer: '/order' },
  {
    method: 'GET',
    url: '/admin/audit?cursor=bm90LWEtY3Vyc29y',
    status: 400,
    code: 'INVALID_PAGING_TOKEN',
    pointer: '/cursor',
  },
  // A position on a day that does not exist, and a cursor of an earlier release (by id alone).
  ...['after:2026-02-30T10:00:00.000000Z|7', 'after:7'].map((text) => ({
    method: 'GET' as const,
    url: `/admin/audit?cursor=${Buffer.from(text).toString('base64url')}`,
    status: 400,
    code: 'INVALID_PAGING_TOKEN',
    pointer: '/cursor',
  })),
  { method: 'POST', url: '/admin/import', body: { records: [] }, status: 415, code: 'UNSUPPORTED_MEDIA_TYPE' },
  {
    method: 'POST',
    url: '/admin/import?replace=yes',
    body: '{}\n',
    status: 400,
    code: 'VALIDATION_FAILED',
    pointer: '/replace',
  },
  {
    method: 'POST',
    url: '/admin/import?replace=true',
    body: '',
    status: 400,
    code: 'INVALID_RECORD_FILE',
    pointer: '/line/1',
  },
  {
    method: 'POST',
    url: '/admin/import?replace=true',
    body: '{"coregate":"records","format":1}\n{"record":"Nothing"}\n',
    status: 400,
    code: 'INVALID_RECORD_FILE',
    pointer: '/line/2',
  },
  {
    method: 'POST',
    url: '/admin/import',
    body: '{"coregate":"records","format":1}\n',
    status: 409,
    code: 'STORE_NOT_EMPTY',
  },
  { method: 'POST', url: '/admin/reset', body: { seed: 5 }, status: 400, code: 'VALIDATION_FAILED', pointer: '/seed' },
  {
    method: 'POST',
    url: '/admin/reset',
    body: { accounts: 0 },
    status: 400,
    code: 'VALIDATION_FAILED',
    pointer: '/accounts',
  },
  {
    method: 'POST',
    url: '/admin/reset',
    body: { accounts: 2, extra: 1 },
    status: 400,
    code: 'VALIDATION_FAILED',
    pointer: '/extra',
  },
];

/** The NDJSON lines of an answer. */
const linesOf = (answer: LightMyRequestResponse) => answer.body.split('\n').filter((line) => line !== '');

for (const backend of BACKENDS) {
  describe(`the admin API on ${backend.name}`, () => {
    let h: Harness;
    before(async () => {
      // Revocations take effect at once (no token cache); two failures lock a password.
      h = await createHarness(backend, { tokenCacheMs: 0, lockoutThreshold: 2 });
      await seedDatabase(h.database, h.secrets, DEMO);
      await seedMemberSecrets(h.database.db, DEMO.accounts);
      await demoDataset.set(h.database.db, DEMO);
      assert.equal(
        (await admin(h, { method: 'POST', url: '/admin/users', body: { userNumber: 4001, name: 'Teller' } }))
          .statusCode,
        201,
      );
    });
    after(() => h?.close());

    test('a created token is answered with its secret once, works at once, and is listed without it', async () => {
      const created = await admin(h, {
        method: 'POST',
        url: '/admin/tokens',
        body: { name: 'ci-bot', scopes: ['findby'], expiresInDays: 30 },
      });
      assert.equal(created.statusCode, 201, created.body);
      const token = created.json();
      assert.match(token.token, /^cg_[A-Za-z0-9_-]{43}$/);
      assert.deepEqual(
        [token.name, token.scopes, token.state, token.revokedAt],
        ['ci-bot', ['findby'], 'active', null],
      );
      assert.ok(Math.abs(Date.parse(token.expiresAt) - Date.now() - 30 * 86_400_000) < 60_000);
      const lookup = await h.call(findBySSN, { SSN: '123456789' }, { authorization: `Bearer ${token.token}` });
      assert.equal(lookup.statusCode, 200);
      const listed = await admin(h, { method: 'GET', url: '/admin/tokens' });
      assert.equal(listed.statusCode, 200);
      assert.ok(!listed.body.includes(token.token), 'the secret is never listed');
      assert.doesNotMatch(listed.body, /hash/i);
      const entry = listed.json().tokens.find((t: { name: string }) => t.name === 'ci-bot');
      assert.deepEqual(Object.keys(entry).sort(), ['createdAt', 'expiresAt', 'name', 'revokedAt', 'scopes', 'state']);
    });

    test('a token without scopes named gets every scope but store:reset and admin; expiresAt sets its expiry', async () => {
      const created = await admin(h, {
        method: 'POST',
        url: '/admin/tokens',
        body: { name: 'reporting', expiresAt: '2099-01-31T12:00:00+01:00' },
      });
      assert.equal(created.statusCode, 201, created.body);
      assert.deepEqual(
        created.json().scopes,
        SCOPES.filter((scope) => scope !== 'store:reset' && scope !== 'admin'),
      );
      assert.equal(created.json().expiresAt, '2099-01-31T11:00:00.000Z');
    });

    test('a revoked token is refused, and revoking it again is 404', async () => {
      const { token } = (
        await admin(h, { method: 'POST', url: '/admin/tokens', body: { name: 'short-lived', scopes: ['findby'] } })
      ).json();
      const revoked = await admin(h, { method: 'DELETE', url: '/admin/tokens/short-lived' });
      assert.equal(revoked.statusCode, 200, revoked.body);
      assert.equal(revoked.json().state, 'revoked');
      assertProblem(
        await h.call(findBySSN, { SSN: '123456789' }, { authorization: `Bearer ${token}` }),
        401,
        'UNAUTHENTICATED',
      );
      assertProblem(await admin(h, { method: 'DELETE', url: '/admin/tokens/short-lived' }), 404, 'NOT_FOUND');
    });

    test('users: added with a generated password, disabled (refused), enabled, unlocked after a lockout, given a new password', async () => {
      const added = await admin(h, {
        method: 'POST',
        url: '/admin/users',
        body: { userNumber: 4100, name: 'Loan officer' },
      });
      assert.equal(added.statusCode, 201, added.body);
      const { password } = added.json();
      assert.match(password, /^\S{20}$/);
      const asUser = (secret: string) =>
        h.call(findBySSN, {
          Credentials: { UserNumberCredentials: { UserNumber: 4100, Password: secret } },
          SSN: '123456789',
        });
      assert.equal((await asUser(password)).statusCode, 200);

      const disabled = await admin(h, { method: 'POST', url: '/admin/users/4100/disable' });
      assert.equal(disabled.statusCode, 200, disabled.body);
      assert.equal(disabled.json().state, 'disabled');
      assertProblem(await asUser(password), 403, 'FORBIDDEN');
      const listed = (await admin(h, { method: 'GET', url: '/admin/users' })).json().users;
      assert.deepEqual(listed.find((user: { userNumber: number }) => user.userNumber === 4100).state, 'disabled');
      assert.equal(
        (await admin(h, { method: 'POST', url: '/admin/users/4100/enable', body: {} })).json().state,
        'enabled',
      );
      assert.equal((await asUser(password)).statusCode, 200);

      for (let i = 0; i < 2; i += 1) assertProblem(await asUser('wrong-password'), 403, 'FORBIDDEN');
      assertProblem(await asUser(password), 403, 'FORBIDDEN');
      const unlocked = await admin(h, { method: 'POST', url: '/admin/users/4100/unlock' });
      assert.equal(unlocked.statusCode, 200, unlocked.body);
      assert.equal(unlocked.json().cleared, 1);
      assert.equal((await asUser(password)).statusCode, 200);

      const given = await admin(h, {
        method: 'POST',
        url: '/admin/users/4100/password',
        body: { password: 'new-secret-1' },
      });
      assert.equal(given.statusCode, 200, given.body);
      assert.equal(given.json().password, undefined, 'a password given is not answered back');
      assert.equal((await asUser('new-secret-1')).statusCode, 200);
      assertProblem(await asUser(password), 403, 'FORBIDDEN');
      const generated = (await admin(h, { method: 'POST', url: '/admin/users/4100/password' })).json().password;
      assert.match(generated, /^\S{20}$/);
      assert.equal((await asUser(generated)).statusCode, 200);
    });

    test('every admin call is audited with its operation, token, outcome and target; the trail filters and pages', async () => {
      // Events of earlier tests are written before this one starts.
      await h.app.audit.flush();
      const since = new Date().toISOString();
      await admin(h, { method: 'POST', url: '/admin/tokens', body: { name: 'audited' } });
      await admin(h, { method: 'DELETE', url: '/admin/tokens/not-there' });
      await admin(h, { method: 'GET', url: '/admin/tokens', token: null });
      await h.app.audit.flush();
      const page = await admin(h, {
        method: 'GET',
        url: `/admin/audit?from=${encodeURIComponent(since)}&operation=${encodeURIComponent('admin:token.*')}`,
      });
      assert.equal(page.statusCode, 200, page.body);
      const events = page
        .json()
        .events.map((e: Record<string, unknown>) => [e.operation, e.tokenName, e.status, e.code, e.target]);
      assert.deepEqual(events, [
        ['admin:token.create', 'test', 201, null, 'token:audited'],
        ['admin:token.revoke', 'test', 404, 'NOT_FOUND', 'token:not-there'],
        ['admin:token.list', null, 401, 'UNAUTHENTICATED', null],
      ]);
      const refused = await admin(h, {
        method: 'GET',
        url: `/admin/audit?from=${encodeURIComponent(since)}&status=4xx&token=test&operation=admin:*`,
      });
      assert.deepEqual(
        refused.json().events.map((e: { operation: string }) => e.operation),
        ['admin:token.revoke'],
      );

      // Pages of one: each names the next, which carries the same filters.
      const seen: string[] = [];
      let next: string | null = `/admin/audit?from=${encodeURIComponent(since)}&operation=admin%3Atoken.*&limit=1`;
      while (next !== null) {
        const answer: AuditPage = (await admin(h, { method: 'GET', url: next })).json();
        assert.ok(answer.events.length <= 1);
        seen.push(...answer.events.map((e) => e.operation));
        next = answer.next;
      }
      assert.deepEqual(seen, ['admin:token.create', 'admin:token.revoke', 'admin:token.list']);

      // order=newest: the same events newest first, paged backwards by the same cursor.
      const newest: string[] = [];
      next = `/admin/audit?from=${encodeURIComponent(since)}&operation=admin%3Atoken.*&limit=1&order=newest`;
      while (next !== null) {
        const answer: AuditPage = (await admin(h, { method: 'GET', url: next })).json();
        newest.push(...answer.events.map((e) => e.operation));
        next = answer.next;
      }
      assert.deepEqual(newest, ['admin:token.list', 'admin:token.revoke', 'admin:token.create']);
    });

    test('the audit trail streams as NDJSON: every matching event, a line each, whatever the page size', async () => {
      // Events of earlier tests are written before this one starts.
      await h.app.audit.flush();
      const since = new Date().toISOString();
      for (let i = 0; i < 5; i += 1) await admin(h, { method: 'GET', url: '/admin/users' });
      await h.app.audit.flush();
      const url = `/admin/audit?from=${encodeURIComponent(since)}&operation=admin:user.list&limit=2`;
      const streamed = await admin(h, { method: 'GET', url, headers: { accept: NDJSON } });
      assert.equal(streamed.statusCode, 200, streamed.body);
      assert.match(String(streamed.headers['content-type']), /^application\/x-ndjson/);
      const events = linesOf(streamed).map((line) => JSON.parse(line));
      assert.equal(events.length, 5);
      assert.ok(events.every((event) => event.operation === 'admin:user.list' && event.status === 200));
    });

    test('the export streams as NDJSON exactly what coregate export writes', async () => {
      const answer = await admin(h, { method: 'GET', url: '/admin/export' });
      assert.equal(answer.statusCode, 200, answer.body.slice(0, 300));
      assert.match(String(answer.headers['content-type']), /^application\/x-ndjson/);
      const lines: string[] = [];
      await exportRecords(h.database.db, (line) => lines.push(line));
      const streamed = linesOf(answer);
      const header = (line: string) => ({ ...JSON.parse(line), exportedAt: undefined });
      assert.deepEqual(header(streamed[0]!), header(lines[0]!));
      assert.deepEqual(streamed.slice(1), lines.slice(1));
      assert.ok(streamed.length > 10);
    });

    test('an import of the export replaces the records in one transaction; a bad line applies nothing', async () => {
      const exported = (await admin(h, { method: 'GET', url: '/admin/export' })).body;
      const imported = await admin(h, { method: 'POST', url: '/admin/import?replace=true', body: exported });
      assert.equal(imported.statusCode, 200, imported.body);
      assert.equal(imported.json().status, 'imported');
      assert.equal(imported.json().records.Account, DEMO.accounts);
      assert.deepEqual(imported.json().demoDataset, DEMO);
      const lines = exported.split('\n');
      const hold = lines.findIndex((line) => line.startsWith('{"record":"ShareHold"'));
      const broken = lines
        .map((line, index) => (index === hold ? JSON.stringify({ ...JSON.parse(line), amount: 'lots' }) : line))
        .join('\n');
      assert.notEqual(broken, exported);
      assertProblem(
        await admin(h, { method: 'POST', url: '/admin/import?replace=true', body: broken }),
        400,
        'INVALID_RECORD_FILE',
      );
      const after = linesOf(await admin(h, { method: 'GET', url: '/admin/export' }));
      assert.deepEqual(
        after.slice(1),
        exported
          .split('\n')
          .filter((l) => l !== '')
          .slice(1),
      );
    });

    test('reset with the admin scope goes back to the demo dataset, or to another one named', async () => {
      const reset = await admin(h, { method: 'POST', url: '/admin/reset', token: await h.tokenWith(['admin']) });
      assert.equal(reset.statusCode, 200, reset.body);
      assert.deepEqual(reset.json().dataset, DEMO);
      const other = await admin(h, { method: 'POST', url: '/admin/reset', body: { accounts: 2, seed: 9 } });
      assert.equal(other.statusCode, 200, other.body);
      assert.deepEqual(other.json().dataset, { seed: 9, accounts: 2 });
      assert.equal(other.json().records.Account, 2);
      await admin(h, { method: 'POST', url: '/admin/reset', body: { accounts: DEMO.accounts, seed: DEMO.seed } });
    });

    test('bad input to every admin endpoint is a 4xx problem naming what is wrong, never a 500', async () => {
      for (const bad of BAD) assertProblem(await admin(h, bad), bad.status, bad.code, bad.pointer);
    });

    test('every admin endpoint refuses a call without a token (401) and a token without the admin scope (403)', async () => {
      const everyOtherScope = await h.tokenWith(SCOPES.filter((scope) => scope !== 'admin' && scope !== 'store:reset'));
      for (const route of ROUTES) {
        const anonymous = await admin(h, { ...route, token: null });
        assertProblem(anonymous, 401, 'UNAUTHENTICATED');
        assert.match(String(anonymous.headers['www-authenticate']), /^Bearer/);
        assertProblem(await admin(h, { ...route, token: everyOtherScope }), 403, 'FORBIDDEN');
      }
      const resetOnly = await h.tokenWith(['store:reset']);
      for (const route of ROUTES.filter((r) => r.url !== '/admin/reset')) {
        assertProblem(await admin(h, { ...route, token: resetOnly }), 403, 'FORBIDDEN');
      }
    });

    test("every admin route is in the admin API's OpenAPI document under the described admin tag, needs the admin scope and documents its problems", async () => {
      const document = (await h.app.inject({ method: 'GET', url: '/openapi-admin.json' })).json();
      const tag = document.tags.find((t: { name: string }) => t.name === 'admin');
      assert.ok(tag?.description);
      // The scopes are listed in the document's description (the bearer scheme's is one line, for Authorize).
      assert.match(document.info.description, /`admin`: Calls the admin API/);
      for (const route of ROUTES) {
        const path = route.url
          .split('?')[0]!
          .replace(/\/4001\//, '/{number}/')
          .replace(/\/nobody$/, '/{name}');
        const documented = document.paths[path]?.[route.method.toLowerCase()];
        assert.ok(documented, `${route.method} ${path} is documented`);
        assert.deepEqual(documented.tags, ['admin']);
        assert.ok(documented.operationId && documented.summary);
        const scopes = documented.security.flatMap((requirement: { bearerAuth: string[] }) => requirement.bearerAuth);
        assert.ok(scopes.includes('admin'), `${path}: ${scopes}`);
        const statuses = ['4XX', '5XX'].flatMap((range) =>
          resolveRef(document, documented.responses[range]).content[
            'application/problem+json'
          ].schema.allOf[1].anyOf.map(
            (branch: { properties: { status: { const: number } } }) => branch.properties.status.const,
          ),
        );
        for (const status of [401, 403, 429, 500]) assert.ok(statuses.includes(status), `${path} ${status}`);
        assert.ok(Object.keys(documented.responses).some((status) => status.startsWith('2')));
        assert.equal(documented['x-coregate-problems'], undefined);
      }
      const audit = document.paths['/admin/audit'].get.responses['200'].content;
      assert.deepEqual(Object.keys(audit).sort(), ['application/json', NDJSON]);
      assert.ok(document.paths['/admin/import'].post.requestBody.content[NDJSON]);
    });
  });
}

describe('the admin API under limits and in gateway mode', () => {
  test("an import larger than COREGATE_IMPORT_LIMIT_MB is refused with 413; admin calls count against the token's rate limit", async () => {
    const h = await createHarness({ name: 'pglite' }, { rateLimitPerMinute: 3, importLimitBytes: 1024 });
    try {
      const body = `{"coregate":"records","format":1}\n${'{"record":"Account"}\n'.repeat(100)}`;
      assertProblem(
        await admin(h, { method: 'POST', url: '/admin/import?replace=true', body }),
        413,
        'PAYLOAD_TOO_LARGE',
      );
      assert.equal((await admin(h, { method: 'GET', url: '/admin/tokens' })).statusCode, 200);
      const second = await admin(h, { method: 'GET', url: '/admin/tokens' });
      assert.equal(second.headers['ratelimit-remaining'], '0');
      const refused = await admin(h, { method: 'GET', url: '/admin/users' });
      assertProblem(refused, 429, 'RATE_LIMITED');
      assert.ok(Number(refused.headers['retry-after']) >= 1);
    } finally {
      await h.close();
    }
  });

  test("in gateway mode tokens and the audit trail are served; the store's users, demo passwords, export, import and reset are 501", async () => {
    const gateway = loadConfig({ COREGATE_CORE: 'symxchange', COREGATE_SYMXCHANGE_URL: 'http://127.0.0.1:9/' });
    const h = await createHarness({ name: 'pglite' }, { core: gateway.core, symxchange: gateway.symxchange });
    try {
      assert.equal((await admin(h, { method: 'GET', url: '/admin/tokens' })).statusCode, 200);
      assert.equal((await admin(h, { method: 'GET', url: '/admin/audit' })).statusCode, 200);
      for (const route of ROUTES.filter((r) => /users|demo|export|import|reset/.test(r.url))) {
        assertProblem(await admin(h, route), 501, 'STORE_ONLY');
      }
    } finally {
      await h.close();
    }
  });
});
