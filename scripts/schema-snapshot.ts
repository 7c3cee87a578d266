/**
 * Writes src/generated/sql/schema.sql, the DDL the catalog generates, so that review shows every table change.
 * Run after editing the catalog: npm run schema:snapshot
 */
import { writeFileSync } from 'node:fs';
import { renderSchemaSnapshot, SCHEMA_SNAPSHOT_FILE } from '../src/database/schema.js';

writeFileSync(SCHEMA_SNAPSHOT_FILE, renderSchemaSnapshot());
console.log(`wrote ${SCHEMA_SNAPSHOT_FILE}`);
