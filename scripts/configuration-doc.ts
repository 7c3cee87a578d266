/**
 * Writes docs/configuration.md, the settings table, from `SETTINGS` in src/config.ts, so that the doc is the
 * configuration code's own list. Run after changing a setting: npm run docs:config
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { SETTINGS } from '../src/config.js';

export const CONFIGURATION_DOC = new URL('../docs/configuration.md', import.meta.url);

/** Text after the table: what holds for every setting. */
const AFTER_TABLE = readFileSync(new URL('./configuration-doc.after.md', import.meta.url), 'utf8');

const cell = (text: string) => text.replaceAll('|', '\\|');

/**
 * The text of docs/configuration.md.
 * @example renderConfigurationDoc().startsWith('# Configuration') // true
 */
export function renderConfigurationDoc(): string {
  return [
    '# Configuration',
    '',
    '<!-- Written by npm run docs:config from SETTINGS in src/config.ts: edit them there. -->',
    '',
    'Every setting is an environment variable with a default that runs the quickstart. Switches take `true` or',
    '`false` (`on` and `off` are taken too).',
    '',
    '| variable | default | meaning |',
    '|---|---|---|',
    ...SETTINGS.map((setting) => `| ${cell(setting.variable)} | ${cell(setting.default)} | ${cell(setting.meaning)} |`),
    '',
    AFTER_TABLE.trimEnd(),
    '',
  ].join('\n');
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  writeFileSync(CONFIGURATION_DOC, renderConfigurationDoc());
  console.log(`wrote ${CONFIGURATION_DOC.pathname}`);
}
