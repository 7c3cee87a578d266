/**
 * docs/configuration.md is the configuration code's own list: written from `SETTINGS` (src/config.ts) by
 * `npm run docs:config`, and naming every variable `loadConfig` reads.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { loadConfig, SETTINGS } from '../src/config.js';
import { CONFIGURATION_DOC, renderConfigurationDoc } from '../scripts/configuration-doc.js';

/** The variables `loadConfig` reads from an environment holding `env`, in the order it reads them. */
function variablesRead(env: Record<string, string>): string[] {
  const read = new Set<string>();
  const recorded = new Proxy(env, {
    get(target, name) {
      if (typeof name === 'string') read.add(name);
      return target[name as string];
    },
  });
  loadConfig(recorded);
  return [...read];
}

/** The variables a setting's row names: `PORT` / `HOST`, `OTEL_*` as every OTEL_ variable. */
const named = SETTINGS.flatMap((setting) => [...setting.variable.matchAll(/`([A-Z][A-Z0-9_]*)(\*|<[A-Z]+>)?`/g)]);

test('docs/configuration.md is what npm run docs:config writes from SETTINGS in src/config.ts', () => {
  assert.equal(readFileSync(CONFIGURATION_DOC, 'utf8'), renderConfigurationDoc(), 'run npm run docs:config');
});

test('every variable the configuration reads has its row in SETTINGS', () => {
  const documented = (variable: string) =>
    named.some(([, name, wildcard]) => (wildcard ? variable.startsWith(name!) : variable === name));
  // A gateway's own settings (COREGATE_SYMXCHANGE_*) are docs/gateway.md's, as the COREGATE_CORE row says.
  const read = variablesRead({}).filter((variable) => !variable.startsWith('COREGATE_SYMXCHANGE_'));
  assert.ok(read.length > 40, read.join(', '));
  assert.deepEqual(
    read.filter((variable) => !documented(variable)),
    [],
  );
});
