/**
 * Writes docs/demo-data.md, the "values you can try" page of the default demo dataset.
 * Run after changing the generator: `npm run demo-data:doc` (a test fails while the page is stale).
 */
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { renderDemoDataDoc } from '../src/seed/demo-data-doc.js';
import { demoExamples } from '../src/seed/examples.js';
import { DEFAULT_DEMO_ACCOUNTS, DEFAULT_SEED } from '../src/seed/load.js';

const target = fileURLToPath(new URL('../docs/demo-data.md', import.meta.url));
writeFileSync(target, renderDemoDataDoc(demoExamples(DEFAULT_SEED, DEFAULT_DEMO_ACCOUNTS)));
process.stderr.write(`wrote ${target}\n`);
