/**
 * `coregate serve`: migrate, set up the demo on a fresh embedded database, listen, and shut down
 * cleanly on SIGINT/SIGTERM.
 */
import type { Config } from '../config.js';
import { buildApp, LOG_REDACT } from '../http/app.js';
import { openRuntime } from '../runtime.js';
import { createJwtVerifier, jwtSettingsFromEnv } from '../security/jwt.js';
import { demoExamples } from '../seed/examples.js';
import { DEFAULT_DEMO_ACCOUNTS, DEFAULT_SEED } from '../seed/load.js';
import { parseCommand, type CommandSpec } from './args.js';
import { bootstrapDemo, demoCredentialsFile, readDemoCredentials } from './demo.js';

const SERVE: CommandSpec = {
  usage: `Usage: coregate serve [--no-demo]

Serves the API on PORT (default 8627). Without DATABASE_URL it uses the embedded database under
COREGATE_DATA_DIR (default ./data) and, on the first start, seeds the demo dataset and creates demo
credentials (written to <data dir>/demo-credentials.json). With DATABASE_URL nothing is seeded unless
--demo is given.
  --demo       set up the demo on PostgreSQL too
  --no-demo    never set up the demo`,
  options: { demo: { type: 'boolean' }, 'no-demo': { type: 'boolean' } },
};

type Print = (line: string) => void;

export async function serveCommand(argv: string[], config: Config, print: Print): Promise<void> {
  const { flags } = parseCommand(SERVE, argv);
  if (flags.has('help')) return print(SERVE.usage);
  const jwtSettings = jwtSettingsFromEnv();
  const runtime = await openRuntime(config);
  const wantsDemo = flags.has('no-demo') ? false : flags.has('demo') || !config.databaseUrl;
  if (wantsDemo && (await bootstrapDemo(runtime, config))) {
    print(`Demo data seeded; credentials written to ${demoCredentialsFile(config)}`);
  }
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
  const port = typeof address === 'object' && address ? address.port : config.port;
  printBanner(config, port, print);
}

function printBanner(config: Config, port: number, print: Print): void {
  const base = `http://${config.host === '0.0.0.0' ? 'localhost' : config.host}:${port}`;
  const store = config.databaseUrl ? 'PostgreSQL' : `embedded database in ${config.dataDir}`;
  print('');
  print(`coregate is serving the Core Account Records API at ${base} (${store})`);
  print(`  API reference:  ${base}/docs`);
  print(`  OpenAPI:        ${base}/openapi.json`);
  const demo = wantsBanner(config) ? readDemoCredentials(config) : undefined;
  if (demo) {
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
