/**
 * coregate's OpenAPI documents, exactly as `/openapi.json` (the API) and `/openapi-admin.json` (the admin API)
 * serve them: the app is built on an in-memory embedded database with the default settings (no environment),
 * so the documents are the same on every machine. Printed as JSON when run:
 *   npx tsx scripts/openapi-document.ts > openapi.json
 *   npx tsx scripts/openapi-document.ts --admin > openapi-admin.json
 */
import { randomBytes } from 'node:crypto';
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
      return (which === 'api' ? api : adminDocument(api)) as OpenApiDocument;
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
  const which = process.argv.includes('--admin') ? 'admin' : 'api';
  process.stdout.write(`${JSON.stringify(await openApiDocument(which), null, 2)}\n`);
}
