/**
 * The docs stand alone: no document of the repository cites a path outside it (a parent folder, the machine it
 * was written on, or another checkout's shared files).
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { test } from 'node:test';

const ROOT = new URL('../', import.meta.url);
const DOCUMENTS = [
  'README.md',
  ...readdirSync(new URL('docs/', ROOT))
    .filter((name) => name.endsWith('.md'))
    .map((name) => `docs/${name}`),
];

/** `../x`, `/work/…` and `shared/…` as a path, not as a word in a sentence (`shared` state). */
const OUTSIDE = /(?:^|[\s`('"[])(\.\.\/|\/work\/|shared\/)/;

test('no document cites a path outside the repository', () => {
  const cited: string[] = [];
  for (const document of DOCUMENTS) {
    readFileSync(new URL(document, ROOT), 'utf8')
      .split('\n')
      .forEach((line, index) => {
        if (OUTSIDE.test(line)) cited.push(`${document}:${index + 1}: ${line.trim()}`);
      });
  }
  assert.deepEqual(cited, []);
});
