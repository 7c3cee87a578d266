/**
 * Operational and documentation endpoints: /health, /ready, /operations, /openapi.json, /openapi-admin.json,
 * /docs.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { gunzipSync } from 'node:zlib';
import { OPERATIONS } from '../src/operations/index.js';
import { operationPath } from '../src/operations/types.js';
import { createHarness, type Harness } from './support/harness.js';
import { resolveRef, unresolvedRefs, type Json } from './support/openapi-document.js';

/** The most /openapi.json may weigh, in bytes. */
const OPENAPI_DOCUMENT_BYTES = 400_000;

describe('ops and docs endpoints', () => {
  let h: Harness;
  before(async () => (h = await createHarness({ name: 'pglite' })));
  after(() => h.close());

  const get = (url: string) => h.app.inject({ method: 'GET', url });
  const paths = (document: { paths: Record<string, unknown> }) => Object.keys(document.paths);

  test('/health answers without credentials', async () => {
    const response = await get('/health');
    assert.equal(response.statusCode, 200);
    assert.deepEqual(response.json(), { status: 'ok' });
  });

  test('/ready checks the database and names the core', async () => {
    assert.deepEqual((await get('/ready')).json(), { status: 'ready', core: 'store' });
  });

  test('/operations lists every operation with its path and scope, and its SOAP endpoint and action beside', async () => {
    const { operations } = (await get('/operations')).json() as {
      operations: { name: string; family: string; path: string; scope: string; soap?: unknown }[];
    };
    assert.equal(operations.length, OPERATIONS.length);
    assert.deepEqual(
      operations.find((o) => o.name === 'findByMICR'),
      {
        name: 'findByMICR',
        family: 'P1',
        service: 'findby',
        method: 'POST',
        path: '/gw/627/persistent/findby/findByMICR',
        scope: 'findby',
        summary: 'Account and share of a MICR number and draft',
        soap: {
          endpoint: '/SymXchange/findby',
          action: 'http://www.symxchange.generated.symitar.com/noncrud/findby/findByMICR',
        },
      },
    );
    assert.deepEqual(operations.find((o) => o.name === 'updateShareHoldByID' && o.family === 'P2')?.soap, {
      endpoint: '/SymXchange/2022.01/account',
      action: 'http://www.symxchange.generated.symitar.com/crud/account/updateShareHoldByID',
    });
    assert.equal(operations.find((o) => o.name === 'logon')?.soap, undefined, 'logon has no SOAP operation');
  });

  test('/openapi.json is OpenAPI 3.1 with every operation, its request and response schemas and the bearer scheme', async () => {
    const document = (await get('/openapi.json')).json();
    assert.equal(document.openapi, '3.1.0');
    const { type, scheme, description } = document.components.securitySchemes.bearerAuth;
    assert.deepEqual({ type, scheme }, { type: 'http', scheme: 'bearer' });
    assert.match(description, /coregate token create/);
    // The operations, and nothing else: the admin API has a document of its own.
    const paths = Object.keys(document.paths);
    assert.deepEqual(paths.sort(), OPERATIONS.map((op) => operationPath(op)).sort());
    assert.ok(paths.length >= 8);
    // A request body or an answer several operations share is a component.
    const resolve = (object: Json) => resolveRef(document, object);
    for (const path of paths) {
      const post = document.paths[path].post;
      assert.ok(resolve(post.requestBody).content['application/json'].schema, path);
      assert.ok(resolve(post.responses['200']).content['application/json'].schema, path);
      assert.ok(post.responses['4XX'] && post.responses['5XX'], `${path} documents its problem responses`);
    }
    assert.ok(document.components.schemas.CorpTransfer.properties.Memo);
    assert.ok(!paths.includes('/health'), 'ops endpoints stay out of the API document');
  });

  test('/openapi.json writes once what it would repeat: shared components keep it small enough for /docs', async () => {
    const body = (await get('/openapi.json')).body;
    // 887 KB when every schema, request body, answer and example was written out at each use; 601 KB while the
    // read examples selected every field; 524 KB with a row per problem status and the admin API in it.
    assert.ok(body.length <= OPENAPI_DOCUMENT_BYTES, `${body.length} bytes, more than ${OPENAPI_DOCUMENT_BYTES}`);
    const document = JSON.parse(body);
    const { schemas, responses } = document.components;
    assert.equal(schemas.ShareUpdatableFields.$ref, '#/components/schemas/ShareFields', 'equal schemas are one');
    assert.equal(schemas.UpdateDateOrNull.format, 'date', "an update's date is documented as a date");
    assert.deepEqual(document.info.license, { name: 'Apache License 2.0', identifier: 'Apache-2.0' });
    // ShareName's 2022.01 updatable fields are 103 of the persistent family's 136: written once, in a base.
    const base = { $ref: '#/components/schemas/ShareNameUpdatableFieldsBase' };
    for (const name of ['ShareNameFields', 'ShareNameUpdatableFields']) {
      assert.deepEqual(schemas[name].allOf, [base], name);
      assert.equal(schemas[name].unevaluatedProperties, false, `${name} still refuses any other field`);
    }
    assert.ok(schemas.ShareNameFields.properties.AddrCreateDate, 'the persistent family keeps its own fields');
    assert.equal(schemas.ShareNameUpdatableFields.properties, undefined);
    // Every update of a family answers one schema.
    const updates = paths(document).filter((path) => /\/persistent\/account\/update/.test(path));
    const answers = new Set(
      updates.map((path) => document.paths[path].post.responses['200'].content?.['application/json'].schema.$ref),
    );
    assert.ok(answers.size <= 2, [...answers].join(' '));
    // A set of problems is one answer, named by each call that can get it.
    const ranges = Object.keys(responses).filter((name) => /^\dXX-/.test(name));
    assert.ok(ranges.length < 12, ranges.join(' '));
  });

  test("/openapi-admin.json is the admin API's document: its routes, the admin tag and only the components they use", async () => {
    const answer = await get('/openapi-admin.json');
    assert.equal(answer.statusCode, 200);
    assert.match(String(answer.headers['content-type']), /^application\/json/);
    const document = answer.json();
    assert.equal(document.openapi, '3.1.0');
    assert.equal(document.info.title, 'coregate: admin API');
    assert.match(document.info.description, /- `admin`: Calls the admin API/);
    assert.ok(paths(document).length >= 10);
    for (const path of paths(document)) assert.match(path, /^\/admin\//);
    assert.deepEqual(
      document.tags.map((tag: { name: string }) => tag.name),
      ['admin'],
    );
    assert.equal(document.components.schemas.ShareFields, undefined, "the API's schemas stay in the API's document");
    assert.ok(answer.body.includes('"$ref"'));
    assert.deepEqual(unresolvedRefs(answer.body), []);
    assert.ok(String(answer.headers.etag).length > 10);
  });

  test('/openapi.json is the same bytes on every call: gzipped when accepted, 304 for its ETag', async () => {
    const plain = await get('/openapi.json');
    assert.equal(plain.headers['content-encoding'], undefined);
    assert.match(String(plain.headers['content-type']), /^application\/json/);
    assert.equal(plain.headers.vary, 'accept-encoding');
    const zipped = await h.app.inject({
      method: 'GET',
      url: '/openapi.json',
      headers: { 'accept-encoding': 'gzip, br' },
    });
    assert.equal(zipped.headers['content-encoding'], 'gzip');
    assert.equal(gunzipSync(zipped.rawPayload).toString(), plain.body);
    assert.ok(zipped.rawPayload.length * 5 < plain.rawPayload.length, `${zipped.rawPayload.length} bytes gzipped`);
    const refused = await h.app.inject({
      method: 'GET',
      url: '/openapi.json',
      headers: { 'accept-encoding': 'br, gzip;q=0' },
    });
    assert.equal(refused.headers['content-encoding'], undefined, 'gzip;q=0 refuses gzip');
    assert.equal(refused.body, plain.body);
    const etag = String(plain.headers.etag);
    assert.equal(zipped.headers.etag, etag);
    const again = await h.app.inject({ method: 'GET', url: '/openapi.json', headers: { 'if-none-match': etag } });
    assert.equal(again.statusCode, 304);
    assert.equal(again.body, '');
  });

  test('every $ref in the document resolves to a component', async () => {
    const body = (await get('/openapi.json')).body;
    assert.ok(body.includes('"$ref"'));
    assert.deepEqual(unresolvedRefs(body), []);
  });

  test('/docs serves the interactive reference from local assets', async () => {
    const page = await get('/docs');
    assert.equal(page.statusCode, 200);
    assert.match(page.headers['content-type'] as string, /text\/html/);
    assert.doesNotMatch(page.body, /https?:\/\/(cdn|unpkg|cdnjs)/);
    const scripts = [...page.body.matchAll(/src="\.?\/?([^"]+\.js)"/g)].map((m) => m[1]!);
    assert.ok(scripts.length > 0);
    for (const script of scripts) {
      const asset = await get(`/docs/${script.replace(/^docs\//, '')}`);
      assert.equal(asset.statusCode, 200, script);
    }
  });
});
