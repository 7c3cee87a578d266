/**
 * A request's logger (src/http/logging.ts, `requestLogger`): the service's child with the request's bindings,
 * made only when the request writes a line at a level the log keeps. Lines it writes carry the request id
 * and its other bindings as a child's do; a request that writes nothing kept makes no child.
 */
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { describe, test } from 'node:test';
import Fastify, { type FastifyBaseLogger } from 'fastify';
import pino from 'pino';
import { requestLogger } from '../src/http/logging.js';

function logged(level: string) {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString('utf8').split('\n').filter(Boolean))
        lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  const logger = pino({ level }, stream);
  // Counts the children made of the service's logger (a child's own children inherit the count).
  let children = 0;
  const child = logger.child;
  logger.child = function (this: typeof logger, ...args: Parameters<typeof child>) {
    children += 1;
    return child.apply(this, args);
  } as typeof logger.child;
  return { logger, lines, children: () => children };
}

async function appWith(logger: FastifyBaseLogger, route: (log: FastifyBaseLogger) => void) {
  const app = Fastify({ loggerInstance: logger, disableRequestLogging: true });
  app.setChildLoggerFactory((parent, bindings, options) =>
    requestLogger(parent, { ...bindings, trace_id: 'abc' }, options),
  );
  app.get('/', async (request) => {
    route(request.log);
    return { ok: true };
  });
  await app.ready();
  return app;
}

describe('a request logger', () => {
  test('a request that writes only below the level kept makes no child logger', async () => {
    const { logger, lines, children } = logged('warn');
    const app = await appWith(logger, (log) => {
      log.info({ detail: 1 }, 'not kept');
      log.debug('not kept either');
    });
    const made = children();
    assert.equal((await app.inject({ method: 'GET', url: '/', headers: { 'x-request-id': 'r-1' } })).statusCode, 200);
    assert.equal(children(), made);
    assert.deepEqual(lines, []);
    await app.close();
  });

  test('a line kept is written by the child, with the request id and the bindings, once per request', async () => {
    const { logger, lines, children } = logged('warn');
    const app = await appWith(logger, (log) => {
      log.warn({ detail: 1 }, 'first');
      log.error('second');
    });
    const made = children();
    await app.inject({ method: 'GET', url: '/' });
    assert.equal(children(), made + 1, 'one child for the request, made at its first line kept');
    assert.deepEqual(
      lines.map(({ msg, level, trace_id, detail }) => ({ msg, level, trace_id, detail })),
      [
        { msg: 'first', level: 40, trace_id: 'abc', detail: 1 },
        { msg: 'second', level: 50, trace_id: 'abc', detail: undefined },
      ],
    );
    assert.equal(typeof lines[0]!.reqId, 'string');
    assert.equal(lines[0]!.reqId, lines[1]!.reqId);
    await app.close();
  });

  test('its level is the service logger’s until set; set, it is the request’s alone', async () => {
    const { logger, lines } = logged('warn');
    const app = await appWith(logger, (log) => {
      assert.equal(log.level, 'warn');
      log.level = 'info';
      log.info('kept now');
    });
    await app.inject({ method: 'GET', url: '/' });
    assert.deepEqual(
      lines.map((line) => line.msg),
      ['kept now'],
    );
    assert.equal(logger.level, 'warn');
    await app.close();
  });

  test('a child of it carries the request’s bindings and its own', async () => {
    const { logger, lines } = logged('info');
    const app = await appWith(logger, (log) => log.child({ part: 'core' }).info('from the child'));
    await app.inject({ method: 'GET', url: '/' });
    assert.equal(lines[0]!.part, 'core');
    assert.equal(lines[0]!.trace_id, 'abc');
    assert.equal(typeof lines[0]!.reqId, 'string');
    await app.close();
  });
});
