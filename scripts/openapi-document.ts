/**
 * coregate's OpenAPI documents, exactly as `/openapi.json` (the API) and `/openapi-admin.json` (the admin API)
 * serve them: the app is built on an in-memory embedded database with the default settings (no environment),
 * so the documents are the same on every machine. Printed as JSON when run, or both written to a directory
 * from one build of the app:
 *   npx tsx scripts/openapi-document.ts > openapi.json
 *   npx tsx scripts/openapi-document.ts --admin > openapi-admin.json
 *   npx tsx scripts/openapi-document.ts --out dist    (dist/openapi.json and dist/openapi-admin.json)
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { loadConfig } from '../src/config.js';
import { secretsFromMaster } from '../src/crypto/secrets.js';
import { buildApp } from '../src/http/app.js';
import { adminDocument } from '../src/http/openapi.js';
import { openDatabase } from '../src/database/database.js';
import { migrate } from '../src/database/migrations.js';

/**
 * @example
 * const document = await openApiDocument();
 * Object.keys(document.paths).length; // one path per operation
 */
export async function openApiDocument(which: 'api' | 'admin' = 'api'): Promise<OpenApiDocument> {
  return (await openApiDocuments())[which];
}

/** Both documents, from one build of the app: the API's and the admin API's. */
export async function openApiDocuments(): Promise<{ api: OpenApiDocument; admin: OpenApiDocument }> {
  const database = await openDatabase({});
  try {
    await migrate(database.db, database.kind);
    const app = await buildApp({
      db: database.db,
      databaseKind: database.kind,
      secrets: secretsFromMaster(randomBytes(32)),
      config: loadConfig({}),
    });
    try {
      await app.ready();
      const api = app.swagger();
      return { api: api as OpenApiDocument, admin: adminDocument(api) as OpenApiDocument };
    } finally {
      await app.close();
    }
  } finally {
    await database.close();
  }
}

export interface OpenApiDocument {
  readonly openapi: string;
  readonly paths: Record<string, unknown>;
  readonly [member: string]: unknown;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const json = (document: OpenApiDocument) => `${JSON.stringify(document, null, 2)}\n`;
  const out = process.argv.indexOf('--out');
  if (out >= 0) {
    const dir = process.argv[out + 1] ?? '.';
    const { api, admin } = await openApiDocuments();
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'openapi.json'), json(api));
    writeFileSync(join(dir, 'openapi-admin.json'), json(admin));
  } else {
    process.stdout.write(json(await openApiDocument(process.argv.includes('--admin') ? 'admin' : 'api')));
  }
}
