/**
 * SymXchange releases, on both databases: coregate speaks each release it knows where its installations do,
 * and learns one it has never seen from a core's own WSDLs.
 * - The SOAP face serves 2020.00 at /SymXchange/2020.00/<service>: a node-soap client bound to that WSDL reads,
 *   updates and gets faults, and its answers equal the JSON API's.
 * - A gateway given only a 2020.00 core's published address (coregate's own 2020.00 face) reads the release
 *   from the core's WSDLs and answers findBy, share read-backs and share updates (P1 and P2) as the store does;
 *   an operation the release lacks is 501 CORE_OPERATION_UNSUPPORTED, and a field its update object lacks is a
 *   per-field failure with the rest applied.
 * - The same JSON answers whichever release the core speaks.
 * - A stand-in core built from a WSDL set this test derives (renamed namespaces, a field dropped, a new update
 *   object name) is learned, and answered through.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { createServer, type Server } from 'node:http';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import soap from 'soap';
import { FACTS_2020_00, releaseFacts, type SymxServiceName } from '../src/catalog/symxchange/index.js';
import { loadConfig } from '../src/config.js';
import { readRelease } from '../src/symxchange/release-reader.js';
import { createSymxCodec, type SymxCodec } from '../src/symxchange/codec.js';
import { CORE_OPERATIONS, OPERATIONS, SHARED_SCHEMAS } from '../src/operations/index.js';
import { operationPath, type AnyOperation } from '../src/operations/types.js';
import { demoRequest } from '../src/seed/demo-requests.js';
import { demoExamples, type DemoExamples } from '../src/seed/examples.js';
import { seedDatabase } from '../src/seed/load.js';
import { adminCredentials, BACKENDS, createHarness, type Harness } from './support/harness.js';
import { requestViolations } from './support/schema-check.js';
import { CLI } from './support/serve-process.js';
import { jsonOfSoapAnswer, withoutNulls } from './support/soap-client.js';

const ACCOUNTS = 50;
const SEED = 627;
const RELEASE_PATH = '/SymXchange/2020.00';
const operation = (name: string, family: 'P1' | 'P2') =>
  OPERATIONS.find((op) => op.name === name && op.family === family)!;

/** The operations a 2020.00 core has: the findBy lookups and the account service's reads and updates. */
const RELEASE_2020_OPERATIONS = OPERATIONS.filter((op) => op.service === 'findby' || op.service === 'account');

const gatewaySettings = (url: string) => {
  const config = loadConfig({ COREGATE_CORE: 'symxchange', COREGATE_SYMXCHANGE_URL: url });
  return { core: config.core, symxchange: config.symxchange };
};

/** Paging tokens are each server's own: whether another page follows is what must agree. */
const withoutTokens = (answer: Record<string, unknown>) =>
  'Token' in answer ? { ...answer, Token: answer.Token !== '' } : answer;

for (const backend of BACKENDS) {
  describe(`SymXchange releases on ${backend.name}`, () => {
    let core: Harness;
    let coreUrl: string;
    let examples: DemoExamples;

    before(async () => {
      core = await createHarness(backend, { soapAuth: 'credentials' });
      await seedDatabase(core.database, core.secrets, { accounts: ACCOUNTS, seed: SEED });
      examples = demoExamples(SEED, ACCOUNTS);
      coreUrl = await core.app.listen({ port: 0, host: '127.0.0.1' });
    });
    after(() => core?.close());

    /** How many times the core's store applied an update that wrote `value`. */
    const appliedAtCore = async (value: string) => {
      const { rows } = await sql<{ n: number }>`select count(*)::int as n from account_fm_history
        where new_character = ${value}`.execute(core.database.db);
      return rows[0]!.n;
    };

    describe('the SOAP face speaks 2020.00 at /SymXchange/2020.00/<service>', () => {
      const clients = new Map<string, soap.Client>();
      const codec2020 = createSymxCodec({
        operations: CORE_OPERATIONS,
        schemas: SHARED_SCHEMAS,
        facts: FACTS_2020_00,
      });
      const clientOf = async (service: string) => {
        let client = clients.get(service);
        if (!client)
          clients.set(service, (client = await soap.createClientAsync(`${coreUrl}${RELEASE_PATH}/${service}?wsdl`)));
        return client;
      };
      /** The client's arguments: the Request with its MessageId, the fields in the release's update object. */
      const argumentsOf = (op: AnyOperation, body: Record<string, unknown>, messageId: string) => {
        const updateObject = codec2020.mapping.updateObject(op);
        const request: Record<string, unknown> = { attributes: { MessageId: messageId } };
        for (const [name, value] of Object.entries(body))
          request[updateObject?.json === name ? updateObject.element : name] = value;
        return { Request: request };
      };
      const callSoap = async (op: AnyOperation, body: Record<string, unknown>) => {
        const client = (await clientOf(op.service)) as unknown as Record<
          string,
          (args: unknown) => Promise<[Record<string, unknown>]>
        >;
        const [answer] = await client[`${op.name}Async`]!(
          argumentsOf(op, { ...body, Credentials: adminCredentials }, `r-${op.name}`),
        );
        return jsonOfSoapAnswer(op, answer, SHARED_SCHEMAS);
      };

      test('the WSDLs are the release: its endpoints, namespaces and update objects, and no Version_1', async () => {
        for (const service of ['findby', 'account']) {
          const wsdl = await (await fetch(`${coreUrl}${RELEASE_PATH}/${service}?wsdl`)).text();
          assert.ok(wsdl.includes(`<soap:address location="${coreUrl}${RELEASE_PATH}/${service}"/>`), service);
          assert.ok(wsdl.includes(`targetNamespace="http://www.symxchange.generated.symitar.com/${service}"`));
          assert.ok(wsdl.includes('http://www.symxchange.generated.symitar.com/common/dto/common'));
          assert.doesNotMatch(wsdl, /Version_1/);
        }
        const account = await (await fetch(`${coreUrl}${RELEASE_PATH}/account?wsdl`)).text();
        assert.match(account, /<xsd:element name="ShareHoldUpdateableFields"/);
        assert.doesNotMatch(account, /UpdatableFields/);
        for (const service of ['collateral', 'corptransfer'])
          assert.equal(
            (await fetch(`${coreUrl}${RELEASE_PATH}/${service}?wsdl`)).status,
            404,
            `2020.00 has no ${service}`,
          );
      });

      test('the seven findBy lookups through a client bound to the 2020.00 WSDL answer what the JSON API answers', async () => {
        const lookups = RELEASE_2020_OPERATIONS.filter((op) => op.service === 'findby');
        assert.equal(lookups.length, 7);
        for (const op of lookups) {
          const body = demoRequest(examples, op);
          const json = await core.call(operationPath(op), body);
          assert.equal(json.statusCode, 200, json.body);
          assert.deepEqual(withoutNulls(await callSoap(op, body)), withoutNulls(json.json()), op.name);
        }
      });

      test('the share read-backs answer what the JSON API answers', async () => {
        const reads = RELEASE_2020_OPERATIONS.filter(
          (op) => op.service === 'account' && !op.writes && op.family === 'P2',
        );
        assert.ok(reads.length >= 20, `${reads.length} reads`);
        for (const op of reads) {
          const body = demoRequest(examples, op);
          const json = await core.call(operationPath(op), body);
          assert.equal(json.statusCode, 200, json.body);
          assert.deepEqual(
            withoutTokens(withoutNulls(await callSoap(op, body)) as Record<string, unknown>),
            withoutTokens(withoutNulls(json.json()) as Record<string, unknown>),
            op.name,
          );
        }
      });

      test('a share update in ShareHoldUpdateableFields lands, and its failures repeat per field', async () => {
        const hold = examples.shareTargets.find((t) => t.record === 'ShareHold')!;
        const op = operation('updateShareHoldByID', 'P2');
        const answer = await callSoap(op, {
          AccountNumber: hold.accountNumber,
          ShareId: hold.shareId,
          ShareHoldLocator: hold.locator,
          ShareHoldUpdatableFields: {
            Reference1: `R2020 ${backend.name}`,
            Reference2: 'X'.repeat(200),
            PayeeName: 'Y'.repeat(200),
          },
        });
        const status = answer.UpdateStatus as { isAllFieldsUpdateSuccess: boolean; FailedUpdateStatus: unknown[] };
        assert.equal(status.isAllFieldsUpdateSuccess, false);
        assert.equal(status.FailedUpdateStatus.length, 2, JSON.stringify(status));
        const read = await core.call(operationPath(operation('getShareHoldSelectFields', 'P2')), {
          AccountNumber: hold.accountNumber,
          ShareId: hold.shareId,
          ShareHoldLocator: hold.locator,
          SelectableFields: { ShareHoldFields: { Reference1: true } },
        });
        assert.equal(read.json().ShareHold.Reference1, `R2020 ${backend.name}`);
      });

      test('a refusal is a Client fault carrying the problem code', async () => {
        const op = operation('findBySSN', 'P1');
        await assert.rejects(
          callSoap(op, { SSN: '12345678' }),
          (error: { root?: { Envelope?: { Body?: { Fault?: { faultcode?: string; detail?: unknown } } } } }) => {
            const fault = error.root?.Envelope?.Body?.Fault;
            assert.match(String(fault?.faultcode), /Client$/);
            assert.match(JSON.stringify(fault?.detail), /VALIDATION_FAILED/);
            return true;
          },
        );
      });
    });

    describe('a gateway given only a 2020.00 core’s published address', () => {
      let gateway: Harness;
      let gateway30: Harness;

      /** Every SOAP call the 2020.00 gateway sent, as it reached the core. */
      const sent: { path: string; body: string }[] = [];
      let recorder: Server;

      before(async () => {
        // A pass-through in front of the core that keeps what the gateway sends.
        recorder = createServer((request, response) => {
          const chunks: Buffer[] = [];
          request.on('data', (chunk: Buffer) => chunks.push(chunk));
          request.on('end', async () => {
            const body = Buffer.concat(chunks).toString('utf8');
            if (request.method === 'POST') sent.push({ path: request.url ?? '', body });
            const answer = await fetch(`${coreUrl}${request.url}`, {
              method: request.method,
              headers: Object.fromEntries(
                ['content-type', 'soapaction'].flatMap((name) =>
                  request.headers[name] ? [[name, String(request.headers[name])]] : [],
                ),
              ),
              ...(request.method === 'POST' ? { body } : {}),
            });
            response
              .writeHead(answer.status, { 'content-type': answer.headers.get('content-type') ?? 'text/xml' })
              .end(await answer.text());
          });
        });
        await new Promise<void>((resolve) => recorder.listen(0, '127.0.0.1', resolve));
        const recorderUrl = `http://127.0.0.1:${(recorder.address() as { port: number }).port}`;
        gateway = await createHarness(backend, gatewaySettings(`${recorderUrl}${RELEASE_PATH}`));
        gateway30 = await createHarness(backend, gatewaySettings(coreUrl));
      });
      after(async () => {
        await gateway?.close();
        await gateway30?.close();
        await new Promise((resolve) => recorder?.close(resolve));
      });

      test('reads the release from the core’s WSDLs, and /ready names it', async () => {
        const ready = async (h: Harness) => (await h.app.inject({ method: 'GET', url: '/ready' })).json().core;
        assert.equal(await ready(gateway), '627: closed, SymXchange 2020.00');
        assert.equal(await ready(gateway30), '627: closed, SymXchange 3.0');
      });

      test('every findBy and share read answers what the store answers, and what a 3.0 core’s gateway answers', async () => {
        for (const op of RELEASE_2020_OPERATIONS.filter((o) => !o.writes)) {
          const body = demoRequest(examples, op);
          const [fromStore, from2020, from30] = [
            await core.call(operationPath(op), body),
            await gateway.call(operationPath(op), body),
            await gateway30.call(operationPath(op), body),
          ];
          assert.equal(from2020.statusCode, 200, `${op.family} ${op.name}: ${from2020.body}`);
          assert.deepEqual(withoutTokens(from2020.json()), withoutTokens(fromStore.json()), `${op.family} ${op.name}`);
          assert.deepEqual(
            withoutTokens(from2020.json()),
            withoutTokens(from30.json()),
            `${op.family} ${op.name} (3.0)`,
          );
        }
      });

      test('share updates, P1 and P2, land in the core’s store', async () => {
        const hold = examples.shareTargets.find((t) => t.record === 'ShareHold')!;
        const address = { AccountNumber: hold.accountNumber, ShareId: hold.shareId, ShareHoldLocator: hold.locator };
        for (const family of ['P1', 'P2'] as const) {
          const value = `G2020 ${family} ${backend.name}`;
          const answer = await gateway.call(operationPath(operation('updateShareHoldByID', family)), {
            ...address,
            [family === 'P1' ? 'ShareHoldFields' : 'ShareHoldUpdatableFields']: { Reference2: value },
          });
          assert.equal(answer.statusCode, 200, answer.body);
          assert.equal(answer.json().UpdateStatus.isAllFieldsUpdateSuccess, true);
          assert.equal(await appliedAtCore(value), 1, family);
        }
      });

      test('a P1 field outside 2020.00’s update object is a per-field failure; the rest is applied', async () => {
        const tracking = examples.shareTargets.find((t) => t.record === 'ShareTracking')!;
        const value = `T2020 ${backend.name}`.slice(0, 20);
        const answer = await gateway.call(operationPath(operation('updateShareTrackingByID', 'P1')), {
          AccountNumber: tracking.accountNumber,
          ShareId: tracking.shareId,
          ShareTrackingLocator: tracking.locator,
          ShareTrackingFields: { UserChar1: value, FmLastDate: '2024-01-02' },
        });
        assert.equal(answer.statusCode, 200, answer.body);
        const status = answer.json().UpdateStatus;
        assert.equal(status.isAllFieldsUpdateSuccess, false);
        assert.equal(status.FailedUpdateStatus.ErrorCode, 'NOT_UPDATABLE_AT_CORE');
        assert.match(status.FailedUpdateStatus.ErrorMessage, /FmLastDate/);
        assert.equal(await appliedAtCore(value), 1, 'the other field was applied');
      });

      test('coregate core check prints the release, what the core lacks, and the fields on one side only', async () => {
        const { stdout } = await promisify(execFile)(process.execPath, [...CLI, 'core', 'check'], {
          env: {
            ...process.env,
            DATABASE_URL: '',
            COREGATE_CORE: 'symxchange',
            COREGATE_SYMXCHANGE_URL: `${coreUrl}${RELEASE_PATH}`,
          },
          encoding: 'utf8',
          timeout: 60_000,
        });
        assert.match(stdout, /SymXchange 2020\.00, read from http:\/\/127\.0\.0\.1:[0-9]+\/SymXchange\/2020\.00 in /);
        assert.match(stdout, /findby at \/SymXchange\/2020\.00\/findby: 7 of 7 operations\n/);
        assert.match(
          stdout,
          /collateral: the core has no such service: its [0-9]+ operations answer 501 CORE_OPERATION_UNSUPPORTED/,
        );
        assert.match(stdout, /ShareName: only coregate has Headquarters \(null in answers\)/);
      });

      test('every request the gateway sent is valid against 2020.00’s schema, as its facts declare it', () => {
        assert.ok(sent.length > 40, `${sent.length} requests`);
        for (const { path, body } of sent) {
          const service = path.split('/').pop() as SymxServiceName;
          assert.deepEqual(requestViolations(FACTS_2020_00, service, body), [], `${path}: ${body.slice(0, 300)}`);
        }
        // The check can fail: 3.0's update, sent to a 2020.00 core, breaks it.
        const update = operation('updateShareHoldByID', 'P2');
        const as30 = createSymxCodec({ operations: CORE_OPERATIONS, schemas: SHARED_SCHEMAS }).encodeRequest(
          update,
          {
            AccountNumber: '0000000001',
            ShareId: '0001',
            ShareHoldLocator: 1,
            ShareHoldUpdatableFields: { Reference1: 'X' },
          },
          { messageId: 'm' },
        );
        assert.notDeepEqual(requestViolations(FACTS_2020_00, 'account', as30), []);
      });

      test('an operation 2020.00 lacks is 501 CORE_OPERATION_UNSUPPORTED, and the core is not called', async () => {
        for (const name of ['getCollateralSelectFields', 'getCorpTransferSelectFields']) {
          const op = OPERATIONS.find((o) => o.name === name)!;
          const response = await gateway.call(operationPath(op), demoRequest(examples, op));
          assert.equal(response.statusCode, 501, response.body);
          assert.equal(response.json().code, 'CORE_OPERATION_UNSUPPORTED');
        }
      });
    });

    describe('a core speaking a release coregate has never seen', () => {
      let standIn: Server;
      let standInUrl: string;
      let gateway: Harness;
      const NEW_PATH = '/SymXchange/2031.01';

      before(async () => {
        // The release: 2020.00's WSDLs with renamed namespaces, a new update object name, and a field its
        // update object no longer holds.
        const wsdls = new Map<string, string>();
        for (const service of ['findby', 'account']) {
          const served = await (await fetch(`${coreUrl}${RELEASE_PATH}/${service}?wsdl`)).text();
          wsdls.set(
            service,
            served
              .replaceAll(
                'http://www.symxchange.generated.symitar.com/',
                'http://www.symxchange.generated.symitar.com/v9/',
              )
              .replaceAll('ShareHoldUpdateableFields', 'ShareHoldChangeFields')
              .replace(
                /(<xsd:complexType name="ShareHoldChangeFields">.*?)<xsd:element name="Reference4"[^>]*\/>/s,
                '$1',
              )
              .replaceAll(`${RELEASE_PATH}/`, `${NEW_PATH}/`),
          );
        }
        const learned = await readRelease({
          release: '2031.01',
          load: async (location) => wsdls.get(location)!,
          services: { findby: 'findby', account: 'account' },
          operations: CORE_OPERATIONS,
        });
        const codec: SymxCodec = createSymxCodec({
          operations: CORE_OPERATIONS,
          schemas: SHARED_SCHEMAS,
          facts: releaseFacts(learned),
        });
        // The stand-in: the derived WSDLs at ?wsdl, and each call decoded in the new dialect and answered by
        // the store's JSON API.
        standIn = createServer((request, response) => {
          const service = (request.url ?? '').split('?')[0]!.split('/').pop()!;
          if (request.method === 'GET') {
            const wsdl = wsdls.get(service);
            return wsdl
              ? response.writeHead(200, { 'content-type': 'text/xml' }).end(wsdl)
              : response.writeHead(404).end();
          }
          const chunks: Buffer[] = [];
          request.on('data', (chunk: Buffer) => chunks.push(chunk));
          request.on('end', async () => {
            const family = service === 'findby' ? 'P1' : 'P2';
            const decoded = codec.decodeRequest(Buffer.concat(chunks).toString('utf8'), {
              service: service as 'findby' | 'account',
              family,
            });
            const op = decoded.operation as AnyOperation;
            const answer = await core.call(operationPath(op), decoded.body);
            response
              .writeHead(answer.statusCode === 200 ? 200 : 500, { 'content-type': 'text/xml; charset=utf-8' })
              .end(codec.encodeResponse(op, answer.json(), decoded.messageId));
          });
        });
        await new Promise<void>((resolve) => standIn.listen(0, '127.0.0.1', resolve));
        standInUrl = `http://127.0.0.1:${(standIn.address() as { port: number }).port}`;
        gateway = await createHarness(backend, gatewaySettings(`${standInUrl}${NEW_PATH}`));
      });
      after(async () => {
        await gateway?.close();
        await new Promise((resolve) => standIn?.close(resolve));
      });

      test('is learned from its WSDLs and answered through: lookups, reads and updates in its own names', async () => {
        const ready = await gateway.app.inject({ method: 'GET', url: '/ready' });
        assert.equal(
          ready.json().core,
          '627: closed, SymXchange 2031.01',
          gateway
            .logs()
            .filter((l) => /WSDL|SymXchange/.test(l))
            .join('\n'),
        );
        const lookup = operation('findBySSN', 'P1');
        const body = demoRequest(examples, lookup);
        assert.deepEqual(
          (await gateway.call(operationPath(lookup), body)).json(),
          (await core.call(operationPath(lookup), body)).json(),
        );
        const hold = examples.shareTargets.find((t) => t.record === 'ShareHold')!;
        const value = `NEW ${backend.name}`;
        const updated = await gateway.call(operationPath(operation('updateShareHoldByID', 'P2')), {
          AccountNumber: hold.accountNumber,
          ShareId: hold.shareId,
          ShareHoldLocator: hold.locator,
          ShareHoldUpdatableFields: { Reference3: value, Reference4: 'DROPPED' },
        });
        assert.equal(updated.statusCode, 200, updated.body);
        const failures = updated.json().UpdateStatus.FailedUpdateStatus as {
          ErrorCode: string;
          ErrorMessage: string;
        }[];
        assert.deepEqual(
          failures.map((f) => f.ErrorCode),
          ['NOT_UPDATABLE_AT_CORE'],
        );
        assert.match(failures[0]!.ErrorMessage, /Reference4/);
        assert.equal(await appliedAtCore(value), 1);
      });
    });
  });
}
