/**
 * Recording a core into a scrubbed sandbox (docs/recording.md), on both databases:
 * - the catalog's recording table classifies every field of every record type and every leaf of every
 *   operation's request and answer;
 * - a gateway in front of coregate's own store records every exchange, scrubbed as it is written: none of
 *   the source's SSNs, card numbers, names or account numbers is in the cassette, and no credential;
 * - `recording import` builds a fresh store from the cassette that answers the recorded lookups with the
 *   pseudonyms (SSN A → accounts X is A' → X') and takes updates, and holds no source value either;
 * - `recording replay` answers the recorded calls over JSON and SOAP and names those it could not match;
 * - a recording under load with a tiny queue answers every call, and counts what it did not write.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Type, type TSchema } from 'typebox';
import { RECORDS } from '../src/catalog/index.js';
import { PSEUDONYMOUS, recordingSensitivity } from '../src/catalog/recording-fields.js';
import { loadConfig } from '../src/config.js';
import { CORE_OPERATIONS, OPERATIONS, SHARED_SCHEMAS } from '../src/operations/index.js';
import { operationPath, type AnyOperation } from '../src/operations/types.js';
import { pseudonyms } from '../src/recording/pseudonyms.js';
import { scrubber } from '../src/recording/scrub.js';
import { demoRequest } from '../src/seed/demo-requests.js';
import { demoExamples, type DemoExamples } from '../src/seed/examples.js';
import { generateAccount } from '../src/seed/generate.js';
import { seedDatabase } from '../src/seed/load.js';
import { BACKENDS, createHarness, type Harness } from './support/harness.js';
import { luhnValid } from './support/sensitive.js';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { CLI } from './support/serve-process.js';
import { callSoap, jsonOfSoapAnswer, soapArguments, soapClients } from './support/soap-client.js';
import { readCassettes, startReplay, type Replay } from '../src/cli/recording.js';
import { cassetteRecords } from '../src/recording/import.js';
import { importRecordFile } from '../src/operations/administration.js';
import { exportRecords } from '../src/store/record-transfer.js';
import { cassetteWriter, type CassetteLine } from '../src/recording/cassette.js';

const ACCOUNTS = 50;
const SEED = 627;
const SECRET = 'a recording secret of the test';

/** Every leaf name of a schema (its properties, through references, unions and lists). */
function leafNames(schema: TSchema, byId: ReadonlyMap<string, TSchema>, names: Set<string>, seen = new Set()): void {
  const s = schema as Record<string, unknown>;
  if (seen.has(s)) return;
  seen.add(s);
  if (typeof s.$ref === 'string') return leafNames(byId.get(s.$ref)!, byId, names, seen);
  for (const key of ['anyOf', 'oneOf', 'allOf'])
    for (const part of (s[key] as TSchema[] | undefined) ?? []) leafNames(part, byId, names, seen);
  if (s.items) leafNames(s.items as TSchema, byId, names, seen);
  for (const [name, property] of Object.entries((s.properties as Record<string, TSchema> | undefined) ?? {})) {
    const p = property as Record<string, unknown>;
    const container = p.properties !== undefined || p.$ref !== undefined || p.items !== undefined;
    if (!container || p.anyOf !== undefined) names.add(name);
    leafNames(property, byId, names, seen);
  }
}

describe('the recording table', () => {
  test('classifies every field of every record type', () => {
    const unknown = RECORDS.flatMap((record) =>
      record.fields
        .filter((field) => recordingSensitivity(field.name) === undefined)
        .map((f) => `${record.name}.${f.name}`),
    );
    assert.deepEqual(unknown, []);
  });

  test('classifies every string field by name, and every protected field as member data', () => {
    for (const record of RECORDS)
      for (const field of record.fields) {
        const sensitivity = recordingSensitivity(field.name)!;
        if (field.protection) assert.ok(PSEUDONYMOUS.has(sensitivity), `${record.name}.${field.name}`);
        if (field.kind === 'string') assert.notEqual(sensitivity, 'amount', `${record.name}.${field.name}`);
      }
  });

  test("classifies every leaf of every operation's request and answer", () => {
    const byId = new Map(SHARED_SCHEMAS.map((schema) => [(schema as { $id?: string }).$id!, schema]));
    const names = new Set<string>();
    for (const op of CORE_OPERATIONS) {
      leafNames(Type.Object(op.request), byId, names);
      leafNames(op.response, byId, names);
    }
    // Containers named like a leaf (a list of entries) are walked; the rest must be known.
    const unknown = [...names].filter(
      (name) => recordingSensitivity(name) === undefined && !/List$|Filter$|Context$|Status$/.test(name),
    );
    assert.deepEqual(unknown.sort(), []);
  });
});

describe('cassette files', () => {
  test('rotate by size, and the oldest go once the total passes its bound', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'coregate-cassette-'));
    try {
      const writer = cassetteWriter(dir, { fileBytes: 2_000, totalBytes: 6_000, queueLines: 10_000 }, (error) => {
        throw error;
      });
      const line = (n: number): CassetteLine => ({
        release: '3.0',
        service: 'findby',
        operation: 'findBySSN',
        family: 'P1',
        name: 'findBySSN',
        request: { SSN: `9${String(n).padStart(8, '0')}` },
        status: 200,
        outcome: 'ok',
        latencyMs: 1,
        time: new Date(0).toISOString(),
      });
      for (let n = 0; n < 400; n += 1) {
        assert.equal(writer.append(line(n)), true);
        if (n % 50 === 49) await writer.flush();
      }
      await writer.close();
      const files = readdirSync(dir).sort();
      const sizes = files.map((name) => readFileSync(join(dir, name)).length);
      assert.ok(files.length >= 2, files.join());
      assert.ok(sizes.reduce((a, b) => a + b, 0) <= 6_000 + 2_000, sizes.join());
      // The newest lines are kept; the oldest went with their files.
      const text = files.map((name) => readFileSync(join(dir, name), 'utf8')).join('');
      assert.match(text, /"SSN":"900000399"/);
      assert.doesNotMatch(text, /"SSN":"900000000"/);
      assert.deepEqual(writer.counts(), { written: 400, dropped: 0 });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('amounts', () => {
  test('are kept, or with COREGATE_RECORD_JITTER_AMOUNTS moved by at most 10%, the same amount the same way', () => {
    const kept = scrubber({ secret: Buffer.from(SECRET), jitterAmounts: false });
    const jittered = scrubber({ secret: Buffer.from(SECRET), jitterAmounts: true });
    const hold = { ShareHold: { Amount: 536.15, Type: 2 } };
    assert.deepEqual(kept(hold), hold);
    const moved = (jittered(hold) as typeof hold).ShareHold;
    assert.equal(moved.Type, 2);
    assert.ok(Math.abs(moved.Amount - 536.15) <= 53.62 && moved.Amount !== 536.15, String(moved.Amount));
    assert.deepEqual(jittered(hold), jittered({ ShareHold: { Amount: 536.15, Type: 2 } }));
  });
});

describe('pseudonyms', () => {
  const names = pseudonyms(Buffer.from(SECRET));

  test('are valid in form: SSNs in the never-issued 9xx area, Luhn-valid cards of the same length, 10-digit accounts', () => {
    assert.match(names.of('ssn', '304048949'), /^9\d{8}$/);
    const card = names.of('pan', '4312755963861384');
    assert.equal(card.length, 16);
    assert.ok(luhnValid(card), card);
    assert.notEqual(card, '4312755963861384');
    assert.match(names.of('account', '0000000001'), /^\d{10}$/);
    assert.match(names.of('birthDate', '1954-06-18'), /^1954-\d{2}-\d{2}$/);
    assert.match(names.of('email', 'someone@example.org'), /^[a-z]+@example\.com$/);
  });

  test('are the same for the same value, in any letter case of a name, and differ between secrets', () => {
    assert.equal(names.of('ssn', '304048949'), names.of('ssn', '304048949'));
    assert.equal(names.of('name', 'RIVERA C'), names.of('name', 'Rivera C').toUpperCase());
    const other = pseudonyms(Buffer.from('another recording secret'));
    assert.notEqual(other.of('ssn', '304048949'), names.of('ssn', '304048949'));
  });

  test('a scrubbed request has no credentials, tokens, queries or fields the table does not know', () => {
    const scrub = scrubber({ secret: Buffer.from(SECRET), jitterAmounts: false });
    const scrubbed = scrub({
      Credentials: { AdministrativeCredentials: { Password: 'hunter2' } },
      AccountNumber: '0000000001',
      PagingRequestContext: { NumberOfRecordsToReturn: 10, Token: 'opaque' },
      SearchFilter: { Query: "Ssn = '304048949'" },
      SomethingNew: 'a value in clear',
      ShareHoldFields: { Amount: 12.5, Reference1: 'MOBILE DEPOSIT' },
    });
    assert.deepEqual(Object.keys(scrubbed as object).sort(), [
      'AccountNumber',
      'PagingRequestContext',
      'SearchFilter',
      'ShareHoldFields',
    ]);
    const text = JSON.stringify(scrubbed);
    for (const clear of ['hunter2', 'opaque', '304048949', 'a value in clear', '0000000001', 'MOBILE'])
      assert.ok(!text.includes(clear), clear);
    assert.match(text, /"Amount":12.5/);
  });
});

/** The source dataset's member values: SSNs, card numbers, names (of five letters or more) and account numbers. */
function sourceValues(): { kind: string; value: string }[] {
  const values = new Map<string, string>();
  for (let index = 1; index <= ACCOUNTS; index += 1) {
    const bundle = generateAccount(SEED, index);
    values.set(bundle.accountNumber, 'account');
    for (const name of bundle.records.ShareName) {
      const v = name.values as Record<string, unknown>;
      if (typeof v.Ssn === 'string') values.set(v.Ssn, 'ssn');
      for (const field of ['First', 'Last', 'LongName'])
        if (typeof v[field] === 'string' && (v[field] as string).length >= 5) values.set(v[field] as string, 'name');
    }
    for (const card of bundle.records.Card) values.set((card.values as { CardNumber: string }).CardNumber, 'pan');
  }
  return [...values].map(([value, kind]) => ({ kind, value }));
}

/** The source values found in a text, each as a word of its own (a name inside another word is not it). */
function sourceHits(text: string, values: readonly { kind: string; value: string }[]): string[] {
  return values
    .filter(({ value }) =>
      new RegExp(`(?<![0-9A-Za-z])${value.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(?![0-9A-Za-z])`, 'i').test(text),
    )
    .map(({ kind, value }) => `${kind} ${value}`);
}

/** The reads and updates of the account and findBy services, and collateral and corporate transfer reads. */
const RECORDED = OPERATIONS.filter((op) => op.service !== 'usermanagement');
const operation = (name: string, family: 'P1' | 'P2' = 'P1') =>
  OPERATIONS.find((op) => op.name === name && op.family === family)!;
const FINDBY = OPERATIONS.filter((op) => op.service === 'findby');
/** The accounts of a findBy answer, in order. */
const accountsOf = (answer: Record<string, unknown>) =>
  [answer.AccountNumber]
    .flat()
    .filter((a): a is string => typeof a === 'string')
    .sort();

function cassetteText(dir: string): string {
  return readdirSync(dir)
    .filter((name) => name.endsWith('.ndjson'))
    .sort()
    .map((name) => readFileSync(join(dir, name), 'utf8'))
    .join('');
}

for (const backend of BACKENDS) {
  describe(`recording a core on ${backend.name}`, () => {
    let core: Harness;
    let gateway: Harness;
    let examples: DemoExamples;
    let dir: string;

    before(async () => {
      core = await createHarness(backend, { soapAuth: 'credentials' });
      await seedDatabase(core.database, core.secrets, { accounts: ACCOUNTS, seed: SEED });
      examples = demoExamples(SEED, ACCOUNTS);
      const coreUrl = await core.app.listen({ port: 0, host: '127.0.0.1' });
      dir = mkdtempSync(join(tmpdir(), 'coregate-recording-'));
      const config = loadConfig({
        COREGATE_CORE: 'symxchange',
        COREGATE_SYMXCHANGE_URL: coreUrl,
        COREGATE_RECORD_DIR: dir,
        COREGATE_RECORD_SECRET: SECRET,
      });
      gateway = await createHarness(backend, {
        core: config.core,
        symxchange: config.symxchange,
        recording: config.recording,
      });
    });
    after(async () => {
      await gateway?.close();
      await core?.close();
      if (!process.env.KEEP_RECORDING) rmSync(dir, { recursive: true, force: true });
      else process.stdout.write(`# kept ${dir}\n`);
    });

    const call = (op: AnyOperation, body: Record<string, unknown>) => gateway.call(operationPath(op), body);

    test('every exchange is recorded, scrubbed: none of the source member values is in the cassette', async () => {
      for (const op of RECORDED) {
        const answer = await call(op, demoRequest(examples, op));
        assert.ok(answer.statusCode < 500, `${op.family} ${op.name}: ${answer.body}`);
      }
      await gateway.app.close();
      const text = cassetteText(dir);
      const lines = text
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as Record<string, unknown>);
      assert.ok(lines.length >= RECORDED.length, `${lines.length} lines`);
      for (const line of lines) {
        for (const key of ['release', 'service', 'operation', 'request', 'status', 'outcome', 'latencyMs', 'time'])
          assert.ok(key in line, `${key} in ${JSON.stringify(line).slice(0, 200)}`);
      }
      // Every answer read is hashed as the core sent it.
      for (const line of lines.filter((l) => l.status === 200))
        assert.match(String(line.answerSha256), /^[0-9a-f]{64}$/, String(line.operation));
      assert.deepEqual(sourceHits(text, sourceValues()), []);
      assert.ok(!text.includes('test-admin-password'), 'no credential');
      assert.ok(!text.includes('Credentials'), 'no credentials element');
    });

    /** Each findBy of the demo requests: the pseudonym of what it was asked, and of the accounts it found. */
    const expectedLookups = async () => {
      const names = pseudonyms(Buffer.from(SECRET));
      const kindOf: Record<string, Parameters<typeof names.of>[0]> = {
        SSN: 'ssn',
        CardNumber: 'pan',
        HomeBankingUserName: 'userName',
        ShortName: 'name',
        MICR: 'micr',
        Draft: 'draft',
        LookupNumber: 'identifier',
      };
      return Promise.all(
        FINDBY.map(async (op) => {
          const body = demoRequest(examples, op);
          const source = (await core.call(operationPath(op), body)).json() as Record<string, unknown>;
          const pseudonymous = Object.fromEntries(
            Object.entries(body).map(([name, value]) =>
              kindOf[name] ? [name, names.of(kindOf[name], value as string)] : [name, value],
            ),
          );
          return {
            op,
            body: pseudonymous,
            accounts: accountsOf(source)
              .map((a) => names.of('account', a))
              .sort(),
          };
        }),
      );
    };

    test('a recording under load answers every call: a full queue drops lines and counts them, never the call', async () => {
      const coreUrl = `http://127.0.0.1:${(core.app.server.address() as { port: number }).port}`;
      const calls = 200;
      const op = operation('findBySSN');
      const body = demoRequest(examples, op);
      for (const queue of ['1', '10000']) {
        const loadDir = mkdtempSync(join(tmpdir(), 'coregate-recording-load-'));
        const config = loadConfig({
          COREGATE_CORE: 'symxchange',
          COREGATE_SYMXCHANGE_URL: coreUrl,
          COREGATE_RECORD_DIR: loadDir,
          COREGATE_RECORD_SECRET: SECRET,
          COREGATE_RECORD_QUEUE: queue,
        });
        const loaded = await createHarness(backend, {
          core: config.core,
          symxchange: config.symxchange,
          recording: config.recording,
        });
        try {
          const answers = await Promise.all(Array.from({ length: calls }, () => loaded.call(operationPath(op), body)));
          assert.deepEqual(new Set(answers.map((a) => a.statusCode)), new Set([200]));
          const metrics = (await loaded.app.inject({ method: 'GET', url: '/metrics' })).body;
          await loaded.app.close();
          const written = cassetteText(loadDir).trim().split('\n').length;
          const counted = (result: string) =>
            Number(new RegExp(`coregate_recording_exchanges_total\\{result="${result}"\\} (\\d+)`).exec(metrics)?.[1]);
          if (queue === '10000') assert.equal(written, calls, 'a queue with room records every call');
          else {
            // Every call was answered; what the queue had no room for is counted, and logged once.
            assert.ok(written >= 1 && written <= calls, `${written} written`);
            const dropped = counted('dropped');
            assert.ok(dropped >= 0 && counted('written') + dropped <= calls, metrics);
            if (written < calls) assert.ok(loaded.logs().some((line) => line.includes('the recording queue is full')));
          }
        } finally {
          await loaded.close();
          rmSync(loadDir, { recursive: true, force: true });
        }
      }
    });

    describe('imported into a fresh store', () => {
      let sandbox: Harness;
      let exchanges: CassetteLine[];

      before(async () => {
        exchanges = await readCassettes([dir]);
        sandbox = await createHarness(backend);
        const records = cassetteRecords(exchanges, sandbox.secrets);
        assert.deepEqual(records.refused, {});
        await importRecordFile(
          sandbox.database.db,
          sandbox.secrets,
          (async function* () {
            yield* records.lines;
          })(),
          { replace: false },
        );
      });
      after(() => sandbox?.close());

      test('answers the recorded lookups with the pseudonyms: SSN A → accounts X is A′ → X′', async () => {
        for (const { op, body, accounts } of await expectedLookups()) {
          const answer = await sandbox.call(operationPath(op), body);
          assert.equal(answer.statusCode, 200, `${op.name}: ${answer.body}`);
          assert.deepEqual(accountsOf(answer.json()), accounts, op.name);
        }
      });

      test('answers the recorded reads as the cassette recorded them, and takes updates', async () => {
        const read = exchanges.find((line) => line.name === 'getShareHoldSelectFields' && line.outcome === 'ok')!;
        const request = read.request as Record<string, unknown>;
        const op = operation('getShareHoldSelectFields', read.family as 'P1' | 'P2');
        const answer = await sandbox.call(operationPath(op), request);
        assert.equal(answer.statusCode, 200, answer.body);
        const recorded = (read.answer as { ShareHold: Record<string, unknown> }).ShareHold;
        const got = answer.json().ShareHold as Record<string, unknown>;
        for (const [name, value] of Object.entries(recorded))
          if (value !== null) assert.deepEqual(got[name], value, name);
        const update = await sandbox.call(operationPath(operation('updateShareHoldByID')), {
          AccountNumber: request.AccountNumber,
          ShareId: request.ShareId,
          ShareHoldLocator: request.ShareHoldLocator,
          ShareHoldFields: { Reference1: 'SANDBOX UPDATE' },
        });
        assert.equal(update.statusCode, 200, update.body);
        const after = await sandbox.call(operationPath(op), request);
        assert.equal(after.json().ShareHold.Reference1, 'SANDBOX UPDATE');
      });

      test('holds none of the source member values (its export grepped)', async () => {
        const lines: string[] = [];
        await exportRecords(sandbox.database.db, (line) => void lines.push(line));
        const text = lines.join('\n');
        assert.ok(lines.length > 100, `${lines.length} lines`);
        assert.deepEqual(sourceHits(text, sourceValues()), []);
      });
    });

    test(
      'the command line imports a cassette into a fresh data dir, and a replay reports what it could not match',
      {
        skip: backend.name !== 'pglite' && 'the command line is the same on both databases',
      },
      async () => {
        const dataDir = mkdtempSync(join(tmpdir(), 'coregate-recording-store-'));
        const env = { PATH: process.env.PATH, LOG_LEVEL: 'silent', COREGATE_DATA_DIR: dataDir };
        const run = (args: string[]) => {
          const child = spawn(process.execPath, [...CLI, 'recording', ...args], {
            env,
            stdio: ['ignore', 'pipe', 'pipe'],
          });
          let out = '';
          child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
          child.stderr.on('data', (chunk: Buffer) => (out += chunk.toString()));
          return { child, out: () => out };
        };
        try {
          const imported = run(['import', dir]);
          const [code] = (await once(imported.child, 'exit')) as [number];
          assert.equal(code, 0, imported.out());
          assert.match(imported.out(), /Imported [0-9,]+ records/);
          assert.match(imported.out(), /SymXchange 3\.0/);

          const replay = run(['replay', dir, '--port', '0', '--no-latency']);
          while (!/JSON API token: \S+/.test(replay.out())) await once(replay.child.stdout, 'data');
          const url = /at (http:\/\/\S+)/.exec(replay.out())![1]!;
          const token = /JSON API token: (\S+)/.exec(replay.out())![1]!;
          const answer = await fetch(`${url}${operationPath(operation('findBySSN'))}`, {
            method: 'POST',
            headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
            body: JSON.stringify({ Credentials: { AdministrativeCredentials: { Password: 'any' } }, SSN: '900000002' }),
          });
          assert.equal(answer.status, 404);
          replay.child.kill('SIGTERM');
          const [replayCode] = (await once(replay.child, 'exit')) as [number];
          assert.equal(replayCode, 0, replay.out());
          assert.match(replay.out(), /1 request matched no recorded exchange/);
          assert.match(replay.out(), /P1 findBySSN \{"SSN":"900000002"\}/);
        } finally {
          rmSync(dataDir, { recursive: true, force: true });
        }
      },
    );

    describe('replayed', () => {
      let replay: Replay;
      let base: string;

      before(async () => {
        replay = await startReplay(await readCassettes([dir]), loadConfig({}), { latency: false });
        base = await replay.app.listen({ port: 0, host: '127.0.0.1' });
      });
      after(() => replay?.close());

      const json = (op: AnyOperation, body: Record<string, unknown>) =>
        replay.app.inject({
          method: 'POST',
          url: operationPath(op),
          headers: { authorization: `Bearer ${replay.token}`, 'content-type': 'application/json' },
          payload: JSON.stringify({ Credentials: { AdministrativeCredentials: { Password: 'any' } }, ...body }),
        });

      test('answers the recorded calls of a JSON client', async () => {
        for (const { op, body, accounts } of await expectedLookups()) {
          const answer = await json(op, body);
          assert.equal(answer.statusCode, 200, `${op.name}: ${answer.body}`);
          assert.deepEqual(accountsOf(answer.json()), accounts, op.name);
        }
      });

      test('answers the recorded calls of a node-soap client', async () => {
        const clients = await soapClients(base, FINDBY);
        for (const { op, body, accounts } of await expectedLookups()) {
          const args = soapArguments(
            op,
            { ...body, Credentials: { AdministrativeCredentials: { Password: 'any' } } },
            'r-1',
          );
          const answer = jsonOfSoapAnswer(op, await callSoap(clients, op, args), SHARED_SCHEMAS);
          assert.deepEqual(accountsOf(answer), accounts, op.name);
        }
      });

      test('a request the recording has no exchange for is 404 NOT_FOUND, and named in the report', async () => {
        const answer = await json(operation('findBySSN'), { SSN: '900000001' });
        assert.equal(answer.statusCode, 404, answer.body);
        assert.equal(answer.json().code, 'NOT_FOUND');
        assert.ok(
          replay.unmatched().some((u) => u.operation === 'P1 findBySSN' && u.keys.includes('900000001')),
          JSON.stringify(replay.unmatched()),
        );
      });
    });
  });
}
