/**
 * Writes src/generated/sql/<module>.sql, the SQL of the hot queries (scripts/hot-queries.ts), one file per
 * store module, so that review shows every change to it. Run after changing a query: npm run queries:snapshot
 */
import { writeFileSync } from 'node:fs';
import { querySnapshotFile, renderQuerySnapshots } from '../src/store/query-snapshot.js';
import { HOT_QUERIES } from './hot-queries.js';

for (const [module, text] of await renderQuerySnapshots(HOT_QUERIES)) {
  writeFileSync(querySnapshotFile(module), text);
  console.log(`wrote ${querySnapshotFile(module)}`);
}
