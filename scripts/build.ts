/**
 * Compiles the command line to JavaScript in dist/: `npm start` runs it, so a serving process holds no
 * TypeScript compiler. Dependencies stay in node_modules; each command's modules go in their own chunk,
 * loaded when the command runs. Run: npm run build [-- <outdir>] (default dist; an outdir must lie inside
 * the repository, where node_modules is found).
 */
import { rmSync } from 'node:fs';
import { build } from 'esbuild';

const outdir = process.argv[2] ?? 'dist';
rmSync(outdir, { recursive: true, force: true });

await build({
  entryPoints: { coregate: 'src/cli/main.ts', 'encoder-worker': 'src/seed/encoder-worker.ts' },
  outdir,
  // Entries and chunks side by side, so a module finds the encoder worker next to itself.
  entryNames: '[name]',
  chunkNames: '[name]-[hash]',
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  packages: 'external',
  sourcemap: true,
  logLevel: 'warning',
});
