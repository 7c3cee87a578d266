/**
 * Gateway mode: a core's Client fault is mapped by the fault rules, the operator's (COREGATE_SYMXCHANGE_FAULT_RULES)
 * before the defaults, on its refined class, its SymXchange status code and its words; a Server fault never
 * is. A refusal of the credentials is 403 CORE_CREDENTIALS_REJECTED, a missing record 404 RECORD_NOT_FOUND,
 * anything ambiguous 502 CORE_ERROR, and none of the core's words reaches the caller. What matched is in the
 * log and the audit trail. A rules file that cannot work stops the start with one line. The core is a real
 * HTTP server answering as each test sets it.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { loadConfig } from '../src/config.js';
import { CORE_FAULT_RULE_LIMITS, compilePattern, readCoreFaultRules } from '../src/core/core-fault-rules.js';
import { OPERATIONS } from '../src/operations/index.js';
import { operationPath } from '../src/operations/types.js';
import { readAudit } from '../src/store/audit.js';
import { BACKENDS, createHarness, type Harness } from './support/harness.js';
import { CLI } from './support/serve-process.js';
import { startUpstream, type Upstream } from './support/upstream.js';

const lookup = OPERATIONS.find((op) => op.name === 'findByHomeUser' && op.family === 'P1')!;
const update = OPERATIONS.find((op) => op.name === 'updateShareHoldByID' && op.family === 'P2')!;
const LOOKUP_BODY = { HomeBankingUserName: 'member42' };
const UPDATE_BODY = {
  AccountNumber: '0000000042',
  ShareId: '0001',
  ShareHoldLocator: 1,
  ShareHoldUpdatableFields: { Reference1: 'ONE' },
};
const XML = { 'content-type': 'text/xml; charset=utf-8' };

/** A SOAP 1.1 Fault as a Symitar core writes it: its class, its words, no coregate problem. */
const coreFault = (faultcode: string, faultstring: string, detail = '') =>
  `<?xml version="1.0"?><SOAP-ENV:Envelope xmlns:SOAP-ENV="http://schemas.xmlsoap.org/soap/envelope/"><SOAP-ENV:Body>` +
  `<SOAP-ENV:Fault><faultcode>${faultcode}</faultcode><faultstring>${faultstring}</faultstring>` +
  `${detail ? `<detail>${detail}</detail>` : ''}</SOAP-ENV:Fault></SOAP-ENV:Body></SOAP-ENV:Envelope>`;

/** The operator's rules the suite's gateway runs with. */
const OPERATOR_RULES = [
  { name: 'member-gone', faultcode: 'Client', statusCode: 1234, problem: 'RECORD_NOT_FOUND' },
  // Words a default reads as a missing record, which this core also says of a copy it has not loaded yet.
  { faultcode: 'Client', pattern: '^member not found in the nightly copy', problem: 'CORE_ERROR' },
  {
    name: 'backtracks',
    faultcode: 'Client',
    statusCode: 4242,
    pattern: 'x.*x.*x.*x.*x.*y',
    problem: 'RECORD_NOT_FOUND',
  },
];

const workDir = mkdtempSync(join(tmpdir(), 'coregate-core-fault-rules-'));
after(() => rmSync(workDir, { recursive: true, force: true }));

/** Writes a rules file of the work directory; returns its path. */
function rulesFile(name: string, content: unknown): string {
  const file = join(workDir, name);
  writeFileSync(file, typeof content === 'string' ? content : JSON.stringify(content));
  return file;
}

for (const backend of BACKENDS) {
  describe(`a core's Client faults mapped by rule, on ${backend.name}`, () => {
    let upstream: Upstream;
    let gateway: Harness;

    before(async () => {
      upstream = await startUpstream();
      const config = loadConfig({
        COREGATE_CORE: 'symxchange',
        COREGATE_SYMXCHANGE_URL: upstream.url,
        COREGATE_SYMXCHANGE_FAULT_RULES: rulesFile(`rules-${backend.name}.json`, OPERATOR_RULES),
        COREGATE_SYMXCHANGE_BREAKER_FAILURES: '10000',
      });
      gateway = await createHarness(backend, { core: config.core, symxchange: config.symxchange });
    });
    after(async () => {
      await gateway?.close();
      await upstream?.close();
    });

    /** The lookup's answer when the core answers every call with `fault` (HTTP 500, as SOAP 1.1 says). */
    async function answerTo(fault: string, requestId?: string) {
      upstream.behave((_received, response) => response.writeHead(500, XML).end(fault));
      const response = await gateway.call(
        operationPath(lookup),
        LOOKUP_BODY,
        requestId ? { 'x-request-id': requestId } : {},
      );
      assert.match(String(response.headers['content-type']), /^application\/problem\+json/, response.body);
      return { status: response.statusCode, body: response.json(), text: response.body };
    }

    /** The one "the core refused the call" log entry of a request. */
    const refusalLogged = (requestId: string) =>
      gateway
        .logs()
        .map((line) => JSON.parse(line) as Record<string, unknown>)
        .find((entry) => entry.reqId === requestId && entry.msg === 'the core refused the call');

    /** The audit event of a request. */
    async function audited(requestId: string) {
      await gateway.app.audit.flush();
      const rows = await readAudit(gateway.database.db, new Date(Date.now() - 60_000), { limit: 10_000 });
      return rows.find((row) => row.requestId === requestId);
    }

    test('a Client fault refusing the credentials is 403 CORE_CREDENTIALS_REJECTED, and none of its words reach the caller', async () => {
      const answer = await answerTo(
        coreFault('SOAP-ENV:Client', 'Invalid password for user 1042', '<Reason>hash mismatch on SYM627</Reason>'),
      );
      assert.equal(answer.status, 403);
      assert.equal(answer.body.code, 'CORE_CREDENTIALS_REJECTED');
      assert.equal(answer.body.detail, 'The core rejected the credentials');
      assert.deepEqual(answer.body.core, { faultcode: 'Client' });
      assert.doesNotMatch(answer.text, /password|1042|hash|SYM627/i);
    });

    test('a Client fault saying the member is not found (as the public WireMock stub does) is 404 RECORD_NOT_FOUND', async () => {
      const answer = await answerTo(coreFault('SOAP-ENV:Client', 'Invalid parameters', 'Member not found'));
      assert.equal(answer.status, 404);
      assert.equal(answer.body.code, 'RECORD_NOT_FOUND');
      assert.equal(answer.body.detail, 'The core has no such record');
      assert.deepEqual(answer.body.core, { faultcode: 'Client' });
      assert.doesNotMatch(answer.text, /Invalid parameters|Member not found/);
    });

    test('a missing record named in an element of the detail is read on a line of its own', async () => {
      const detail =
        '<e:Error xmlns:e="urn:x"><e:Code>12</e:Code><e:Message>Account 0000000042 not found</e:Message></e:Error>';
      const answer = await answerTo(coreFault('S:Client', 'Lookup failed', detail));
      assert.equal(answer.status, 404, JSON.stringify(answer.body));
      assert.doesNotMatch(answer.text, /0000000042/);
    });

    test('a Client fault refined as Client.Authentication is 403 CORE_CREDENTIALS_REJECTED, whatever its words', async () => {
      const answer = await answerTo(coreFault('SOAP-ENV:Client.Authentication', 'Request refused'));
      assert.equal(answer.status, 403);
      assert.equal(answer.body.code, 'CORE_CREDENTIALS_REJECTED');
    });

    test("a Server fault saying either is 502 CORE_ERROR: a Server fault is never the caller's to fix", async () => {
      for (const [faultstring, detail] of [
        ['Invalid parameters', 'Member not found'],
        ['Invalid password for user 1042', ''],
        ['Authentication failed', ''],
      ]) {
        const answer = await answerTo(coreFault('SOAP-ENV:Server', faultstring!, detail));
        assert.equal(answer.status, 502, faultstring);
        assert.equal(answer.body.code, 'CORE_ERROR');
        assert.deepEqual(answer.body.core, { faultcode: 'Server' });
      }
      const refined = await answerTo(coreFault('SOAP-ENV:Server.Authentication', 'Authentication failed'));
      assert.equal(refined.status, 502);
    });

    test('words that do not say which record is missing, or that no credential was refused, stay 502 CORE_ERROR', async () => {
      const ambiguous = [
        'Not found',
        'Operation not found',
        'Paging token not found',
        'Invalid paging token',
        'User not found',
        'relation share does not exist',
        'Specfile MEMBER.LOOKUP not found',
        'No records found',
        'Account locked',
        'Token expired',
      ];
      for (const text of ambiguous) {
        const answer = await answerTo(coreFault('SOAP-ENV:Client', text));
        assert.equal(answer.status, 502, text);
        assert.equal(answer.body.code, 'CORE_ERROR', text);
      }
    });

    test("an operator's rule maps the core's status code: StatusCode 1234 is 404 RECORD_NOT_FOUND", async () => {
      const detail = '<Status><StatusCode>1234</StatusCode><Message>Record is gone</Message></Status>';
      const answer = await answerTo(coreFault('SOAP-ENV:Client', 'Refused', detail));
      assert.equal(answer.status, 404);
      assert.equal(answer.body.code, 'RECORD_NOT_FOUND');
      assert.deepEqual(answer.body.core, { faultcode: 'Client', code: '1234' });
      const other = await answerTo(
        coreFault('SOAP-ENV:Client', 'Refused', '<Status><StatusCode>1235</StatusCode></Status>'),
      );
      assert.equal(other.status, 502, 'another status code is not the rule');
    });

    test("an operator's rules come before the defaults", async () => {
      const answer = await answerTo(
        coreFault('SOAP-ENV:Client', 'Member not found in the nightly copy'),
        'operator-first',
      );
      assert.equal(answer.status, 502);
      assert.equal(answer.body.code, 'CORE_ERROR');
      assert.equal(refusalLogged('operator-first')?.faultRule, 'rule:1');
    });

    test('the rule that matched is named in the log line and the audit event', async () => {
      const byOperator = `rule-named-${backend.name}`;
      await answerTo(coreFault('SOAP-ENV:Client', 'Refused', '<StatusCode>1234</StatusCode>'), byOperator);
      assert.equal(refusalLogged(byOperator)?.faultRule, 'rule:member-gone');
      assert.equal((await audited(byOperator))?.coreOutcome, 'RECORD_NOT_FOUND by rule:member-gone');

      const byDefault = `default-named-${backend.name}`;
      await answerTo(coreFault('SOAP-ENV:Client', 'Invalid password'), byDefault);
      const entry = refusalLogged(byDefault);
      assert.equal(entry?.faultRule, 'default:invalid-credentials');
      assert.equal(
        (entry?.core as { faultstring?: string }).faultstring,
        'Invalid password',
        'the words stay in the log',
      );
      const event = await audited(byDefault);
      assert.equal(event?.status, 403);
      assert.equal(event?.coreOutcome, 'CORE_CREDENTIALS_REJECTED by default:invalid-credentials');

      const unmatched = `unmatched-${backend.name}`;
      await answerTo(coreFault('SOAP-ENV:Client', 'File locked'), unmatched);
      assert.equal(refusalLogged(unmatched)?.faultRule, undefined);
      assert.equal((await audited(unmatched))?.coreOutcome, 'CORE_ERROR');
    });

    test('a pattern still backtracking at its time bound matches nothing: 502 CORE_ERROR, said in the log', async () => {
      const requestId = `backtracks-${backend.name}`;
      const detail = `<StatusCode>4242</StatusCode><Text>${'x'.repeat(990)}</Text>`;
      const answer = await answerTo(
        coreFault('SOAP-ENV:Client', 'x'.repeat(CORE_FAULT_RULE_LIMITS.patternLength), detail),
        requestId,
      );
      assert.equal(answer.status, 502);
      assert.equal(answer.body.code, 'CORE_ERROR');
      assert.equal(refusalLogged(requestId)?.faultRule, 'rules-timed-out');
    });

    test('a write the core refuses with a Client fault was not applied: its Idempotency-Key reaches the core again', async () => {
      upstream.behave((_received, response) =>
        response.writeHead(500, XML).end(coreFault('SOAP-ENV:Client', 'Invalid parameters', 'Share not found')),
      );
      const key = { 'idempotency-key': `refused-write-${backend.name}` };
      const refused = await gateway.call(operationPath(update), UPDATE_BODY, key);
      assert.equal(refused.statusCode, 404, refused.body);
      assert.doesNotMatch(refused.json().detail, /may have been applied/);
      const again = await gateway.call(operationPath(update), UPDATE_BODY, key);
      assert.equal(again.statusCode, 404, again.body);
      assert.equal(upstream.received.length, 2, 'the key was freed: the retry was sent to the core');
    });
  });
}

describe("an operator's rules file, as read", () => {
  const read = (content: unknown) => readCoreFaultRules(rulesFile('read.json', content));

  test('its rules are named by their name, or by their index', () => {
    const rules = read([
      { name: 'gone', faultcode: 'Client', statusCode: 7, problem: 'RECORD_NOT_FOUND' },
      { faultcode: 'Client.Authentication.Expired', problem: 'CORE_CREDENTIALS_REJECTED' },
      { faultcode: 'Client', pattern: '^invalid share type', problem: 'VALIDATION_FAILED' },
    ]);
    assert.deepEqual(
      rules.map((rule) => rule.label),
      ['rule:gone', 'rule:1', 'rule:2'],
    );
  });

  const refusals: [string, unknown, RegExp][] = [
    ['a file that is not a list', { rules: [] }, /must hold a JSON array of rules/],
    [
      'an unknown field',
      [{ faultcode: 'Client', statuscode: 7, problem: 'CORE_ERROR' }],
      /\/0\/statuscode: not a field/,
    ],
    ['a Server fault', [{ faultcode: 'Server', problem: 'CORE_ERROR' }], /\/0\/faultcode: must be "Client"/],
    ['no fault class', [{ statusCode: 7, problem: 'RECORD_NOT_FOUND' }], /\/0\/faultcode:/],
    [
      'a problem no rule may give',
      [{ faultcode: 'Client', statusCode: 7, problem: 'CORE_UNAVAILABLE' }],
      /\/0\/problem: must be one of CORE_CREDENTIALS_REJECTED, RECORD_NOT_FOUND, VALIDATION_FAILED, CORE_ERROR/,
    ],
    [
      'a status code that is no xsd:int',
      [{ faultcode: 'Client', statusCode: 2 ** 31, problem: 'CORE_ERROR' }],
      /\/0\/statusCode:/,
    ],
    [
      'a pattern that does not compile',
      [{ faultcode: 'Client', pattern: 'member (not found', problem: 'CORE_ERROR' }],
      /\/0\/pattern: is not a regular expression/,
    ],
    [
      'a pattern longer than the bound',
      [{ faultcode: 'Client', pattern: 'x'.repeat(CORE_FAULT_RULE_LIMITS.patternLength + 1), problem: 'CORE_ERROR' }],
      /\/0\/pattern: must be 1 to 200 characters/,
    ],
    [
      'the same name twice',
      [
        { name: 'gone', faultcode: 'Client', statusCode: 7, problem: 'RECORD_NOT_FOUND' },
        { name: 'gone', faultcode: 'Client', statusCode: 8, problem: 'RECORD_NOT_FOUND' },
      ],
      /\/1\/name: "gone" names an earlier rule too/,
    ],
    [
      'a rule making every Client fault a 404',
      [{ faultcode: 'Client', problem: 'RECORD_NOT_FOUND' }],
      /\/0: would make every Client fault RECORD_NOT_FOUND/,
    ],
    [
      'too many rules',
      Array.from({ length: CORE_FAULT_RULE_LIMITS.rules + 1 }, (_, index) => ({
        faultcode: 'Client',
        statusCode: index,
        problem: 'CORE_ERROR',
      })),
      /holds 201 rules; at most 200/,
    ],
  ];
  for (const [name, content, message] of refusals) {
    test(`${name} is refused in one line naming the setting, the file and the field`, () => {
      assert.throws(
        () => read(content),
        (error: Error) => {
          assert.match(error.message, /^COREGATE_SYMXCHANGE_FAULT_RULES \(.*read\.json\): /);
          assert.match(error.message, message);
          assert.doesNotMatch(error.message, /\n/);
          return true;
        },
      );
    });
  }

  test('a catch-all to CORE_ERROR is allowed: it keeps every Client fault from the defaults', () => {
    assert.equal(read([{ faultcode: 'Client', problem: 'CORE_ERROR' }]).length, 1);
  });
});

describe('a pattern that could backtrack without end is refused', () => {
  const refused: [string, string, RegExp][] = [
    ['a repeated group', '(?:\\w+\\s*)+not found', /repeats a group/],
    ['a group repeated a number of times', '(a|ab){30}', /repeats a group/],
    ['a back-reference', '(\\w+) \\1', /back-reference/],
    ['a lookahead', 'member(?=.*found)', /lookaround/],
    ['a lookbehind', '(?<!no )member', /lookaround/],
  ];
  for (const [name, source, message] of refused) {
    test(`${name}: ${source}`, () => assert.throws(() => compilePattern(source), message));
  }

  test('an optional group, classes and escapes are accepted', () => {
    const pattern = compilePattern('^(?:the\\s+)?member\\s+[#(]?\\d*[)]?\\s+not found');
    assert.ok(pattern.test('Invalid parameters\nThe member 42 not found'));
  });
});

describe('a rules file that cannot work stops the start with one line', () => {
  const dataDir = join(workDir, 'data');
  const start = (file: string) =>
    spawnSync(process.execPath, [...CLI, 'serve'], {
      env: {
        ...process.env,
        DATABASE_URL: '',
        COREGATE_DATA_DIR: dataDir,
        COREGATE_CORE: 'symxchange',
        COREGATE_SYMXCHANGE_URL: 'https://core:24604',
        COREGATE_SYMXCHANGE_FAULT_RULES: file,
      },
      encoding: 'utf8',
      timeout: 60_000,
    });
  const cases: [string, () => string, RegExp][] = [
    [
      'a file that cannot be read',
      () => join(workDir, 'absent.json'),
      /COREGATE_SYMXCHANGE_FAULT_RULES: cannot read .*absent\.json \(ENOENT\)$/,
    ],
    [
      'a file that is not JSON',
      () => rulesFile('broken.json', '[{"faultcode": "Client",'),
      /COREGATE_SYMXCHANGE_FAULT_RULES \(.*broken\.json\): not JSON/,
    ],
    [
      'a rule with a pattern that could backtrack without end',
      () => rulesFile('backtracking.json', [{ faultcode: 'Client', pattern: '(a+)+$', problem: 'RECORD_NOT_FOUND' }]),
      /COREGATE_SYMXCHANGE_FAULT_RULES \(.*backtracking\.json\): \/0\/pattern: repeats a group/,
    ],
  ];
  for (const [name, file, message] of cases) {
    test(`${name}: exit 1`, () => {
      const run = start(file());
      assert.equal(run.status, 1, run.stderr);
      const lines = run.stderr.trim().split('\n');
      assert.equal(lines.length, 1, run.stderr);
      assert.match(lines[0]!, message);
    });
  }
});
