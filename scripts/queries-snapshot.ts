/**
 * Writes src/store/queries.sql, the SQL of the hot queries (scripts/hot-queries.ts), so that review shows
 * every change to it. Run after changing a query: npm run queries:snapshot
 */
import { writeFileSync } from 'node:fs';
import { QUERY_SNAPSHOT_FILE, renderQuerySnapshot } from '../src/store/query-snapshot.js';
import { HOT_QUERIES } from './hot-queries.js';

writeFileSync(QUERY_SNAPSHOT_FILE, await renderQuerySnapshot(HOT_QUERIES));
console.log(`wrote ${QUERY_SNAPSHOT_FILE}`);
