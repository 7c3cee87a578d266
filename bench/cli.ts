/**
 * How long the `coregate` command takes to answer, as the installed bin runs it (bin/coregate.js on the
 * compiled build, with no src/ beside it, as `npm install coregate` lays it out): each admin command is run
 * ROUNDS times against a running `coregate serve` on a fresh embedded data directory (the CLI finds the
 * server by its lock and calls its admin API), then `token list` on the data directory with no server (the
 * CLI opens the embedded database itself). Prints the median wall time and CPU time (user + system, from
 * /usr/bin/time) of each.
 *
 * Run: node --import tsx bench/cli.ts [--reuse]   (--reuse: use dist/ as built, without `npm run build`)
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { serve, stop } from '../test/support/serve-process.js';
import { median } from './measure.js';

const ROUNDS = 7;
const ROOT = resolve(import.meta.dirname, '..');

/** The admin commands a newcomer runs beside a running server. */
const ADMIN_COMMANDS: readonly (readonly string[])[] = [
  ['token', 'list'],
  ['user', 'list'],
  ['audit', '--since', '1h', '--limit', '5'],
  ['faults', 'enable'],
];

interface Timing {
  readonly wallMs: number;
  readonly cpuMs: number;
}

/** Runs `node <bin> ...args` under /usr/bin/time; throws unless it exits 0. */
function timed(bin: string, args: readonly string[], env: NodeJS.ProcessEnv): Timing {
  const ran = spawnSync('/usr/bin/time', ['-f', 'TIMES %e %U %S', process.execPath, bin, ...args], {
    env: { ...process.env, COREGATE_URL: '', COREGATE_ADMIN_TOKEN: '', DATABASE_URL: '', ...env },
    encoding: 'utf8',
  });
  const times = /TIMES ([\d.]+) ([\d.]+) ([\d.]+)/.exec(ran.stderr);
  if (ran.status !== 0 || !times) throw new Error(`coregate ${args.join(' ')} failed:\n${ran.stdout}${ran.stderr}`);
  return { wallMs: Number(times[1]) * 1000, cpuMs: (Number(times[2]) + Number(times[3])) * 1000 };
}

function measure(label: string, bin: string, args: readonly string[], env: NodeJS.ProcessEnv): void {
  const runs = Array.from({ length: ROUNDS }, () => timed(bin, args, env));
  const wall = median(runs.map((run) => run.wallMs));
  const cpu = median(runs.map((run) => run.cpuMs));
  console.log(`| ${label} | ${wall.toFixed(0)} | ${cpu.toFixed(0)} |`);
}

if (!process.argv.includes('--reuse')) execFileSync('npm', ['run', '-s', 'build'], { cwd: ROOT, stdio: 'inherit' });

// The package as installed: bin/ and dist/ with the dependencies beside them, and no src/.
const installed = mkdtempSync(join(tmpdir(), 'coregate-cli-bench-'));
mkdirSync(join(installed, 'bin'));
cpSync(join(ROOT, 'bin', 'coregate.js'), join(installed, 'bin', 'coregate.js'));
cpSync(join(ROOT, 'package.json'), join(installed, 'package.json'));
symlinkSync(join(ROOT, 'dist'), join(installed, 'dist'));
symlinkSync(join(ROOT, 'node_modules'), join(installed, 'node_modules'));
const bin = join(installed, 'bin', 'coregate.js');
const dataDir = join(installed, 'coregate-data');
const env = { COREGATE_DATA_DIR: dataDir, PORT: '0' };

console.log(`${ROUNDS} runs each, medians; load ${(await import('node:os')).loadavg()[0]!.toFixed(1)}\n`);
console.log('| command | wall ms | CPU ms |');
console.log('|---|---:|---:|');
const served = await serve({ cli: [bin], env });
try {
  for (const args of ADMIN_COMMANDS) measure(`${args.join(' ')} (running server)`, bin, args, env);
  measure('--help', bin, ['--help'], env);
} finally {
  await stop(served.child);
}
measure('token list (data directory, no server)', bin, ['token', 'list'], env);
rmSync(installed, { recursive: true, force: true });
