/**
 * What tracing costs a request (docs/tracing.md, "Cost"): findBySSN through `app.inject`, the service's
 * cheapest call (answers kept in memory, a token and password remembered), so that any cost per request
 * shows at its largest. Each mode runs in a process of its own, the modes interleaved round after round:
 *   off       this tree without the OTEL_* variables (the default: no SDK loaded)
 *   on        this tree exporting every span (OTLP/HTTP protobuf, batched) to a receiver in this process
 *   unsampled as `on`, but no trace sampled (OTEL_TRACES_SAMPLER=always_off): the SDK and the context alone
 *   baseline  with --baseline DIR: the `src/` of another tree under DIR, as `off` (e.g. the code before tracing);
 *             DIR must lie inside this repository, where node_modules resolves (node_modules/.cache/…)
 * Prints the median over the rounds of wall and CPU microseconds per request, then what the seams cost when
 * off, called on their own a million times (the per-request runs cannot resolve nanoseconds on a busy machine).
 * Run: node --import tsx bench/tracing-cost.ts [--requests 10000] [--rounds 3] [--baseline DIR]
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

type Mode = 'off' | 'on' | 'unsampled' | 'baseline';

interface RoundResult {
  readonly mode: Mode;
  readonly wallUs: number;
  readonly cpuUs: number;
}

const WARM_UP = 2_000;
const ACCOUNTS = 50;
const SEED = 627;
const PASSWORD = 'bench-password';

/** One mode's run, in this process: a seeded in-memory store, warm-up, then `requests` calls measured. */
async function child(mode: Mode, root: string, requests: number): Promise<void> {
  const load = <T>(path: string) => import(pathToFileURL(resolve(root, path)).href) as Promise<T>;
  const [{ loadConfig }, { buildApp }, database, { migrate }, { secretsFromMaster }, seed, examples, access] =
    await Promise.all([
      load<typeof import('../src/config.js')>('src/config.ts'),
      load<typeof import('../src/http/app.js')>('src/http/app.ts'),
      load<typeof import('../src/database/database.js')>('src/database/database.ts'),
      load<typeof import('../src/database/migrations.js')>('src/database/migrations.ts'),
      load<typeof import('../src/crypto/secrets.js')>('src/crypto/secrets.ts'),
      load<typeof import('../src/seed/load.js')>('src/seed/load.ts'),
      load<typeof import('../src/seed/examples.js')>('src/seed/examples.ts'),
      load<typeof import('../src/store/access.js')>('src/store/access.ts'),
    ]);
  const { hashPassword } = await load<typeof import('../src/crypto/passwords.js')>('src/crypto/passwords.ts');
  const { SCOPES } = await load<typeof import('../src/contract/scopes.js')>('src/contract/scopes.ts');
  const config = { ...loadConfig(process.env), rateLimitPerMinute: 100_000_000, findByRateLimitPerMinute: 100_000_000 };
  if (mode === 'on' || mode === 'unsampled')
    await (await load<typeof import('../src/telemetry/sdk.js')>('src/telemetry/sdk.ts')).startTracing(config.tracing);
  const store = await database.openDatabase({});
  await migrate(store.db, store.kind);
  const secrets = secretsFromMaster(randomBytes(32));
  await seed.seedDatabase(store, secrets, { accounts: ACCOUNTS, seed: SEED });
  await access.settings.set(store.db, access.SETTING.adminPasswordHash, await hashPassword(PASSWORD));
  const { token } = await access.tokens.create(store.db, 'bench', SCOPES);
  const ssn = examples.demoExamples(SEED, ACCOUNTS).sharedSsn.ssn;
  // A logger writing every line, to nowhere: the request line (and its trace ids, on) is part of the cost.
  const app = await buildApp({
    db: store.db,
    databaseKind: store.kind,
    secrets,
    config,
    logger: { level: 'info', stream: { write: () => undefined } },
  });
  await app.ready();
  const request = {
    method: 'POST' as const,
    url: '/gw/627/persistent/findby/findBySSN',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    payload: JSON.stringify({ Credentials: { AdministrativeCredentials: { Password: PASSWORD } }, SSN: ssn }),
  };
  const call = async () => {
    const response = await app.inject(request);
    if (response.statusCode !== 200) throw new Error(`findBySSN answered ${response.statusCode}: ${response.body}`);
  };
  for (let i = 0; i < WARM_UP; i += 1) await call();
  const cpu = process.cpuUsage();
  const started = performance.now();
  for (let i = 0; i < requests; i += 1) await call();
  const wallUs = ((performance.now() - started) * 1000) / requests;
  const used = process.cpuUsage(cpu);
  process.stdout.write(`${JSON.stringify({ mode, wallUs, cpuUs: (used.user + used.system) / requests })}\n`);
  await app.close();
  await store.close();
}

/** Runs one mode in a child process and reads its result line. */
function runChild(mode: Mode, root: string, requests: number, env: NodeJS.ProcessEnv): Promise<RoundResult> {
  const args = ['--import', 'tsx', 'bench/tracing-cost.ts', '--child', mode, '--root', root];
  const proc = spawn(process.execPath, [...args, '--requests', String(requests)], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let output = '';
  proc.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  return new Promise((resolveResult, reject) =>
    proc.once('exit', (code) => {
      const line = output.split('\n').find((l) => l.startsWith('{"mode"'));
      if (code !== 0 || !line) return reject(new Error(`${mode} exited ${code}:\n${output}`));
      resolveResult(JSON.parse(line) as RoundResult);
    }),
  );
}

/**
 * The seams themselves with tracing off, in this process (which never starts the SDK): nanoseconds a query's
 * `traceQuery` adds to the query it wraps, and what the audit event's `requestTraceId` costs; each measured
 * between two runs without it, over nine rounds.
 */
async function seamCosts(): Promise<{ queryNs: number; traceIdNs: number }> {
  const { traceQuery } = await import('../src/telemetry/tracing.js');
  const { requestTraceId } = await import('../src/http/tracing.js');
  const calls = 2_000_000;
  const query = () => Promise.resolve(1);
  const request = {} as Parameters<typeof requestTraceId>[0];
  const nsPerCall = async (run: () => unknown) => {
    const started = performance.now();
    for (let i = 0; i < calls; i += 1) await run();
    return ((performance.now() - started) * 1e6) / calls;
  };
  /** What `with` costs over `without`, the latter measured before and after it. */
  const extra = async (without: () => unknown, withIt: () => unknown) => {
    const before = await nsPerCall(without);
    const measured = await nsPerCall(withIt);
    return measured - (before + (await nsPerCall(without))) / 2;
  };
  const queryNs: number[] = [];
  const traceIdNs: number[] = [];
  for (let round = 0; round < 9; round += 1) {
    queryNs.push(await extra(query, () => traceQuery('pglite', 'select 1', query)));
    traceIdNs.push(
      await extra(
        () => null,
        () => requestTraceId(request),
      ),
    );
  }
  return { queryNs: median(queryNs), traceIdNs: median(traceIdNs) };
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
};

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      child: { type: 'string' },
      root: { type: 'string', default: '.' },
      requests: { type: 'string', default: '10000' },
      rounds: { type: 'string', default: '3' },
      baseline: { type: 'string' },
    },
  });
  const requests = Number(values.requests);
  if (values.child) return child(values.child as Mode, values.root!, requests);

  // The collector: takes every export and keeps nothing.
  let exports = 0;
  const receiver = createServer((request, response) => {
    request.resume();
    request.on('end', () => {
      exports += 1;
      response.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
    });
  });
  await new Promise<void>((done) => receiver.listen(0, '127.0.0.1', done));
  const endpoint = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
  const noOtel = Object.fromEntries(
    Object.keys(process.env)
      .filter((name) => name.startsWith('OTEL_'))
      .map((name) => [name, '']),
  );
  const modes: { mode: Mode; root: string; env: NodeJS.ProcessEnv }[] = [
    { mode: 'off', root: '.', env: noOtel },
    { mode: 'on', root: '.', env: { ...noOtel, OTEL_EXPORTER_OTLP_ENDPOINT: endpoint } },
    {
      mode: 'unsampled',
      root: '.',
      env: { ...noOtel, OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_TRACES_SAMPLER: 'always_off' },
    },
    ...(values.baseline ? [{ mode: 'baseline' as const, root: values.baseline, env: noOtel }] : []),
  ];
  const results: RoundResult[] = [];
  for (let round = 0; round < Number(values.rounds); round += 1) {
    // Interleaved, each round in another order, so that a slower moment of the machine does not land on one mode.
    const order = round % 2 === 0 ? modes : [...modes].reverse();
    for (const { mode, root, env } of order) {
      const result = await runChild(mode, root, requests, env);
      results.push(result);
      console.log(`round ${round + 1} ${mode}: ${result.wallUs.toFixed(1)} µs wall, ${result.cpuUs.toFixed(1)} µs CPU`);
    }
  }
  receiver.close();
  const seams = await seamCosts();
  console.log(
    `\n${requests} findBySSN calls per run, median of ${values.rounds} rounds (${exports} exports received):`,
  );
  for (const { mode } of modes) {
    const own = results.filter((result) => result.mode === mode);
    const wall = median(own.map((r) => r.wallUs));
    const cpu = median(own.map((r) => r.cpuUs));
    console.log(`  ${mode.padEnd(9)} ${wall.toFixed(1)} µs wall per request, ${cpu.toFixed(1)} µs CPU per request`);
  }
  console.log(
    `Seams off: traceQuery adds ${seams.queryNs.toFixed(1)} ns to a query, requestTraceId costs ${seams.traceIdNs.toFixed(1)} ns`,
  );
}

await main();
