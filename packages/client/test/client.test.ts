/**
 * @coregate/client against a listening coregate on the demo dataset: typed calls, the bearer token, problems
 * as typed errors, another Sym's paths. The `@ts-expect-error` lines are part of the specification: the root
 * `npm run typecheck` fails if the client's types ever accept those bodies.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { demoExamples, type DemoExamples, type ShareTarget } from '../../../src/seed/examples.js';
import { seedDatabase } from '../../../src/seed/load.js';
import { adminCredentials, createHarness, type Harness } from '../../../test/support/harness.js';
import {
  answerOf,
  createCoregateClient,
  CoregateProblem,
  type Answer,
  type CoregateClient,
  type RequestBody,
} from '../src/index.js';

const SEED = 627;
const ACCOUNTS = 50;
const FIND_BY_SSN = '/gw/627/persistent/findby/findBySSN';

describe('@coregate/client', () => {
  let h: Harness;
  let baseUrl: string;
  let examples: DemoExamples;
  let coregate: CoregateClient;

  before(async () => {
    h = await createHarness({ name: 'pglite' });
    await seedDatabase(h.database, h.secrets, { accounts: ACCOUNTS, seed: SEED });
    examples = demoExamples(SEED, ACCOUNTS);
    baseUrl = await h.app.listen({ port: 0, host: '127.0.0.1' });
    coregate = createCoregateClient({ baseUrl, token: h.token });
  });
  after(() => h.close());

  const hold = (): ShareTarget => examples.shareTargets.find((target) => target.record === 'ShareHold')!;

  test('findBySSN answers the accounts of an SSN as typed data', async () => {
    const body: RequestBody<typeof FIND_BY_SSN> = { Credentials: adminCredentials, SSN: examples.sharedSsn.ssn };
    const { data, error, response } = await coregate.POST(FIND_BY_SSN, { body });
    assert.equal(response.status, 200);
    assert.equal(error, undefined);
    const accounts: Answer<typeof FIND_BY_SSN>['AccountNumber'] | undefined = data?.AccountNumber;
    assert.deepEqual(accounts, examples.sharedSsn.accountNumbers);
  });

  test('a share hold update is answered with its UpdateStatus and read back with the new value', async () => {
    const target = hold();
    const update = await answerOf(
      coregate.POST('/gw/627/2022.01/account/updateShareHoldByID', {
        body: {
          Credentials: adminCredentials,
          AccountNumber: target.accountNumber,
          ShareId: target.shareId,
          ShareHoldLocator: target.locator,
          ShareHoldUpdatableFields: { Reference1: 'CLIENT UPDATE' },
        },
      }),
    );
    assert.deepEqual(update.UpdateStatus, { isAllFieldsUpdateSuccess: true, FailedUpdateStatus: [] });
    const readBack = await answerOf(
      coregate.POST('/gw/627/2022.01/account/getShareHoldSelectFields', {
        body: {
          Credentials: adminCredentials,
          AccountNumber: target.accountNumber,
          ShareId: target.shareId,
          ShareHoldLocator: target.locator,
          SelectableFields: { ShareHoldFields: { Reference1: true } },
        },
      }),
    );
    assert.equal(readBack.ShareHold.Reference1, 'CLIENT UPDATE');
  });

  test('per-call headers pass through: an Idempotency-Key replays the first answer', async () => {
    const target = hold();
    const call = () =>
      coregate.POST('/gw/627/persistent/account/updateShareHoldByID', {
        headers: { 'Idempotency-Key': 'client-test-hold-1' },
        body: {
          Credentials: adminCredentials,
          AccountNumber: target.accountNumber,
          ShareId: target.shareId,
          ShareHoldLocator: target.locator,
          ShareHoldFields: { Reference2: 'ONCE' },
        },
      });
    const first = await call();
    const second = await call();
    assert.equal(first.response.status, 200);
    assert.equal(second.response.headers.get('idempotent-replayed'), 'true');
    assert.deepEqual(second.data, first.data);
  });

  test('a refused call is a CoregateProblem with the status, the stable code and the field at fault', async () => {
    const refused = answerOf(
      coregate.POST('/gw/627/persistent/findby/findBySSN', {
        // @ts-expect-error SSN is a string of 9 characters; a number is refused by the types and by the API.
        body: { Credentials: adminCredentials, SSN: 384856358 },
      }),
    );
    await assert.rejects(refused, (problem: unknown) => {
      assert.ok(problem instanceof CoregateProblem);
      assert.equal(problem.status, 400);
      assert.equal(problem.code, 'VALIDATION_FAILED');
      assert.deepEqual(
        problem.problem.errors?.map((error) => error.pointer),
        ['/SSN'],
      );
      return true;
    });
  });

  test('a body without a required field does not compile, and the API names the field missing', async () => {
    const { error, response } = await coregate.POST('/gw/627/persistent/findby/findBySSN', {
      // @ts-expect-error findBySSN requires SSN.
      body: { Credentials: adminCredentials },
    });
    assert.equal(response.status, 400);
    assert.equal(error?.code, 'VALIDATION_FAILED');
    assert.deepEqual(
      error?.errors?.map((fault) => fault.pointer),
      ['/SSN'],
    );
  });

  test('a path that is not an operation does not compile, and is NOT_FOUND', async () => {
    const { error, response } = await coregate.POST(
      // @ts-expect-error findBySsn is not an operation (findBySSN is).
      '/gw/627/persistent/findby/findBySsn',
      { body: { Credentials: adminCredentials, SSN: examples.sharedSsn.ssn } },
    );
    assert.equal(response.status, 404);
    assert.equal((error as { code?: string } | undefined)?.code, 'NOT_FOUND');
  });

  test('the token is sent as the bearer: a client with a wrong token is UNAUTHENTICATED', async () => {
    const stranger = createCoregateClient({ baseUrl, token: 'not-a-token' });
    const { error, response } = await stranger.POST('/gw/627/persistent/findby/findBySSN', {
      body: { Credentials: adminCredentials, SSN: examples.sharedSsn.ssn },
    });
    assert.equal(response.status, 401);
    assert.equal(error?.code, 'UNAUTHENTICATED');
  });

  test('sym sends the documented paths to another Sym: this service answers for 627 only, so 628 is NOT_FOUND', async () => {
    const otherSym = createCoregateClient({ baseUrl, token: h.token, sym: 628 });
    const { error, response } = await otherSym.POST('/gw/627/persistent/findby/findBySSN', {
      body: { Credentials: adminCredentials, SSN: examples.sharedSsn.ssn },
    });
    assert.equal(response.status, 404);
    assert.equal(new URL(response.url).pathname, '/gw/628/persistent/findby/findBySSN');
    assert.equal(error?.code, 'NOT_FOUND');
  });

  test('an answer that is not problem details still throws a CoregateProblem, code UNEXPECTED_RESPONSE', async () => {
    const behindProxy = createCoregateClient({
      baseUrl,
      token: h.token,
      fetch: async () => new Response('<html>Bad Gateway</html>', { status: 502, statusText: 'Bad Gateway' }),
    });
    await assert.rejects(
      answerOf(
        behindProxy.POST('/gw/627/persistent/findby/findBySSN', {
          body: { Credentials: adminCredentials, SSN: examples.sharedSsn.ssn },
        }),
      ),
      { name: 'CoregateProblem', status: 502, code: 'UNEXPECTED_RESPONSE' },
    );
  });
});
