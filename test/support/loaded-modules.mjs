/**
 * Which modules a process loads: run it with `node --import ./test/support/loaded-modules.mjs` and
 * `LOADED_MODULES_FILE=<path>`, and every file it imports (its own and node_modules', not node's built-in
 * modules) is appended to that file, one URL a line. A module loader hook sees every `import`, dynamic ones
 * included, which no module registry of ES modules lists afterwards. This file is both: the main thread
 * registers it, and the loader's thread runs its hooks.
 */
import { appendFileSync } from 'node:fs';
import { register } from 'node:module';
import { isMainThread } from 'node:worker_threads';

let file;

export function initialize(data) {
  file = data.file;
}

export async function resolve(specifier, context, nextResolve) {
  const resolved = await nextResolve(specifier, context);
  if (file && resolved.url.startsWith('file:')) appendFileSync(file, `${resolved.url}\n`);
  return resolved;
}

if (isMainThread && process.env.LOADED_MODULES_FILE) {
  register(import.meta.url, { data: { file: process.env.LOADED_MODULES_FILE } });
}
