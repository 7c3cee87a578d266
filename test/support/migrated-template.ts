/**
 * A migrated embedded database to start a test's own from: a new PGlite cluster takes seconds of CPU to
 * create (initdb inside WebAssembly) and the migrations another second, where loading a dump of one already
 * migrated takes under one. The dump is made once per set of migrations and kept on disk for every test
 * process (node_modules/.cache/coregate-test-pglite), named by what makes it: the migrations' statements and
 * the PGlite release. Each test still runs `migrate` on it, which finds every migration applied.
 */
import { createHash } from 'node:crypto';
import { mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { openDatabase } from '../../src/database/database.js';
import { migrate, MIGRATIONS } from '../../src/database/migrations.js';

const CACHE_DIR = join(process.cwd(), 'node_modules', '.cache', 'coregate-test-pglite');

/** What the dump holds: every migration's statements on the embedded database, and the PGlite it was made by. */
function templateKey(): string {
  const manifest = join(process.cwd(), 'node_modules', '@electric-sql', 'pglite', 'package.json');
  const { version } = JSON.parse(readFileSync(manifest, 'utf8')) as { version: string };
  const hash = createHash('sha256').update(`pglite ${version}\n`);
  for (const migration of MIGRATIONS) hash.update(`${migration.id}\n${migration.statements('pglite').join('\n')}\n`);
  return hash.digest('hex').slice(0, 24);
}

let made: Promise<Blob> | undefined;

/**
 * The migrated database's data directory, as `openDatabase({ loadDataDir })` takes it: read from the cache,
 * or made and written there (by a rename, so another process never reads half a file).
 */
export function migratedTemplate(): Promise<Blob> {
  made ??= (async () => {
    const file = join(CACHE_DIR, `${templateKey()}.tar`);
    try {
      return new Blob([await readFile(file)]);
    } catch {
      // Not made yet, by this process or another.
    }
    const database = await openDatabase({});
    try {
      await migrate(database.db, database.kind);
      const dump = await database.dumpDataDir!();
      await mkdir(CACHE_DIR, { recursive: true });
      // Dumps of earlier migrations are of no further use.
      for (const name of await readdir(CACHE_DIR))
        if (name.endsWith('.tar') && join(CACHE_DIR, name) !== file) await rm(join(CACHE_DIR, name), { force: true });
      const partial = `${file}.${process.pid}.partial`;
      await writeFile(partial, Buffer.from(await dump.arrayBuffer()));
      await rename(partial, file);
      return dump;
    } finally {
      await database.close();
    }
  })();
  made.catch(() => (made = undefined));
  return made;
}
