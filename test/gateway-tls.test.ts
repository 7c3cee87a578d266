/**
 * Gateway mode over TLS, with a CA and certificates made for the test: the gateway trusts the core's CA,
 * presents its client certificate (mutual TLS) and checks the core's name (COREGATE_SYMXCHANGE_SERVERNAME);
 * a core it cannot trust, or one that refuses its certificate, is 503 CORE_UNAVAILABLE. `coregate core
 * check` shows the core's TLS identity, whether the gateway trusts it, and the latency.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { after, before, describe, test } from 'node:test';
import { loadConfig } from '../src/config.js';
import { CORE_OPERATIONS, OPERATIONS, SHARED_SCHEMAS } from '../src/operations/index.js';
import { operationPath } from '../src/operations/types.js';
import type { SymxServiceName } from '../src/catalog/symxchange/index.js';
import { createSymxCodec } from '../src/symxchange/codec.js';
import { wsdlDocument } from '../src/symxchange/wsdl.js';
import { makePki, type Pki } from './support/certificates.js';
import { BACKENDS, createHarness, type Harness } from './support/harness.js';
import { CLI } from './support/serve-process.js';
import { startUpstream, type Upstream } from './support/upstream.js';

const codec = createSymxCodec({ operations: CORE_OPERATIONS, schemas: SHARED_SCHEMAS });
const lookup = OPERATIONS.find((op) => op.name === 'findByHomeUser' && op.family === 'P1')!;
const [backend] = BACKENDS;

describe('gateway mode over TLS', () => {
  let pki: Pki;
  let upstream: Upstream;
  const gateways: Harness[] = [];

  before(async () => {
    pki = makePki();
    upstream = await startUpstream(pki.serverOptions());
    upstream.behave(({ method, url, body }, response) => {
      if (method === 'GET') {
        // The core's WSDLs, as a 3.0 core serves them at `/SymXchange/<service>?wsdl`.
        const service = /^\/SymXchange\/(\w+)\?wsdl$/.exec(url)?.[1] as SymxServiceName | undefined;
        const family = service && codec.mapping.endpoint(service, 'P1').length > 0 ? 'P1' : 'P2';
        if (!service) return response.writeHead(404).end();
        return response
          .writeHead(200, { 'content-type': 'text/xml' })
          .end(wsdlDocument(codec.mapping, { service, family }, `${upstream.url}${url}`));
      }
      const messageId = /MessageId="([^"]*)"/.exec(body)?.[1] ?? '';
      const answer = codec.encodeResponse(lookup, { AccountNumber: '0000000042', MessageId: lookup.name }, messageId);
      response.writeHead(200, { 'content-type': 'text/xml; charset=utf-8' }).end(answer);
    });
  });
  after(async () => {
    for (const gateway of gateways) await gateway.close();
    await upstream?.close();
    pki?.remove();
  });

  /** The gateway's environment: the core's URL and the test PKI's files, as a deployment sets them. */
  const env = (overrides: Record<string, string | undefined> = {}): Record<string, string> =>
    Object.fromEntries(
      Object.entries({
        COREGATE_CORE: 'symxchange',
        COREGATE_SYMXCHANGE_URL: upstream.url,
        COREGATE_SYMXCHANGE_SERVERNAME: 'core.test',
        COREGATE_SYMXCHANGE_CA_FILE: pki.caFile,
        COREGATE_SYMXCHANGE_CERT_FILE: pki.clientCertFile,
        COREGATE_SYMXCHANGE_KEY_FILE: pki.clientKeyFile,
        ...overrides,
      }).filter((entry): entry is [string, string] => entry[1] !== undefined),
    );

  const lookupThrough = async (overrides: Record<string, string | undefined>) => {
    const config = loadConfig(env(overrides));
    const gateway = await createHarness(backend!, { core: config.core, symxchange: config.symxchange });
    gateways.push(gateway);
    return gateway.call(operationPath(lookup), { HomeBankingUserName: 'member42' });
  };

  test('with the CA, a client certificate and the server name, the call is answered and the core sees the certificate', async () => {
    const response = await lookupThrough({});
    assert.equal(response.statusCode, 200, response.body);
    assert.equal(response.json().AccountNumber, '0000000042');
    assert.equal(upstream.received.at(-1)?.clientCertificate, 'coregate-gateway');
  });

  const refusals: [string, Record<string, string | undefined>][] = [
    [
      'without a client certificate the core refuses the gateway',
      { COREGATE_SYMXCHANGE_CERT_FILE: undefined, COREGATE_SYMXCHANGE_KEY_FILE: undefined },
    ],
    ['a core whose certificate another CA signed is not trusted', { COREGATE_SYMXCHANGE_CA_FILE: undefined }],
    ['a core whose certificate names another host is not trusted', { COREGATE_SYMXCHANGE_SERVERNAME: 'other.test' }],
  ];
  for (const [name, overrides] of refusals) {
    test(`${name}: 503 CORE_UNAVAILABLE`, async () => {
      const response = await lookupThrough(overrides);
      assert.equal(response.statusCode, 503, response.body);
      assert.equal(response.json().code, 'CORE_UNAVAILABLE');
      assert.ok(response.headers['retry-after']);
    });
  }

  /** Runs `coregate core check` as a process of its own (the core answers from this one, so not synchronously). */
  const coreCheck = async (overrides: Record<string, string | undefined>) => {
    try {
      const { stdout, stderr } = await promisify(execFile)(process.execPath, [...CLI, 'core', 'check'], {
        env: { ...process.env, DATABASE_URL: '', ...env(overrides) },
        encoding: 'utf8',
        timeout: 60_000,
      });
      return { status: 0, stdout, stderr };
    } catch (error) {
      const failed = error as { code?: number; stdout: string; stderr: string };
      return { status: failed.code ?? null, stdout: failed.stdout, stderr: failed.stderr };
    }
  };

  test('coregate core check prints reachability, the TLS identity, trust and latency', async () => {
    const run = await coreCheck({});
    assert.equal(run.status, 0, run.stderr);
    assert.match(run.stdout, new RegExp(`Sym 627: ${upstream.url.replace(/[.]/g, '\\.')}`));
    assert.match(run.stdout, /connected in [0-9.]+ ms/);
    assert.match(run.stdout, /TLS TLSv1\.[23] /);
    assert.match(run.stdout, /certificate: core\.test, issued by coregate test CA, valid to /);
    assert.match(run.stdout, /fingerprint: ([0-9A-F]{2}:){31}[0-9A-F]{2}/);
    assert.match(run.stdout, /trusted: yes/);
    assert.match(run.stdout, /SymXchange 3\.0, read from https:\/\/127\.0\.0\.1:[0-9]+ in [0-9.]+ ms/);
    assert.match(run.stdout, /findby at \/SymXchange\/findby: 7 of 7 operations\n/);
  });

  test('coregate core check says why a core is not trusted, and exits 1', async () => {
    const run = await coreCheck({ COREGATE_SYMXCHANGE_CA_FILE: pki.otherCaFile });
    assert.equal(run.status, 1);
    assert.match(run.stdout, /trusted: NO \(.*\): calls will fail/);
    assert.match(run.stderr, /1 of 1 core\(s\) cannot be reached/);
  });
});
