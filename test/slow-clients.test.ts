/**
 * Slow and stuck clients cannot hold the server: the header block and the whole request each have a
 * deadline (a request cut off at it is answered with a problem), idle keep-alive connections are closed,
 * connections past the cap are refused, and SIGTERM
 * ends the process within its grace period whatever the clients do, after finishing requests in flight.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { createHarness, type Harness } from './support/harness.js';
import { freePort } from './support/pg-cluster.js';
import { CLI, serve } from './support/serve-process.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** Node checks the deadlines once a second; a deadline is met within it plus scheduling slack. */
const CHECK_SLACK_MS = 2_500;

interface Conversation {
  readonly socket: Socket;
  /** Everything the server sent, and when the connection closed (ms since the start), once it has. */
  received(): string;
  closed(): Promise<number>;
}

function open(port: number): Promise<Conversation> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const socket = connect(port, '127.0.0.1');
    let received = '';
    const closed = new Promise<number>((done) => socket.once('close', () => done(performance.now() - started)));
    socket.on('data', (chunk) => (received += chunk.toString()));
    socket.on('error', () => undefined);
    socket.once('connect', () => resolve({ socket, received: () => received, closed: () => closed }));
    socket.once('error', reject);
  });
}

/** Resolves once `condition` holds, checked every 10 ms; fails after 10 s. */
async function until(condition: () => boolean): Promise<void> {
  for (const started = performance.now(); !condition(); await sleep(10))
    if (performance.now() - started > 10_000) throw new Error('the server did not answer within 10 s');
}

/** Writes `text` one character every `everyMs` until the socket closes or the text ends. */
async function drip(socket: Socket, text: string, everyMs: number): Promise<void> {
  for (const character of text) {
    if (socket.destroyed || socket.writableEnded) return;
    socket.write(character);
    await sleep(everyMs);
  }
}

describe('slow clients on a listening server', () => {
  let h: Harness;
  let port: number;
  const limits = { headersTimeoutMs: 1_000, requestTimeoutMs: 2_000, keepAliveTimeoutMs: 1_000, maxConnections: 20 };

  before(async () => {
    h = await createHarness({ name: 'pglite' }, limits);
    await h.app.listen({ port: 0, host: '127.0.0.1' });
    port = (h.app.server.address() as { port: number }).port;
  });
  after(() => h.close());

  test('a client that drips its header block is cut off at the header deadline', async () => {
    const client = await open(port);
    void drip(
      client.socket,
      'POST /gw/627/persistent/findby/findBySSN HTTP/1.1\r\nHost: x\r\nX-Slow: ' + 'a'.repeat(200),
      200,
    );
    const closedAfter = await client.closed();
    assert.ok(closedAfter < limits.headersTimeoutMs + CHECK_SLACK_MS, `closed after ${Math.round(closedAfter)} ms`);
  });

  test('a client that drips its body is answered 408 and cut off at the request deadline, even with a bad token', async () => {
    const client = await open(port);
    client.socket.write(
      'POST /gw/627/persistent/findby/findBySSN HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer nope\r\n' +
        'Content-Type: application/json\r\nContent-Length: 400\r\n\r\n',
    );
    void drip(client.socket, '{"SSN":"' + '1'.repeat(390), 300);
    const closedAfter = await client.closed();
    assert.ok(closedAfter < limits.requestTimeoutMs + CHECK_SLACK_MS, `closed after ${Math.round(closedAfter)} ms`);
    assert.doesNotMatch(client.received(), /HTTP\/1.1 200/);
  });

  test('a request cut off at its deadline is answered with a 408 problem', async () => {
    const client = await open(port);
    client.socket.write(
      `POST /gw/627/persistent/findby/findBySSN HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${h.token}\r\n` +
        'Content-Type: application/json\r\nContent-Length: 400\r\n\r\n',
    );
    void drip(client.socket, '{"SSN":"' + '1'.repeat(390), 300);
    await client.closed();
    const [head = '', body = ''] = client.received().split('\r\n\r\n');
    assert.match(head, /^HTTP\/1.1 408 /);
    assert.match(head, /\r\ncontent-type: application\/problem\+json/i);
    assert.equal((JSON.parse(body) as { code: string }).code, 'UNAVAILABLE');
  });

  test('an idle keep-alive connection is closed after the keep-alive timeout', async () => {
    const client = await open(port);
    client.socket.write('GET /health HTTP/1.1\r\nHost: x\r\n\r\n');
    const closedAfter = await client.closed();
    assert.match(client.received(), /HTTP\/1.1 200/);
    assert.ok(closedAfter < limits.keepAliveTimeoutMs + CHECK_SLACK_MS, `closed after ${Math.round(closedAfter)} ms`);
  });

  test('connections past the cap are closed at once, and the server serves again when they go', async () => {
    const held = await Promise.all(Array.from({ length: limits.maxConnections }, () => open(port)));
    // Let the server accept them all before the one past the cap.
    await sleep(200);
    const extra = await open(port);
    const closedAfter = await extra.closed();
    assert.ok(closedAfter < 1_000, `the connection past the cap was closed after ${Math.round(closedAfter)} ms`);
    for (const client of held) client.socket.destroy();
    await sleep(200);
    const response = await fetch(`http://127.0.0.1:${port}/health`);
    assert.equal(response.status, 200);
  });
});

describe('SIGTERM', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'coregate-sigterm-'));
  after(() => rmSync(dataDir, { recursive: true, force: true }));
  const GRACE_MS = 2_000;
  let token = '';
  before(() => {
    const created = spawnSync(process.execPath, [...CLI, 'token', 'create', '--name', 'sigterm'], {
      env: { ...process.env, COREGATE_DATA_DIR: dataDir, DATABASE_URL: '', LOG_LEVEL: 'warn' },
      encoding: 'utf8',
    });
    token = /cg_[A-Za-z0-9_-]+/.exec(created.stdout)?.[0] ?? assert.fail(created.stderr);
  });

  const serveOn = async (port: number, env: Record<string, string> = {}) =>
    (
      await serve({
        args: ['--no-demo'],
        env: {
          COREGATE_DATA_DIR: dataDir,
          DATABASE_URL: '',
          PORT: String(port),
          LOG_LEVEL: 'warn',
          COREGATE_SHUTDOWN_GRACE_MS: String(GRACE_MS),
          ...env,
        },
      })
    ).child;

  test('stops accepting, finishes requests in flight, and exits within the grace period although a client drips forever', async () => {
    const port = await freePort();
    const child = await serveOn(port);
    const exited = new Promise<{ code: number | null; at: number }>((resolve) =>
      child.once('exit', (code) => resolve({ code, at: performance.now() })),
    );
    const dripping = await open(port);
    dripping.socket.write(
      'POST /gw/627/persistent/findby/findBySSN HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n',
    );
    void drip(dripping.socket, '{'.repeat(1000), 100);
    // A call is in flight once the server has admitted it: its "100 Continue" says so. Its body follows the signal.
    const envelope =
      '<soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/"><soapenv:Body>' +
      '<findBySSN xmlns="http://www.symxchange.generated.symitar.com/noncrud/findby"/></soapenv:Body></soapenv:Envelope>';
    const inFlight = await open(port);
    inFlight.socket.write(
      `POST /SymXchange/findby HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\n` +
        'Content-Type: text/xml; charset=utf-8\r\n' +
        `Content-Length: ${Buffer.byteLength(envelope)}\r\nExpect: 100-continue\r\n\r\n`,
    );
    await until(() => /100 Continue\r\n\r\n/.test(inFlight.received()));
    const signalled = performance.now();
    child.kill('SIGTERM');
    await sleep(100);
    inFlight.socket.write(envelope);
    await until(() => /<\/soapenv:Envelope>/.test(inFlight.received()));
    const answer = inFlight.received().split('HTTP/1.1 ').at(-1) ?? '';
    assert.doesNotMatch(answer, /^503 /, 'the call in flight was answered by its operation, not refused as closing');
    assert.match(answer, /\r\ncontent-type: text\/xml/i);
    const { at } = await exited;
    assert.ok(at - signalled < GRACE_MS + CHECK_SLACK_MS, `exited ${Math.round(at - signalled)} ms after SIGTERM`);
    await dripping.closed();
    await assert.rejects(fetch(`http://127.0.0.1:${port}/health`), 'the port is closed');
  });

  test('with a drain time, /ready answers 503 at once while the instance still serves, then it stops', async () => {
    const DRAIN_MS = 1_500;
    const port = await freePort();
    const child = await serveOn(port, { COREGATE_SHUTDOWN_DRAIN_MS: String(DRAIN_MS) });
    const exited = new Promise<number>((resolve) => child.once('exit', () => resolve(performance.now())));
    assert.equal((await fetch(`http://127.0.0.1:${port}/ready`)).status, 200);
    const signalled = performance.now();
    child.kill('SIGTERM');
    await sleep(300);
    const ready = await fetch(`http://127.0.0.1:${port}/ready`);
    assert.equal(ready.status, 503);
    assert.equal(ready.headers.get('retry-after'), '5');
    assert.equal(((await ready.json()) as { code: string }).code, 'UNAVAILABLE');
    assert.equal((await fetch(`http://127.0.0.1:${port}/health`)).status, 200, 'still serving while draining');
    const at = await exited;
    assert.ok(at - signalled >= DRAIN_MS, `exited ${Math.round(at - signalled)} ms after SIGTERM, after the drain`);
    await assert.rejects(fetch(`http://127.0.0.1:${port}/health`), 'the port is closed');
  });
});
