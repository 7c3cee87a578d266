/**
 * `coregate serve`: migrate, set up the demo on a fresh embedded database, listen, and shut down
 * cleanly on SIGINT/SIGTERM. With `--workers N` (PostgreSQL) a cluster primary forks N processes that
 * share the port, so every core of the host serves requests.
 */
import cluster from 'node:cluster';
import type { Config } from '../config.js';
import type { Runtime } from '../runtime.js';
import { integerOption, parseCommand, UsageError, type CommandSpec } from './args.js';

// The server's modules (Fastify, the operations, the database) are imported where a process serves or
// sets up the demo, not at the top: a cluster primary only forks and supervises, and stays small.

const SERVE: CommandSpec = {
  usage: `Usage: coregate serve [--no-demo] [--workers N]

Serves the API on PORT (default 8627). Without DATABASE_URL it uses the embedded database under
COREGATE_DATA_DIR (default ./data) and, on the first start, seeds the demo dataset and creates demo
credentials (written to <data dir>/demo-credentials.json). With DATABASE_URL nothing is seeded unless
--demo is given.
  --demo         set up the demo on PostgreSQL too
  --no-demo      never set up the demo
  --workers N    serve from N processes sharing the port (PostgreSQL only; default 1)`,
  options: { demo: { type: 'boolean' }, 'no-demo': { type: 'boolean' }, workers: { type: 'string' } },
};

type Print = (line: string) => void;

/** What a cluster worker tells the primary once it listens. */
interface ListeningMessage {
  readonly listening: number;
}

/** A worker that dies this soon after starting is not restarted again after `MAX_QUICK_DEATHS` such deaths. */
const QUICK_DEATH_MS = 5000;
const MAX_QUICK_DEATHS = 3;
/** How long workers get to finish their requests on shutdown before they are killed. */
const SHUTDOWN_GRACE_MS = 10_000;

export async function serveCommand(argv: string[], config: Config, print: Print): Promise<void> {
  const { flags, values } = parseCommand(SERVE, argv);
  if (flags.has('help')) return print(SERVE.usage);
  const workers = integerOption(values.workers, 'workers', 1, SERVE);
  if (workers < 1) throw new UsageError(`--workers must be at least 1\n\n${SERVE.usage}`);
  if (workers > 1 && !config.databaseUrl) {
    throw new UsageError('--workers needs DATABASE_URL: the embedded database is a single process; serve it with one');
  }
  if (cluster.isWorker) return serveWorker(perWorkerLimits(config, workers));
  const wantsDemo = flags.has('no-demo') ? false : flags.has('demo') || !config.databaseUrl;
  if (workers === 1) return serveAlone(config, wantsDemo, print);
  return servePrimary(config, wantsDemo, workers, print);
}

/**
 * Without Redis each worker keeps its own limits; the primary hands connections out round-robin, so each
 * worker enforces its share of the per-token rate. With Redis the workers share one limit.
 */
function perWorkerLimits(config: Config, workers: number): Config {
  if (config.redisUrl) return config;
  return {
    ...config,
    rateLimitPerMinute: Math.max(1, Math.ceil(config.rateLimitPerMinute / workers)),
    findByRateLimitPerMinute: Math.max(1, Math.ceil(config.findByRateLimitPerMinute / workers)),
  };
}

/** Migrates and sets up the demo when asked; returns the runtime, still open. */
async function prepare(config: Config, wantsDemo: boolean, print: Print): Promise<Runtime> {
  const { openRuntime } = await import('../runtime.js');
  const runtime = await openRuntime(config);
  const { bootstrapDemo, demoCredentialsFile } = await import('./demo.js');
  if (wantsDemo && (await bootstrapDemo(runtime, config))) {
    print(`Demo data seeded; credentials written to ${demoCredentialsFile(config)}`);
  }
  return runtime;
}

/** Builds the app on an open runtime and listens; closes both on SIGINT/SIGTERM. Returns the port. */
async function listen(config: Config, runtime: Runtime): Promise<number> {
  const [{ buildApp, LOG_REDACT }, { createJwtVerifier, jwtSettingsFromEnv }] = await Promise.all([
    import('../http/app.js'),
    import('../security/jwt.js'),
  ]);
  const jwtSettings = jwtSettingsFromEnv();
  const app = await buildApp({
    db: runtime.database.db,
    secrets: runtime.secrets,
    config,
    logger: { level: config.logLevel, redact: { paths: LOG_REDACT, censor: '[redacted]' } },
    jwt: jwtSettings ? createJwtVerifier(jwtSettings) : undefined,
  });
  const shutdown = async (signal: string) => {
    app.log.info({ signal }, 'shutting down');
    await app.close();
    await runtime.database.close();
    process.exit(0);
  };
  process.once('SIGINT', () => void shutdown('SIGINT'));
  process.once('SIGTERM', () => void shutdown('SIGTERM'));
  await app.listen({ port: config.port, host: config.host });
  const address = app.server.address();
  return typeof address === 'object' && address ? address.port : config.port;
}

async function serveAlone(config: Config, wantsDemo: boolean, print: Print): Promise<void> {
  const runtime = await prepare(config, wantsDemo, print);
  await printBanner(config, await listen(config, runtime), print);
}

/**
 * A cluster worker: migrates (the migrations' advisory lock lets one worker apply them while the others
 * wait), listens on the shared port and reports it.
 */
async function serveWorker(config: Config): Promise<void> {
  const { openRuntime } = await import('../runtime.js');
  const runtime = await openRuntime(config);
  const port = await listen(config, runtime);
  process.send?.({ listening: port } satisfies ListeningMessage);
}

/**
 * The cluster primary: sets up the demo first when asked, forks the workers, prints the banner when all
 * listen, restarts a worker that dies (unless workers keep dying at start) and stops them all on a signal.
 */
async function servePrimary(config: Config, wantsDemo: boolean, workers: number, print: Print): Promise<void> {
  if (wantsDemo) await (await prepare(config, wantsDemo, print)).database.close();
  let stopping = false;
  let quickDeaths = 0;
  const fork = () => {
    const started = Date.now();
    const worker = cluster.fork();
    worker.once('exit', (code, signal) => {
      if (stopping) return;
      const exited = `worker ${worker.process.pid} exited (${signal ?? code})`;
      if (Date.now() - started < QUICK_DEATH_MS && ++quickDeaths >= MAX_QUICK_DEATHS) {
        process.stderr.write(`${exited}; workers keep exiting at start, stopping\n`);
        stopping = true;
        for (const other of Object.values(cluster.workers ?? {})) other?.kill('SIGTERM');
        process.exitCode = 1;
        return;
      }
      process.stderr.write(`${exited}; starting another\n`);
      fork();
    });
    return worker;
  };
  const listening = Array.from({ length: workers }, () => {
    const worker = fork();
    return new Promise<number>((resolve, reject) => {
      worker.on('message', (message: Partial<ListeningMessage>) => {
        if (typeof message.listening === 'number') resolve(message.listening);
      });
      worker.once('exit', (code) => reject(new Error(`a worker exited with ${code} before listening`)));
    });
  });
  const stop = async () => {
    stopping = true;
    const alive = Object.values(cluster.workers ?? {}).filter((worker) => worker !== undefined);
    const exited = alive.map((worker) => new Promise<void>((resolve) => worker.once('exit', () => resolve())));
    for (const worker of alive) worker.kill('SIGTERM');
    const grace = setTimeout(() => alive.forEach((worker) => worker.process.kill('SIGKILL')), SHUTDOWN_GRACE_MS);
    await Promise.all(exited);
    clearTimeout(grace);
    process.exit(0);
  };
  process.once('SIGINT', () => void stop());
  process.once('SIGTERM', () => void stop());
  let ports: number[];
  try {
    ports = await Promise.all(listening);
  } catch (error) {
    stopping = true;
    for (const worker of Object.values(cluster.workers ?? {})) worker?.kill('SIGTERM');
    throw error;
  }
  await printBanner(config, ports[0] ?? config.port, print, workers);
}

async function printBanner(config: Config, port: number, print: Print, workers = 1): Promise<void> {
  const base = `http://${config.host === '0.0.0.0' ? 'localhost' : config.host}:${port}`;
  const store = config.databaseUrl ? 'PostgreSQL' : `embedded database in ${config.dataDir}`;
  const processes = workers > 1 ? `, ${workers} worker processes` : '';
  print('');
  print(`coregate is serving the Core Account Records API at ${base} (${store}${processes})`);
  print(`  API reference:  ${base}/docs`);
  print(`  OpenAPI:        ${base}/openapi.json`);
  const demo = wantsBanner(config) ? (await import('./demo.js')).readDemoCredentials(config) : undefined;
  if (demo) {
    const [{ demoExamples }, { DEFAULT_DEMO_ACCOUNTS, DEFAULT_SEED }] = await Promise.all([
      import('../seed/examples.js'),
      import('../seed/load.js'),
    ]);
    const { shortName } = demoExamples(DEFAULT_SEED, DEFAULT_DEMO_ACCOUNTS);
    print(`  Demo token:     ${demo.apiToken}`);
    print(`  Admin password: ${demo.adminPassword}`);
    print(`  Demo values to try: docs/demo-data.md`);
    print('');
    print('Try it:');
    print(
      `  curl -s ${base}/gw/627/persistent/findby/findByShortName -H 'Authorization: Bearer ${demo.apiToken}' ` +
        `-H 'Content-Type: application/json' -d '{"Credentials":{"AdministrativeCredentials":{"Password":"${demo.adminPassword}"}},"ShortName":"${shortName.shortName}"}'`,
    );
  }
  print('');
}

function wantsBanner(config: Config): boolean {
  return !config.databaseUrl || process.env.COREGATE_SHOW_DEMO === 'true';
}
