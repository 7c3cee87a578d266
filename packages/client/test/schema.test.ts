/**
 * The client's types are the OpenAPI document's: src/schema.d.ts is what openapi-typescript generates from
 * the document the app serves now (npm run client:generate rewrites it).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { CLIENT_SCHEMA_FILE, renderClientSchema } from '../../../scripts/client-schema.js';

test('src/schema.d.ts is generated from the current OpenAPI document (npm run client:generate)', async () => {
  const committed = readFileSync(CLIENT_SCHEMA_FILE, 'utf8');
  const generated = await renderClientSchema();
  assert.ok(committed === generated, 'packages/client/src/schema.d.ts is out of date: run npm run client:generate');
});
