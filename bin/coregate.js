#!/usr/bin/env node
/**
 * The `coregate` command. Installed from the package (`npx coregate`, `npm install coregate`), it runs the
 * compiled build in dist/ (made by `npm pack`'s prepack) and keeps its data in ./coregate-data unless
 * COREGATE_DATA_DIR says otherwise. In a checkout (src/ beside bin/), it runs the TypeScript source through
 * tsx, so a change needs no build step, with the checkout's data dir, ./data, as `npm start` has it.
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

if (existsSync(fileURLToPath(import.meta.resolve('../src/cli/main.ts')))) {
  const { register } = await import('tsx/esm/api');
  register();
  await import('../src/cli/main.ts');
} else {
  process.env.COREGATE_DATA_DIR ||= 'coregate-data';
  await import('../dist/coregate.js');
}
