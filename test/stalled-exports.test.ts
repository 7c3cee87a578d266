/**
 * Exports cannot starve the API, on each database: a streamed export reads a page at a time and holds no
 * database connection while its client is slow; at most COREGATE_EXPORT_CONCURRENCY run at once (the next
 * is a 429 with Retry-After); one whose client stopped reading is cut off after COREGATE_EXPORT_STALL_MS,
 * and one whose client left is stopped at once, each giving its place back. Real sockets on a listening
 * server: the exporting clients send their request, read the answer's head and then read nothing more.
 */
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { OPERATIONS } from '../src/operations/index.js';
import { operationPath } from '../src/operations/types.js';
import { generateAccount } from '../src/seed/generate.js';
import { seedDatabase } from '../src/seed/load.js';
import { adminCredentials, BACKENDS, createHarness, type Harness } from './support/harness.js';

/**
 * Accounts seeded: their export (about 19 MB) is several times what the kernel's socket buffers take on
 * loopback (about 4 MB), so that an export whose client reads nothing really stalls.
 */
const ACCOUNTS = 1000;
const SEED = 38;
const CONCURRENCY = 2;
const STALL_MS = 8_000;
/** The exports of the records opened at once (as many as the pool's connections), and the load beside them. */
const EXPORTS = 10;
const CALLS_PER_SECOND = 40;
const LOAD_MS = 5_000;
/** How long after the stall bound a stalled export may still hold its place: the export first fills the buffers. */
const CUT_SLACK_MS = 60_000;
/** The longest any call may go unanswered before it counts as refused (the database's connect timeout is 5 s). */
const ANSWER_BOUND_MS = 15_000;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const findBySSN = operationPath(OPERATIONS.find((operation) => operation.name === 'findBySSN')!);

/** An answer to a request sent over a socket of its own, read up to its head and then not read any more. */
interface Stalled {
  readonly socket: Socket;
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  /** Reads on until the server closes the connection: the body as it arrived (chunked, for a stream). */
  rest(): Promise<string>;
}

/** Sends `GET path` asking for NDJSON, reads the status line and headers, and stops reading. */
function stalledGet(port: number, token: string, path: string): Promise<Stalled> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    socket.on('error', () => undefined);
    socket.once('error', reject);
    const late = setTimeout(() => {
      socket.destroy();
      reject(new Error(`GET ${path}: no answer within ${ANSWER_BOUND_MS} ms`));
    }, ANSWER_BOUND_MS);
    let received: Buffer = Buffer.alloc(0);
    const onHead = (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      const end = received.indexOf('\r\n\r\n');
      if (end === -1) return;
      clearTimeout(late);
      socket.off('data', onHead);
      socket.pause();
      const [statusLine = '', ...fields] = received.subarray(0, end).toString('latin1').split('\r\n');
      const headers = Object.fromEntries(
        fields.map((field) => [
          field.slice(0, field.indexOf(':')).toLowerCase(),
          field.slice(field.indexOf(':') + 1).trim(),
        ]),
      );
      const body: Buffer[] = [received.subarray(end + 4)];
      const closed = new Promise<string>((done) => socket.once('close', () => done(Buffer.concat(body).toString())));
      resolve({
        socket,
        status: Number(statusLine.split(' ')[1]),
        headers,
        rest: () => {
          socket.on('data', (data: Buffer) => body.push(data));
          socket.resume();
          return closed;
        },
      });
    };
    socket.on('data', onHead);
    socket.write(
      `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${token}\r\n` +
        'Accept: application/x-ndjson\r\nConnection: close\r\n\r\n',
    );
  });
}

for (const backend of BACKENDS) {
  describe(`exports whose clients stop reading, on ${backend.name}`, () => {
    let h: Harness;
    let port: number;
    const ssns = Array.from({ length: 50 }, (_, i) =>
      String(generateAccount(SEED, i + 1).records.ShareName[0]!.values.Ssn),
    );
    const open: Stalled[] = [];
    const exportFor = async (path = '/admin/export') => {
      const stalled = await stalledGet(port, h.token, path);
      open.push(stalled);
      return stalled;
    };
    /** The exports admitted by the first test. */
    let running: Stalled[] = [];
    /** The next export admitted, asked for every 250 ms for at most `withinMs`, and when it was. */
    const nextAdmitted = async (withinMs = STALL_MS + CUT_SLACK_MS) => {
      const started = performance.now();
      for (;;) {
        const stalled = await exportFor();
        if (stalled.status === 200) return { stalled, at: performance.now() };
        const waited = Math.round(performance.now() - started);
        assert.ok(waited < withinMs, `every export was refused for ${waited} ms`);
        await sleep(250);
      }
    };

    before(async () => {
      h = await createHarness(backend, { exportConcurrency: CONCURRENCY, exportStallMs: STALL_MS });
      await seedDatabase(h.database, h.secrets, { accounts: ACCOUNTS, seed: SEED });
      await h.app.listen({ port: 0, host: '127.0.0.1' });
      port = (h.app.server.address() as { port: number }).port;
    });
    after(async () => {
      for (const stalled of open) stalled.socket.destroy();
      await h?.close();
    });

    test(`of ${EXPORTS} exports at once ${CONCURRENCY} run, and the others (the audit trail's too) are refused with 429 and Retry-After`, async () => {
      const answers: Stalled[] = [];
      for (let i = 0; i < EXPORTS; i += 1) answers.push(await exportFor());
      // The audit trail as NDJSON is an export too.
      answers.push(await exportFor('/admin/audit'));
      assert.deepEqual(
        answers.map((answer) => answer.status),
        [...Array(CONCURRENCY).fill(200), ...Array(EXPORTS + 1 - CONCURRENCY).fill(429)],
      );
      running = answers.slice(0, CONCURRENCY);
      for (const refused of answers.slice(CONCURRENCY)) {
        assert.ok(Number(refused.headers['retry-after']) >= 1, JSON.stringify(refused.headers));
        assert.match(refused.headers['content-type'] ?? '', /^application\/problem\+json/);
        const problem = JSON.parse(await refused.rest());
        assert.equal(problem.code, 'RATE_LIMITED');
        assert.match(
          problem.detail,
          new RegExp(`^${CONCURRENCY} exports are running, as many as COREGATE_EXPORT_CONCURRENCY allows; retry in`),
        );
      }
    });

    test(`meanwhile findBySSN at ${CALLS_PER_SECOND} calls a second is answered 200 every time, never 503`, async () => {
      const statuses: Promise<number>[] = [];
      const started = performance.now();
      for (let i = 0; performance.now() - started < LOAD_MS; i += 1) {
        const body = JSON.stringify({ Credentials: adminCredentials, SSN: ssns[i % ssns.length] });
        statuses.push(
          fetch(`http://127.0.0.1:${port}${findBySSN}`, {
            method: 'POST',
            headers: { authorization: `Bearer ${h.token}`, 'content-type': 'application/json' },
            body,
            signal: AbortSignal.timeout(ANSWER_BOUND_MS),
          }).then(
            async (response) => (await response.arrayBuffer(), response.status),
            () => 0,
          ),
        );
        await sleep(1000 / CALLS_PER_SECOND);
      }
      const answered = await Promise.all(statuses);
      const tally = new Map<number, number>();
      for (const status of answered) tally.set(status, (tally.get(status) ?? 0) + 1);
      assert.ok(answered.length >= (CALLS_PER_SECOND * LOAD_MS) / 2000, `${answered.length} calls`);
      // 0: no answer within ANSWER_BOUND_MS.
      assert.deepEqual(
        [...tally].map(([status, count]) => `${count} × ${status}`),
        [`${answered.length} × 200`],
      );
      // The exports were still stalled, holding their places, for the whole load.
      assert.equal((await exportFor()).status, 429);
    });

    test('an export whose client reads nothing is cut off after COREGATE_EXPORT_STALL_MS, giving its place back', async () => {
      // The places of the exports above, as they are cut off, go to two more, which stall in turn.
      const fresh = [await nextAdmitted(), await nextAdmitted()];
      const next = await nextAdmitted();
      const waited = Math.round(next.at - fresh[0]!.at);
      assert.ok(waited >= STALL_MS, `a place came free ${waited} ms after its export began, before the stall bound`);
      // What each stalled client was sent, read now, stops short of the records file's end line.
      for (const cut of [...running, fresh[0]!.stalled]) assert.doesNotMatch(await cut.rest(), /"coregate":"end"/);
      for (const { stalled } of [fresh[1]!, next]) stalled.socket.destroy();
    });

    test('an export whose client goes away is stopped at once, giving its place back', async () => {
      const exports = [await nextAdmitted(), await nextAdmitted()];
      assert.equal((await exportFor()).status, 429);
      const left = performance.now();
      exports[0]!.stalled.socket.destroy();
      const next = await nextAdmitted(STALL_MS / 2);
      assert.ok(next.at - left < STALL_MS / 2);
    });
  });
}
