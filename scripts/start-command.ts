/**
 * How `npm start` runs the compiled server, read from package.json, so that the benchmark and the tests
 * run exactly that: `npm run -s build && node <flags> dist/coregate.js serve`.
 */
import { readFileSync } from 'node:fs';

/** The Node.js flags and the entry file of `npm start`. */
export function startCommand(): { flags: string[]; entry: string } {
  const { scripts } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
    scripts: Record<string, string>;
  };
  const match = /&& node ((?:--\S+ )*)(\S+\.js) serve$/.exec(scripts.start ?? '');
  if (!match) throw new Error(`package.json's start script has an unexpected form: ${scripts.start}`);
  return { flags: (match[1] ?? '').trim().split(' ').filter(Boolean), entry: match[2] ?? '' };
}
