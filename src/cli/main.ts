/**
 * The coregate command line: `coregate <command> [options]`, `--help` on each. Without a command it serves,
 * as `npm start` does, so that `npx coregate` alone starts the sandbox.
 */
import { loadConfig, type Config } from '../config.js';
import { UsageError } from './args.js';

const USAGE = `Usage: coregate [command] [options]

Commands:
  serve            serve the API (default port 8627); also what coregate does without a command
  migrate          apply database migrations
  seed             generate a deterministic demo dataset
  token            create, list or revoke API tokens
  user             add, list, disable, enable or unlock core users, or set their password
  admin-password   set the administrative password
  member           set a member's home banking password or audio access code
  audit            read the audit trail
  export           write every record to an NDJSON file (protected values stay protected)
  import           load an exported file in one transaction, checked against the catalog
  reset            put the store back to its seeded demo dataset
  core check       gateway mode: reach each SymXchange core once (TLS identity, latency)
  faults           add, list or clear the sandbox's fault rules; enable or disable fault injection while serving
  recording        import a gateway's recording of a core into the store, or replay it (docs/recording.md)

token, user, audit, export, import and reset work on a running server too: while a coregate serves the
data directory, or with COREGATE_URL set, they call its admin API (with COREGATE_ADMIN_TOKEN, or the data
directory's demo token) and say so on stderr.

Environment: PORT, HOST, DATABASE_URL, COREGATE_DATA_DIR, COREGATE_SECRET, REDIS_URL, LOG_LEVEL, LOG_FORMAT,
COREGATE_METRICS, COREGATE_CORE and the other COREGATE_* settings (docs/configuration.md).
Run "coregate <command> --help" for a command's options.`;

type Command = (argv: string[], config: Config, print: (line: string) => void) => Promise<void>;

/** Each command's module is loaded when it runs, so `serve` (and its cluster primary) loads only what it needs. */
const commands = () => import('./commands.js');
const COMMANDS: Readonly<Record<string, () => Promise<Command>>> = {
  serve: async () => (await import('./serve.js')).serveCommand,
  migrate: async () => (await commands()).migrateCommand,
  seed: async () => (await commands()).seedCommand,
  token: async () => (await commands()).tokenCommand,
  user: async () => (await commands()).userCommand,
  'admin-password': async () => (await commands()).adminPasswordCommand,
  member: async () => (await commands()).memberCommand,
  audit: async () => (await commands()).auditCommand,
  export: async () => (await import('./data.js')).exportCommand,
  import: async () => (await import('./data.js')).importCommand,
  reset: async () => (await import('./data.js')).resetCommand,
  core: async () => (await import('./core-check.js')).coreCommand,
  faults: async () => (await import('./faults.js')).faultsCommand,
  recording: async () => (await import('./recording.js')).recordingCommand,
};

const print = (line: string) => process.stdout.write(`${line}\n`);

async function main(argv: string[]): Promise<number> {
  const [name = 'serve', ...rest] = argv;
  if (name === '--help' || name === '-h' || name === 'help') {
    print(USAGE);
    return 0;
  }
  const load = Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;
  if (!load) {
    process.stderr.write(`Unknown command "${name}"\n\n${USAGE}\n`);
    return 1;
  }
  try {
    const command = await load();
    await command(rest, loadConfig(), print);
    return 0;
  } catch (error) {
    if (error instanceof UsageError) {
      process.stderr.write(`${error.message}\n`);
      return 2;
    }
    process.stderr.write(`coregate ${name} failed: ${(error as Error).message}\n`);
    return 1;
  }
}

const code = await main(process.argv.slice(2));
process.exitCode = code;
