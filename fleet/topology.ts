/**
 * The fleet, set up from nothing in a temporary directory: PostgreSQL (databases `fleet_store` and
 * `fleet_gateway`), Redis, two store instances (`serve --workers 2`, seeded once with the demo dataset),
 * HAProxy, and two gateway instances (`serve`, one process each) whose core is the store fleet's SOAP face
 * through HAProxy. Nine coregate processes in all, for a machine of two cores.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createServer, type Server } from 'node:net';
import pg from 'pg';
import { SCOPES } from '../src/contract/scopes.js';
import { openDatabase } from '../src/database/database.js';
import { tokens } from '../src/store/access.js';
import type { Addressable } from './checks.js';
import type { Caller } from './client.js';
import { haproxyConfig, startHaproxy, type Haproxy } from './haproxy.js';
import type { FleetName, LoadPlan } from './load.js';
import { Instance, redisServer, startPostgres, type Postgres, type RedisServer } from './services.js';

/** FindBy lookups per minute per token: small, so that the hammer can show the fleet shares one limit. */
export const FINDBY_LIMIT: Readonly<Record<FleetName, number>> = { store: 180, gateway: 60 };
export const STORE_WORKERS = 2;
export const GATEWAY_WORKERS = 1;

export interface Fleet {
  readonly dir: string;
  readonly postgres: Postgres;
  readonly redis: RedisServer;
  readonly haproxy: Haproxy;
  readonly store: readonly Instance[];
  readonly gateway: readonly Instance[];
  /** Instances up and meant to be (a scenario takes one out before it stops it); the probes address only these. */
  readonly serving: Set<string>;
  readonly storeDatabaseUrl: string;
  readonly gatewayDatabaseUrl: string;
  readonly loadPlan: LoadPlan;
  readonly probeCallers: Readonly<Record<FleetName, Caller>>;
  /** A fresh token per rate-limit check: its limit starts full. */
  hammerCaller(fleet: FleetName): Caller;
  servingOf(fleet: FleetName): Addressable[];
  stop(): Promise<void>;
}

/** `count` distinct ports nobody listens on: each is held until all are found. */
async function freePorts(count: number): Promise<number[]> {
  const held: Server[] = [];
  try {
    for (let index = 0; index < count; index += 1) {
      const server = createServer();
      held.push(server);
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(0, '127.0.0.1', () => resolve());
      });
    }
    return held.map((server) => {
      const address = server.address();
      return typeof address === 'object' && address ? address.port : 0;
    });
  } finally {
    await Promise.all(held.map((server) => new Promise((resolve) => server.close(resolve))));
  }
}

async function createTokens(url: string, prefix: string, count: number): Promise<string[]> {
  const database = await openDatabase({ url, poolSize: 1 });
  try {
    const created: string[] = [];
    for (let index = 0; index < count; index += 1)
      created.push((await tokens.create(database.db, `${prefix}-${index}`, SCOPES)).token);
    return created;
  } finally {
    await database.close();
  }
}

/** Sets the fleet up; `log` tells what it is doing. */
export async function startFleet(dir: string, log: (line: string) => void): Promise<Fleet> {
  const logs = join(dir, 'logs');
  mkdirSync(logs, { recursive: true });
  const [postgresPort, redisPort, store1, store2, gateway1, gateway2, storeFront, gatewayFront] = await freePorts(8);
  const postgres = await startPostgres(join(dir, 'postgres'), postgresPort!);
  const admin = new pg.Client({ connectionString: postgres.url('postgres') });
  await admin.connect();
  await admin.query('create database fleet_store');
  await admin.query('create database fleet_gateway');
  await admin.end();
  const redis = redisServer(redisPort!, join(logs, 'redis.log'));
  await redis.start();
  log(`PostgreSQL on port ${postgres.port}, Redis on port ${redis.port}`);

  // One master secret per fleet, shared by its instances (paging tokens and protected values need the same).
  const masterSecret = { store: randomBytes(32).toString('hex'), gateway: randomBytes(32).toString('hex') };
  const storeDatabaseUrl = postgres.url('fleet_store');
  const gatewayDatabaseUrl = postgres.url('fleet_gateway');
  const common = {
    LOG_LEVEL: 'warn',
    COREGATE_DB_POOL: '8',
    // HAProxy's connections to an instance are kept open by HAProxy, not closed under it by the instance.
    COREGATE_KEEP_ALIVE_TIMEOUT_MS: '65000',
    COREGATE_TRUSTED_PROXIES: '127.0.0.1',
    // On SIGTERM, /ready says 503 while the instance still serves, until HAProxy's checks (every 1 s, then
    // 500 ms, fall 2) have taken it out; only then does it close HAProxy's idle connections. Closed at the
    // signal, one could meet a request HAProxy was sending on it: a write it may not send again (docs/fleet.md).
    COREGATE_SHUTDOWN_DRAIN_MS: '3000',
  };
  const store = [store1!, store2!].map(
    (port, index) =>
      new Instance({
        name: `store${index + 1}`,
        port,
        workers: STORE_WORKERS,
        logFile: join(logs, `store${index + 1}.log`),
        env: {
          ...common,
          DATABASE_URL: storeDatabaseUrl,
          COREGATE_SECRET: masterSecret.store,
          COREGATE_DATA_DIR: join(dir, `store${index + 1}`),
          REDIS_URL: redis.url(0),
          COREGATE_FINDBY_RATE_LIMIT: String(FINDBY_LIMIT.store),
          // The gateways call the SOAP face with body credentials alone, as a core takes them.
          COREGATE_SOAP_AUTH: 'credentials',
        },
      }),
  );
  // The first migrates and seeds the demo dataset (and writes its admin password into its data directory).
  await store[0]!.start(['--demo']);

  const socket = join(dir, 'haproxy.sock');
  const gateway = [gateway1!, gateway2!].map(
    (port, index) =>
      new Instance({
        name: `gateway${index + 1}`,
        port,
        workers: GATEWAY_WORKERS,
        logFile: join(logs, `gateway${index + 1}.log`),
        env: {
          ...common,
          DATABASE_URL: gatewayDatabaseUrl,
          COREGATE_SECRET: masterSecret.gateway,
          COREGATE_DATA_DIR: join(dir, `gateway${index + 1}`),
          REDIS_URL: redis.url(1),
          COREGATE_FINDBY_RATE_LIMIT: String(FINDBY_LIMIT.gateway),
          COREGATE_CORE: 'symxchange',
          COREGATE_SYMXCHANGE_URL: `http://127.0.0.1:${storeFront}`,
        },
      }),
  );
  const configFile = join(dir, 'haproxy.cfg');
  const plan = {
    socket,
    store: { port: storeFront!, servers: store.map((instance) => ({ name: instance.name, port: instance.spec.port })) },
    gateway: {
      port: gatewayFront!,
      servers: gateway.map((instance) => ({ name: instance.name, port: instance.spec.port })),
    },
  };
  writeFileSync(configFile, haproxyConfig(plan));
  const haproxy = await startHaproxy(configFile, socket, join(logs, 'haproxy.log'));
  await Promise.all([store[1]!, ...gateway].map((instance) => instance.start()));
  for (const instance of store) await haproxy.waitUp('store', instance.name);
  for (const instance of gateway) await haproxy.waitUp('gateway', instance.name);
  log(`store fleet: ${store.map((instance) => instance.url).join(', ')} (${STORE_WORKERS} workers each)`);
  log(`gateway fleet: ${gateway.map((instance) => instance.url).join(', ')} (${GATEWAY_WORKERS} process each)`);
  log(`HAProxy: store fleet on port ${storeFront}, gateway fleet on port ${gatewayFront}`);

  const { adminPassword } = JSON.parse(readFileSync(join(dir, 'store1', 'demo-credentials.json'), 'utf8')) as {
    adminPassword: string;
  };
  const [storeTokens, gatewayTokens] = await Promise.all([
    createTokens(storeDatabaseUrl, 'fleet', 16),
    createTokens(gatewayDatabaseUrl, 'fleet', 16),
  ]);
  const take = (list: string[], count: number) => list.splice(0, count);
  const loadPlan: LoadPlan = {
    storeUrl: `http://127.0.0.1:${storeFront}`,
    gatewayUrl: `http://127.0.0.1:${gatewayFront}`,
    adminPassword,
    storeReaderTokens: take(storeTokens, 3),
    storeWriterTokens: take(storeTokens, 4),
    gatewayReaderTokens: take(gatewayTokens, 2),
    gatewayWriterTokens: take(gatewayTokens, 2),
  };
  const probeCallers = {
    store: { token: take(storeTokens, 1)[0]!, adminPassword },
    gateway: { token: take(gatewayTokens, 1)[0]!, adminPassword },
  };
  const serving = new Set([...store, ...gateway].map((instance) => instance.name));
  return {
    dir,
    postgres,
    redis,
    haproxy,
    store,
    gateway,
    serving,
    storeDatabaseUrl,
    gatewayDatabaseUrl,
    loadPlan,
    probeCallers,
    hammerCaller(fleet) {
      const token = (fleet === 'store' ? storeTokens : gatewayTokens).shift();
      if (!token) throw new Error('the fleet run has no fresh token left for a rate-limit check');
      return { token, adminPassword };
    },
    servingOf: (fleet) => (fleet === 'store' ? store : gateway).filter((instance) => serving.has(instance.name)),
    async stop() {
      await Promise.all([...gateway, ...store].map((instance) => instance.terminate()));
      await haproxy.stop();
      await redis.stop();
      await postgres.stop();
    },
  };
}
