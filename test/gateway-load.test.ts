/**
 * A gateway under load from its core: 32 answers just under COREGATE_SYMXCHANGE_MAX_ANSWER_BYTES (its
 * default, 8 MiB: findBySSN lists of some 195,000 accounts) in flight at once. Each is parsed as it arrives
 * and cut to the list maximum, so /health keeps answering and the gateway's memory stays near where it was.
 * The gateway's event loop is judged beyond the delay a process doing nothing met meanwhile, so that a machine
 * busy with other suites does not count as the gateway's doing.
 * The gateway is a real `coregate serve` process, whose event loop and memory are its own; it runs on the
 * embedded database (the load is the core's, not the database's).
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { loadConfig } from '../src/config.js';
import { freePort } from './support/pg-cluster.js';
import { serve, stop, type Served } from './support/serve-process.js';
import { startUpstream, type Upstream } from './support/upstream.js';

const CONCURRENT = 32;
const MAX_ANSWER_BYTES = loadConfig({ COREGATE_CORE: 'symxchange', COREGATE_SYMXCHANGE_URL: 'http://core' }).symxchange!
  .maxAnswerBytes;
const LIST_MAXIMUM = loadConfig({}).listMaximum;
/** The longest the gateway's event loop may be held up while the answers are parsed. */
const EVENT_LOOP_LAG_BOUND_MS = 1000;
/** What /health's median answer may take meanwhile. */
const HEALTH_MEDIAN_BOUND_MS = 500;
const GROWTH_BOUND_MB = 200;

/** A findBySSN answer of `bytes` at most, as a core writes it: one long list of account numbers. */
function findBySsnAnswer(bytes: number): Buffer {
  const head =
    '<?xml version="1.0" encoding="UTF-8"?><S:Envelope xmlns:S="http://schemas.xmlsoap.org/soap/envelope/"><S:Body>' +
    '<ns2:findBySSNResponse xmlns:ns2="http://www.symxchange.generated.symitar.com/noncrud/findby"><PluralResponse>';
  const tail = '</PluralResponse></ns2:findBySSNResponse></S:Body></S:Envelope>';
  const item = (i: number) => `<AccountNumber>${String(i).padStart(10, '0')}</AccountNumber>`;
  const count = Math.floor((bytes - head.length - tail.length) / item(0).length);
  return Buffer.from(head + Array.from({ length: count }, (_, i) => item(i)).join('') + tail);
}

/**
 * A process of its own that measures its event loop's longest delay until its input closes: what any process
 * on the machine met meanwhile (the machine's other work can leave every process unscheduled for a while),
 * which the gateway's own delay is judged beyond.
 */
function startCanary(): { longestDelayMs(): Promise<number> } {
  const canary = spawn(
    process.execPath,
    [
      '-e',
      `const delay = require('node:perf_hooks').monitorEventLoopDelay({ resolution: 10 });
       delay.enable();
       process.stdin.resume();
       process.stdin.on('end', () => process.stdout.write(String(delay.max / 1e6)));`,
    ],
    { stdio: ['pipe', 'pipe', 'inherit'] },
  );
  let output = '';
  canary.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<void>((resolve) => canary.once('exit', () => resolve()));
  return {
    async longestDelayMs() {
      canary.stdin.end();
      await exited;
      return Number(output);
    },
  };
}

/** The resident memory of a process, in MB. */
const residentMb = (pid: number) =>
  Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]) / 1024;

describe('a gateway with 32 answers near the size limit in flight', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'coregate-gateway-load-'));
  let upstream: Upstream;
  let gateway: Served;
  /** What the load met: each answer, every /health latency, and the gateway's memory before and at its peak. */
  let answers: { status: number; body: { AccountNumber?: string[] } }[];
  const healthMs: number[] = [];
  let baselineMb: number;
  let peakMb: number;
  /** The gateway's longest event-loop delay while the answers were in flight. */
  let eventLoopLagMs: number;
  /** The longest a process doing nothing was delayed meanwhile. */
  let machineLagMs: number;

  before(async () => {
    const answer = findBySsnAnswer(MAX_ANSWER_BYTES - 1024);
    upstream = await startUpstream();
    upstream.behave((_received, response) =>
      response.writeHead(200, { 'content-type': 'text/xml; charset=utf-8' }).end(answer),
    );
    gateway = await serve({
      env: {
        DATABASE_URL: '',
        COREGATE_DATA_DIR: dataDir,
        PORT: String(await freePort()),
        COREGATE_CORE: 'symxchange',
        COREGATE_SYMXCHANGE_URL: upstream.url,
        // The machine running the suite may be slow: the deadline is not what is measured here.
        COREGATE_SYMXCHANGE_TIMEOUT_MS: '60000',
        COREGATE_FINDBY_RATE_LIMIT: '100000',
        LOG_LEVEL: 'error',
      },
    });
    const token = JSON.parse(readFileSync(join(dataDir, 'demo-credentials.json'), 'utf8')).apiToken;
    const findBySsn = async () => {
      const response = await fetch(`${gateway.baseUrl}/gw/627/persistent/findby/findBySSN`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ Credentials: { AdministrativeCredentials: { Password: 'core' } }, SSN: '384856358' }),
      });
      return { status: response.status, body: (await response.json()) as { AccountNumber?: string[] } };
    };

    // The first calls compile what a call (and /health) needs; the level is the process's after them.
    await findBySsn();
    await (await fetch(`${gateway.baseUrl}/health`)).text();
    // A scrape starts the event loop's measure afresh; the next one reads what the load did to it.
    const longestEventLoopLagMs = async () => {
      const metrics = await (await fetch(`${gateway.baseUrl}/metrics`)).text();
      const seconds = /^nodejs_eventloop_lag_max_seconds (\S+)$/m.exec(metrics)?.[1];
      assert.ok(seconds !== undefined, 'the gateway reports nodejs_eventloop_lag_max_seconds');
      return Number(seconds) * 1000;
    };
    await longestEventLoopLagMs();
    const canary = startCanary();
    const pid = gateway.child.pid!;
    baselineMb = peakMb = residentMb(pid);
    const sampler = setInterval(() => (peakMb = Math.max(peakMb, residentMb(pid))), 25);
    let inFlight = true;
    const health = (async () => {
      while (inFlight) {
        const started = performance.now();
        await (await fetch(`${gateway.baseUrl}/health`)).text();
        healthMs.push(performance.now() - started);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    })();
    answers = await Promise.all(Array.from({ length: CONCURRENT }, findBySsn));
    inFlight = false;
    await health;
    clearInterval(sampler);
    eventLoopLagMs = await longestEventLoopLagMs();
    machineLagMs = await canary.longestDelayMs();
  });
  after(async () => {
    if (gateway) await stop(gateway.child);
    await upstream?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  test('the event loop is never held up for a second, and /health keeps answering, while they are in flight', () => {
    // Beyond what a process doing nothing met meanwhile: the gateway's own doing, not the machine's.
    assert.ok(
      eventLoopLagMs < EVENT_LOOP_LAG_BOUND_MS + machineLagMs,
      `the event loop was held up for ${Math.round(eventLoopLagMs)} ms (a process doing nothing: ${Math.round(machineLagMs)} ms)`,
    );
    assert.ok(healthMs.length >= 3, `/health was asked ${healthMs.length} times`);
    const median = [...healthMs].sort((a, b) => a - b)[Math.floor(healthMs.length / 2)]!;
    assert.ok(median < HEALTH_MEDIAN_BOUND_MS, `/health took ${Math.round(median)} ms (median)`);
  });

  test(`the gateway's memory grows by less than ${GROWTH_BOUND_MB} MB`, () => {
    const growth = peakMb - baselineMb;
    assert.ok(growth < GROWTH_BOUND_MB, `memory grew by ${Math.round(growth)} MB (from ${Math.round(baselineMb)} MB)`);
  });

  test('each answer is the list cut to the list maximum', () => {
    for (const { status, body } of answers) {
      assert.equal(status, 200, JSON.stringify(body));
      assert.equal(body.AccountNumber?.length, LIST_MAXIMUM);
    }
  });
});
