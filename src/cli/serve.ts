/**
 * `coregate serve`: migrate, set up the demo on a fresh embedded database, listen, and shut down
 * cleanly on SIGINT/SIGTERM. With `--workers N` (PostgreSQL) a cluster primary forks N processes that
 * share the port, so every core of the host serves requests.
 */
import cluster from 'node:cluster';
import { existsSync } from 'node:fs';
import { dirname, isAbsolute, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { isIP } from 'node:net';
import { DEFAULT_SYM, hostAndPort, type Config } from '../config.js';
import type { Runtime } from '../runtime.js';
import type { DemoSetUp } from './demo.js';
import { integerOption, parseCommand, UsageError, type CommandSpec } from './args.js';

// The server's modules (Fastify, the operations, the database) are imported where a process serves or
// sets up the demo, not at the top: a cluster primary only forks and supervises, and stays small.

const SERVE: CommandSpec = {
  usage: `Usage: coregate serve [--no-demo] [--workers N]

Serves the API on PORT (default 8627); also what coregate does without a command. Without DATABASE_URL it
uses the embedded database under COREGATE_DATA_DIR (default ./data; ./coregate-data when installed from the
package) and, on the first start, seeds the demo dataset and creates demo credentials (written to
<data dir>/demo-credentials.json; a later start that finds the file gone writes fresh ones). With
DATABASE_URL nothing is seeded unless --demo is given, and a database that cannot be reached is waited for
at start for COREGATE_DB_START_TIMEOUT_S seconds (default 60; 0 waits forever).
  --demo         set up the demo on PostgreSQL too
  --no-demo      never set up the demo
  --workers N    serve from N processes sharing the port (PostgreSQL only; default 1)`,
  options: { demo: { type: 'boolean' }, 'no-demo': { type: 'boolean' }, workers: { type: 'string' } },
};

type Print = (line: string) => void;

/**
 * What a cluster worker tells the primary: that it is about to listen (the primary then lets the port go at
 * once, if it still holds it), that it listens, or that it gave up starting (and why).
 */
interface WorkerMessage {
  readonly aboutToListen?: true;
  readonly listening?: number;
  readonly gaveUp?: string;
}

/**
 * A start that no retry will mend: the database's host does not resolve, it stayed unreachable for
 * `COREGATE_DB_START_TIMEOUT_S`, or the store was created with another secret. A cluster primary that hears
 * of it from a worker ends the start with its line instead of forking another worker to try again.
 */
class StartAbandoned extends Error {}

/**
 * A worker that dies this soon after starting counts as a quick death; each is followed by a longer wait
 * before the next fork (1 s, 2 s, 4 s … at most `MAX_RESTART_DELAY_MS`), and after `MAX_QUICK_DEATHS` in a
 * row the primary gives up. Workers do not die of a database outage (they wait for the database), so
 * quick deaths mean a fault that a restart will not mend.
 */
const QUICK_DEATH_MS = 5000;
const MAX_QUICK_DEATHS = 5;
const MAX_RESTART_DELAY_MS = 30_000;
/** Waits between attempts to reach the database at start: doubling from the first to the last. */
const DATABASE_RETRY_FIRST_MS = 250;
const DATABASE_RETRY_MAX_MS = 5_000;
/** After the grace period every connection is closed; the process exits this much later at the latest. */
const FORCED_EXIT_MS = 1_000;

export async function serveCommand(argv: string[], config: Config, print: Print): Promise<void> {
  const { flags, values } = parseCommand(SERVE, argv);
  if (flags.has('help')) return print(SERVE.usage);
  const workers = integerOption(values.workers, 'workers', 1, SERVE);
  if (workers < 1) throw new UsageError(`--workers must be at least 1\n\n${SERVE.usage}`);
  if (workers > 1 && !config.databaseUrl) {
    throw new UsageError('--workers needs DATABASE_URL: the embedded database is a single process; serve it with one');
  }
  if (cluster.isWorker) return serveWorker(perWorkerLimits(config, workers));
  // Settings are checked before anything is migrated or seeded (buildApp checks them again in each worker).
  (await import('../operations/credential-policy.js')).checkCredentialPolicy(config.credentialPolicy);
  if (config.symxchange) {
    // The gateway's certificate files and fault rules are read now, so that a bad one is one line before anything opens.
    const { tlsOptions } = await import('../core/transport.js');
    for (const url of config.symxchange.urls.values()) tlsOptions(url, config.symxchange);
    (await import('../core/core-fault-rules.js')).coreFaultRules(config.symxchange.faultRulesFile);
  }
  const releasePort = await holdPort(config);
  await checkHostsResolve(config);
  const wantsDemo = flags.has('no-demo') ? false : flags.has('demo') || !config.databaseUrl;
  if (workers === 1) return serveAlone(config, wantsDemo, print, releasePort);
  return servePrimary(config, wantsDemo, workers, print, releasePort);
}

const notThisHost = (config: Config) => `HOST ${config.host} is not an address of this machine`;

/** The line for each way a port cannot be listened on, naming the variable to change. */
const PORT_PROBLEMS: ReadonlyMap<string | undefined, (config: Config) => string> = new Map([
  [
    'EADDRINUSE',
    (config: Config) =>
      `PORT ${config.port} is already in use on ${config.host}: stop what listens there, or set PORT to a free port`,
  ],
  ['EACCES', (config: Config) => `PORT ${config.port} needs privileges on this machine: set PORT to 1024 or above`],
  ['EADDRNOTAVAIL', notThisHost],
  ['ENOTFOUND', notThisHost],
  ['EAI_AGAIN', notThisHost],
]);

/** The one line a port that cannot be bound stops the start with, naming the variable to change. */
function portProblem(error: NodeJS.ErrnoException, config: Config): string {
  const known = PORT_PROBLEMS.get(error.code);
  return known ? known(config) : `PORT ${config.port} on HOST ${config.host} cannot be listened on: ${error.message}`;
}

/**
 * Binds the port first and holds it while the database is opened, migrated and seeded: a busy port, or a
 * HOST that is not this machine's, stops the start in one line before any of that, and nothing can take
 * the port meanwhile. Returns what lets it go, just before the server listens on it (a connection made
 * while it is held is closed at once: nothing answers yet). The port is free when that is called, not a turn
 * later; the promise it returns settles when the holder has closed.
 */
async function holdPort(config: Config): Promise<() => Promise<void>> {
  if (config.port === 0) return async () => undefined;
  const { createServer } = await import('node:net');
  const holder = createServer((socket) => socket.destroy());
  await new Promise<void>((resolve, reject) => {
    holder.once('error', reject);
    holder.listen({ port: config.port, host: config.host, exclusive: true }, () => resolve());
  }).catch((error: NodeJS.ErrnoException) => {
    throw new Error(portProblem(error, config));
  });
  return () => new Promise<void>((resolve) => holder.close(() => resolve()));
}

/**
 * A service coregate reaches, with the variable that names it: each is reported by that name. The database
 * is waited for at start (`openRuntimeWhenReachable`); Redis and the cores are not (rate limits fall back to
 * each instance's memory, and a core's outage is a 503 CORE_UNAVAILABLE), but a host name that does not
 * resolve is a typo no wait mends.
 */
function servicesOf(config: Config): { variable: string; url: string; defaultPort: number }[] {
  const services = config.redisUrl ? [{ variable: 'REDIS_URL', url: config.redisUrl, defaultPort: 6379 }] : [];
  for (const [sym, url] of config.symxchange?.urls ?? []) {
    const variable = sym === DEFAULT_SYM ? 'COREGATE_SYMXCHANGE_URL' : `COREGATE_SYMXCHANGE_URL_${sym}`;
    services.push({ variable, url: url.href, defaultPort: url.protocol === 'https:' ? 443 : 80 });
  }
  return services;
}

/**
 * Stops the start at once, naming the variable, when Redis's or a core's host name does not resolve
 * (ENOTFOUND: the name server says there is no such name). A resolver that cannot answer now (EAI_AGAIN) is
 * let pass: the service's own outage handling waits for it.
 */
async function checkHostsResolve(config: Config): Promise<void> {
  const { lookup } = await import('node:dns/promises');
  for (const { variable, url, defaultPort } of servicesOf(config)) {
    let host: string;
    try {
      host = new URL(url).hostname.replace(/^\[|\]$/g, '');
    } catch {
      continue;
    }
    if (!host || isIP(host)) continue;
    const code = await lookup(host).then(
      () => undefined,
      (error: NodeJS.ErrnoException) => error.code,
    );
    if (code === 'ENOTFOUND')
      throw new Error(
        `${variable} names the host ${hostAndPort(url, defaultPort)}, and ${host} does not resolve (ENOTFOUND): check the host name`,
      );
  }
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

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Opens and migrates the database, waiting for it while it is unreachable (a PostgreSQL that is still
 * starting or restarting): each failed attempt is reported in a line naming DATABASE_URL's host and port
 * and the driver's error, and the port is served as soon as the database answers. The wait is bounded by
 * `COREGATE_DB_START_TIMEOUT_S` (0: none); a host name that does not resolve ends it at once, as does any
 * other failure (bad credentials, a failing migration, a store created with another secret).
 */
async function openRuntimeWhenReachable(config: Config, report: Print): Promise<Runtime> {
  const [{ openRuntime, StoreSecretMismatchError }, { isConnectionFailure }] = await Promise.all([
    import('../runtime.js'),
    import('../database/database.js'),
  ]);
  const bound = config.databaseStartTimeoutS;
  const deadline = bound === 0 ? Infinity : Date.now() + bound * 1000;
  const database = `the database at ${hostAndPort(config.databaseUrl ?? '', 5432)} (DATABASE_URL)`;
  for (let wait = DATABASE_RETRY_FIRST_MS; ; wait = Math.min(wait * 2, DATABASE_RETRY_MAX_MS)) {
    try {
      return await openRuntime(config, { onConnectionError: (error) => connectionErrors.report(error) });
    } catch (error) {
      if (error instanceof StoreSecretMismatchError) throw new StartAbandoned(error.message);
      if (!isConnectionFailure(error)) throw error;
      const reason = failureReason(error);
      // ENOTFOUND: the name server says there is no such name, a typo no wait mends (EAI_AGAIN is waited for).
      if (failureCode(error) === 'ENOTFOUND')
        throw new StartAbandoned(`${database} cannot be reached: its host does not resolve (${reason})`);
      const left = deadline - Date.now();
      if (left <= 0)
        throw new StartAbandoned(
          `${database} was not reachable within ${bound} s (${reason}); giving up ` +
            `(COREGATE_DB_START_TIMEOUT_S sets the wait, 0 waits forever)`,
        );
      const next = Math.min(wait, left);
      report(`${database} is not reachable (${reason}); trying again in ${next} ms`);
      await sleep(next);
    }
  }
}

/** The driver's error behind a connection failure (the failure wraps it as its cause). */
function driverError(error: unknown): { code?: unknown; message?: unknown } {
  return ((error as { cause?: unknown }).cause ?? error) as { code?: unknown; message?: unknown };
}

/** The error code of a connection failure (`ECONNREFUSED`, `ENOTFOUND`, `57P03`), if it has one. */
function failureCode(error: unknown): string | undefined {
  const { code } = driverError(error);
  return typeof code === 'string' ? code : undefined;
}

/**
 * The driver's own words for a connection failure, code first (`ECONNREFUSED: connect ECONNREFUSED
 * 127.0.0.1:5999`, `57P03: the database system is starting up`), not ours. They never hold the URL's password.
 */
function failureReason(error: unknown): string {
  const { message } = driverError(error);
  const code = failureCode(error);
  const words = typeof message === 'string' && message !== '' ? message : undefined;
  if (code === undefined) return words ?? 'no reason given';
  return words === undefined || words === code ? code : `${code}: ${words}`;
}

const toStderr: Print = (line) => process.stderr.write(`${line}\n`);

/** Where lost database connections are reported: stderr until the server's logger exists, then its log. */
const connectionErrors = {
  report: (error: Error) => toStderr(`a database connection was lost (${error.message}); it will be replaced`),
};

/**
 * Migrates and sets up the demo when asked; returns the runtime, still open, and whether demo credentials
 * were written now (the banner shows them this once).
 */
async function prepare(
  config: Config,
  wantsDemo: boolean,
  print: Print,
): Promise<{ runtime: Runtime; newCredentials: boolean }> {
  const demo = await import('./demo.js');
  // Before anything is opened: the master secret and the credentials go into a data dir readable by its owner only.
  if (wantsDemo) demo.createDataDir(config);
  const runtime = await openRuntimeWhenReachable(config, toStderr);
  const setUp = wantsDemo
    ? await demo.bootstrapDemo(runtime, config).catch(async (error: unknown) => {
        // Nothing may keep the process alive after a failed start (the database holds its data directory).
        await runtime.database.close();
        throw error;
      })
    : undefined;
  if (setUp) print(demoSetUpLine(setUp, demo.demoCredentialsFile(config), config));
  return { runtime, newCredentials: setUp !== undefined };
}

function demoSetUpLine(setUp: DemoSetUp, file: string, config: Config): string {
  switch (setUp) {
    case 'seeded':
      return `Demo data seeded; credentials written to ${file}`;
    case 'token':
      return `Gateway mode: no demo data (the records are the core's); a demo API token is in ${file}`;
    case 'reissued':
      return config.core === 'symxchange'
        ? `${file} was missing: a fresh demo API token is in it (the lost one is revoked)`
        : `${file} was missing: a fresh demo token and admin password are in it (the lost token is revoked)`;
  }
}

/** The demo set-up's passwords, which /docs fills into the reference's examples (GET /admin/demo-credentials). */
async function demoPasswords(config: Config): Promise<{ demoAdminPassword?: string; demoUserPassword?: string }> {
  const credentials = (await import('./demo.js')).readDemoCredentials(config);
  return { demoAdminPassword: credentials?.adminPassword, demoUserPassword: credentials?.userPassword };
}

/** Builds the app on an open runtime and listens; closes both on SIGINT/SIGTERM. Returns the port. */
async function listen(
  config: Config,
  runtime: Runtime,
  releasePort: () => Promise<void> = async () => undefined,
): Promise<number> {
  const [{ buildApp, LOG_REDACT }, { createJwtVerifier, jwtSettingsFromEnv }, { logDestination }, tracing] =
    await Promise.all([
      import('../http/app.js'),
      import('../security/jwt.js'),
      import('../http/logging.js'),
      import('../telemetry/sdk.js'),
    ]);
  // Each serving process (each worker) exports its own spans, when the OTEL_* variables say where (docs/tracing.md).
  await tracing.startTracing(config.tracing);
  const jwtSettings = jwtSettingsFromEnv();
  // Set at the first signal: /ready answers 503 from then on, and every answer closes its connection (app.ts).
  let stopping = false;
  const app = await buildApp({
    stopping: () => stopping,
    db: runtime.database.db,
    databaseKind: runtime.database.kind,
    secrets: runtime.secrets,
    config,
    logger: {
      level: config.logLevel,
      redact: { paths: LOG_REDACT, censor: '[redacted]' },
      ...(await logDestination(config.logFormat)),
    },
    jwt: jwtSettings ? createJwtVerifier(jwtSettings) : undefined,
    // Answered to an admin token only while the database is the demo dataset they open (api-reference.ts).
    ...(await demoPasswords(config)),
  }).catch(async (error: unknown) => {
    // Nothing may keep the process alive after a failed start (the database holds its data directory).
    await runtime.database.close();
    throw error;
  });
  connectionErrors.report = (error) =>
    app.log.warn({ err: error }, 'a database connection was lost; it will be replaced');
  const shutdown = async (signal: string) => {
    if (stopping) {
      // A worker hears one signal twice when it went to the whole process group (systemd's default
      // KillMode, Ctrl-C in a terminal) and the primary passes it on: it keeps finishing its requests. An
      // operator who will not wait signals the primary again, whose exit ends its workers.
      if (cluster.isWorker) return;
      // A second signal: the operator does not want to wait for the grace period.
      app.log.warn({ signal }, 'stopping at once');
      process.exit(1);
    }
    stopping = true;
    if (config.shutdownDrainMs > 0) {
      // Announced on /ready first, still serving, so that a balancer's checks take the instance out.
      app.log.info({ signal, drainMs: config.shutdownDrainMs }, 'draining: /ready answers 503, still serving');
      await new Promise((resolve) => setTimeout(resolve, config.shutdownDrainMs));
    }
    app.log.info(
      { signal, graceMs: config.shutdownGraceMs },
      'shutting down: no new connections, finishing requests in flight',
    );
    // Whatever the clients do (a body dripping in, a connection held open), the process ends within the grace period.
    const deadline = setTimeout(() => {
      app.log.warn('requests still open after the grace period; closing their connections');
      app.server.closeAllConnections();
      setTimeout(() => process.exit(1), FORCED_EXIT_MS).unref();
    }, config.shutdownGraceMs);
    deadline.unref();
    try {
      await app.close();
      await runtime.database.close();
      // The spans still buffered are sent before the process ends.
      await tracing.stopTracing();
    } catch (error) {
      app.log.error({ err: error }, 'shutdown did not complete cleanly');
      process.exit(1);
    }
    process.exit(0);
  };
  process.on('SIGINT', () => void shutdown('SIGINT'));
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  try {
    // Ready first, so that the port is let go only for the moment between the two.
    await app.ready();
    await releasePort();
    await app.listen({ port: config.port, host: config.host });
  } catch (error) {
    await app.close();
    await runtime.database.close();
    // Taken in the moment between letting it go and listening: the one line of a busy port.
    const known = PORT_PROBLEMS.get((error as NodeJS.ErrnoException).code);
    throw known ? new StartAbandoned(known(config)) : error;
  }
  const address = app.server.address();
  return typeof address === 'object' && address ? address.port : config.port;
}

async function serveAlone(
  config: Config,
  wantsDemo: boolean,
  print: Print,
  releasePort: () => Promise<void>,
): Promise<void> {
  const { runtime, newCredentials } = await prepare(config, wantsDemo, print);
  // A PostgreSQL store started without the demo may be empty: the banner then names the next steps.
  const emptyStore =
    !wantsDemo &&
    config.databaseUrl !== undefined &&
    !(await (await import('../store/record-transfer.js')).storeHoldsRecords(runtime.database.db));
  const port = await listen(config, runtime, releasePort);
  await printBanner(config, port, print, { showSecrets: newCredentials, demo: wantsDemo, emptyStore });
}

/**
 * A cluster worker: migrates (the migrations' advisory lock lets one worker apply them while the others
 * wait), listens on the shared port and reports it.
 */
async function serveWorker(config: Config): Promise<void> {
  // The primary ends the start with this line (once, for every worker), and forks no worker to try again.
  const giveUp = async (line: string): Promise<never> => {
    await new Promise((resolve) => process.send!({ gaveUp: line } satisfies WorkerMessage, undefined, {}, resolve));
    process.exit(1);
  };
  const abandon = async (error: unknown): Promise<never> => {
    if (!(error instanceof StartAbandoned) || !process.send) throw error;
    return giveUp(error.message);
  };
  const runtime = await openRuntimeWhenReachable(config, (line) => toStderr(`worker ${process.pid}: ${line}`)).catch(
    abandon,
  );
  // The primary holds the port until a worker is about to listen. The worker says so and listens at once: the
  // primary reads the two on one channel, in order, so it has let the port go (synchronously, on reading the
  // first) before the cluster binds it for the worker (on reading the second). Waiting for an answer would
  // leave the port free for two more trips between the processes.
  const portFree = async () => {
    process.send?.({ aboutToListen: true } satisfies WorkerMessage);
  };
  const port = await listen(config, runtime, portFree).catch(abandon);
  process.send?.({ listening: port } satisfies WorkerMessage);
}

/**
 * The cluster primary: sets up the demo first when asked, forks the workers, prints the banner when all
 * listen, restarts a worker that dies (waiting longer after each quick death, giving up after several in
 * a row) and stops them all on a signal.
 */
async function servePrimary(
  config: Config,
  wantsDemo: boolean,
  workers: number,
  print: Print,
  releasePort: () => Promise<void>,
): Promise<void> {
  const newCredentials = wantsDemo
    ? await prepare(config, wantsDemo, print).then(async ({ runtime, newCredentials }) => {
        await runtime.database.close();
        return newCredentials;
      })
    : false;
  // The workers listen on the port through this process (cluster): it is held until the first of them is about
  // to listen, then let go for it (a worker's start takes a second or more, and the port stays taken meanwhile).
  let portReleased: Promise<void> | undefined;
  const portFree = () => (portReleased ??= releasePort());
  let stopping = false;
  let quickDeaths = 0;
  const listeningPorts = new Map<number, number>();
  let bannerShown = false;
  let resolveStarted: () => void = () => undefined;
  let rejectStarted: (error: Error) => void = () => undefined;
  const started = new Promise<void>((resolve, reject) => {
    resolveStarted = resolve;
    rejectStarted = reject;
  });
  const fork = () => {
    const forkedAt = Date.now();
    const worker = cluster.fork();
    worker.on('message', (message: WorkerMessage) => {
      if (message.aboutToListen) {
        void portFree();
        return;
      }
      if (message.gaveUp !== undefined && !bannerShown && !stopping) {
        // A worker that gave up waiting at start: another would wait again, so the start ends here.
        stopping = true;
        for (const other of Object.values(cluster.workers ?? {})) other?.kill('SIGTERM');
        rejectStarted(new Error(message.gaveUp));
        return;
      }
      if (typeof message.listening !== 'number') return;
      listeningPorts.set(worker.id, message.listening);
      quickDeaths = 0;
      if (!bannerShown && listeningPorts.size === workers) {
        bannerShown = true;
        resolveStarted();
      }
    });
    worker.once('exit', (code, signal) => {
      listeningPorts.delete(worker.id);
      if (stopping) return;
      const exited = `worker ${worker.process.pid} exited (${signal ?? code})`;
      if (Date.now() - forkedAt >= QUICK_DEATH_MS) quickDeaths = 0;
      else quickDeaths += 1;
      if (quickDeaths >= MAX_QUICK_DEATHS) {
        process.stderr.write(`${exited}; workers keep exiting at start, stopping\n`);
        stopping = true;
        for (const other of Object.values(cluster.workers ?? {})) other?.kill('SIGTERM');
        process.exitCode = 1;
        rejectStarted(new Error(`workers exited ${quickDeaths} times in a row at start`));
        return;
      }
      const delay = quickDeaths === 0 ? 0 : Math.min(MAX_RESTART_DELAY_MS, 1000 * 2 ** (quickDeaths - 1));
      process.stderr.write(`${exited}; starting another${delay ? ` in ${delay} ms` : ''}\n`);
      setTimeout(() => {
        if (!stopping) fork();
      }, delay);
    });
  };
  const stop = async () => {
    if (stopping) process.exit(1);
    stopping = true;
    const alive = Object.values(cluster.workers ?? {}).filter((worker) => worker !== undefined);
    const exited = alive.map((worker) => new Promise<void>((resolve) => worker.once('exit', () => resolve())));
    for (const worker of alive) worker.kill('SIGTERM');
    // Each worker exits within its own grace period; this one only covers a worker that hangs regardless.
    const grace = setTimeout(
      () => alive.forEach((worker) => worker.process.kill('SIGKILL')),
      config.shutdownDrainMs + config.shutdownGraceMs + FORCED_EXIT_MS * 2,
    );
    await Promise.all(exited);
    clearTimeout(grace);
    process.exit(0);
  };
  process.on('SIGINT', () => void stop());
  process.on('SIGTERM', () => void stop());
  for (let i = 0; i < workers; i += 1) fork();
  await started;
  const port = [...listeningPorts.values()][0] ?? config.port;
  await printBanner(config, port, print, { workers, showSecrets: newCredentials, demo: wantsDemo });
}

interface BannerOptions {
  readonly workers?: number;
  /** The demo credentials were written by this start: print them this once (later starts point at the file). */
  readonly showSecrets: boolean;
  /** The demo was asked for (`--demo`, or the embedded database's default): the banner shows its credentials. */
  readonly demo: boolean;
  /** The store holds no records and no demo was asked for: the banner names the commands that fill it. */
  readonly emptyStore?: boolean;
}

/**
 * Prints the start banner in one write, so that no log line (this process's, or a worker's) lands inside it.
 */
async function printBanner(config: Config, port: number, print: Print, options: BannerOptions): Promise<void> {
  const lines: string[] = [];
  await bannerLines(config, port, (line) => lines.push(line), options);
  print(lines.join('\n'));
}

async function bannerLines(config: Config, port: number, print: Print, options: BannerOptions): Promise<void> {
  const workers = options.workers ?? 1;
  const base = `http://${config.host === '0.0.0.0' ? 'localhost' : config.host}:${port}`;
  const store = config.databaseUrl ? 'PostgreSQL' : `embedded database in ${config.dataDir}`;
  const processes = workers > 1 ? `, ${workers} worker processes` : '';
  print('');
  print(`coregate is serving the Core Account Records API at ${base} (${store}${processes})`);
  if (config.symxchange) {
    for (const [sym, url] of config.symxchange.urls)
      print(`  Gateway mode:   Sym ${sym} (${base}/gw/${sym}/…) is answered by the SymXchange core at ${url.origin}`);
  }
  print(`  API reference:  ${base}/docs`);
  print(`  OpenAPI:        ${base}/openapi.json`);
  print(`  Admin OpenAPI:  ${base}/openapi-admin.json`);
  if (options.emptyStore) {
    print('');
    print('The store is empty. Next steps (with the server stopped, or beside it):');
    print('  coregate serve --demo                 demo data, with a demo token and admin password');
    print('  coregate seed --accounts N            generated records');
    print('  coregate token create --name NAME     an API token');
    print('  coregate admin-password               the administrative password (AdministrativeCredentials)');
  }
  const demoModule = options.demo || wantsBanner(config) ? await import('./demo.js') : undefined;
  const demo = demoModule?.readDemoCredentials(config);
  if (demoModule && demo && config.core === 'symxchange') {
    // Gateway mode: the core verifies body credentials; the token is the gateway's.
    const file = demoModule.demoCredentialsFile(config);
    print(options.showSecrets ? `  Demo token:     ${demo.apiToken} (kept in ${file})` : `  Demo token:     ${file}`);
    print(`  Body Credentials are the core's own: the gateway passes them on.`);
  } else if (demoModule && demo) {
    const [{ demoExamples }, { DEFAULT_DEMO_ACCOUNTS, DEFAULT_SEED }] = await Promise.all([
      import('../seed/examples.js'),
      import('../seed/load.js'),
    ]);
    const { shortName } = demoExamples(DEFAULT_SEED, DEFAULT_DEMO_ACCOUNTS);
    const file = demoModule.demoCredentialsFile(config);
    // The secrets reach the terminal (and whatever collects its output) once; later starts name the file.
    if (options.showSecrets) {
      print(`  Demo token:     ${demo.apiToken}`);
      print(`  Admin password: ${demo.adminPassword}`);
      print(`  (shown this once; both are kept in ${file}, readable by you only)`);
    } else {
      print(`  Demo token and admin password: ${file}`);
    }
    print(`  Demo values to try: ${packageFile('docs/demo-data.md')}`);
    print('');
    print('Try it:');
    const [bearer, password] = options.showSecrets
      ? [`'Authorization: Bearer ${demo.apiToken}'`, demo.adminPassword]
      : ['"Authorization: Bearer $TOKEN"', `'"$ADMIN_PASSWORD"'`];
    if (!options.showSecrets)
      print(`  TOKEN=$(jq -r .apiToken ${file}); ADMIN_PASSWORD=$(jq -r .adminPassword ${file})`);
    print(
      `  curl -s ${base}/gw/627/persistent/findby/findByShortName -H ${bearer} -H 'Content-Type: application/json' ` +
        `-d '{"Credentials":{"AdministrativeCredentials":{"Password":"${password}"}},"ShortName":"${shortName.shortName}"}'`,
    );
  }
  print('');
}

/**
 * A file of coregate's own package (its documentation), as a path from the working directory when it lies
 * below it: the package's root is the nearest folder up from this module (src/cli/, or dist/ compiled)
 * holding a package.json.
 */
function packageFile(name: string): string {
  let root = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(root, 'package.json')) && dirname(root) !== root) root = dirname(root);
  const path = relative(process.cwd(), join(root, name));
  return path.startsWith('..') || isAbsolute(path) ? join(root, name) : path;
}

function wantsBanner(config: Config): boolean {
  return !config.databaseUrl || process.env.COREGATE_SHOW_DEMO === 'true';
}
