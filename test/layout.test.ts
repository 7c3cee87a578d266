/**
 * The layout's rules that a linter does not see whole: no module of src/ reaches itself again through its
 * imports (static, re-exports, type-only and dynamic `import()` alike), so each can be read, tested and
 * moved on its own. The floors (a folder imports only from floors below it) are eslint.config.js's.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { test } from 'node:test';

const SRC = resolve('src');

function modules(folder: string): string[] {
  return readdirSync(folder).flatMap((name) => {
    const path = join(folder, name);
    if (statSync(path).isDirectory()) return modules(path);
    return path.endsWith('.ts') ? [path] : [];
  });
}

/** Each module's relative imports of other modules of src/. */
function importGraph(): Map<string, string[]> {
  const files = new Set(modules(SRC));
  const imports = /(?:^|\n)\s*(?:import|export)\s[^;]*?from\s+'(\.[^']+)'|import\(\s*'(\.[^']+)'\s*\)/g;
  return new Map(
    [...files].map((file) => {
      const targets = [...readFileSync(file, 'utf8').matchAll(imports)]
        .map((match) => resolve(dirname(file), (match[1] ?? match[2]!).replace(/\.js$/, '.ts')))
        .filter((target) => files.has(target));
      return [file, targets];
    }),
  );
}

test('no module of src/ imports itself back through other modules', () => {
  const graph = importGraph();
  const state = new Map<string, 'open' | 'done'>();
  const path: string[] = [];
  const cycles: string[] = [];
  const visit = (file: string) => {
    state.set(file, 'open');
    path.push(file);
    for (const target of graph.get(file) ?? []) {
      if (state.get(target) === 'open')
        cycles.push([...path.slice(path.indexOf(target)), target].map((f) => relative(SRC, f)).join(' → '));
      else if (!state.has(target)) visit(target);
    }
    path.pop();
    state.set(file, 'done');
  };
  for (const file of graph.keys()) if (!state.has(file)) visit(file);
  assert.ok(graph.size > 100, `${graph.size} modules read`);
  assert.deepEqual(cycles, []);
});
