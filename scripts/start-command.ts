/**
 * How `npm start` runs the compiled server, read from package.json, so that the benchmark and the tests
 * run exactly that: `npm run -s build && <VAR=value …> node <flags> dist/coregate.js serve`.
 */
import { readFileSync } from 'node:fs';

/** The environment settings, the Node.js flags and the entry file of `npm start`. */
export function startCommand(): { env: Record<string, string>; flags: string[]; entry: string } {
  const { scripts } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
    scripts: Record<string, string>;
  };
  const match = /&& ((?:[A-Z][A-Z0-9_]*=\S+ )*)node ((?:--\S+ )*)(\S+\.js) serve$/.exec(scripts.start ?? '');
  if (!match) throw new Error(`package.json's start script has an unexpected form: ${scripts.start}`);
  const words = (text: string | undefined) => (text ?? '').trim().split(' ').filter(Boolean);
  const env = Object.fromEntries(words(match[1]).map((word) => word.split(/=(.*)/s).slice(0, 2) as [string, string]));
  return { env, flags: words(match[2]), entry: match[3] ?? '' };
}
