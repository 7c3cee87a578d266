/**
 * The ceiling: a bare Fastify 5 app, logger off, whose `POST /ceiling/:bytes` parses the JSON body and
 * answers a constant JSON body of exactly `bytes` bytes. Measured with an operation's request bodies
 * and response size, it shows what the framework alone achieves on this machine.
 *
 * The bench compiles it as it compiles coregate (servers.ts, `buildServers`) and runs
 * `PORT=9000 node node_modules/.cache/coregate-bench/ceiling.js [--workers W]` (W processes through node:cluster).
 */
import Fastify from 'fastify';
import { runClustered } from './cluster-main.js';

/** The smallest body: `{"pad":""}`. */
const MIN_BYTES = 10;
const MAX_BYTES = 16 * 1024 * 1024;

/** The constant body of a size: `{"pad":"xxx…"}`. */
function ceilingBody(bytes: number): string {
  return `{"pad":"${'x'.repeat(bytes - MIN_BYTES)}"}`;
}

async function serve(port: number): Promise<void> {
  const bodies = new Map<number, string>();
  const app = Fastify({ logger: false });
  app.get('/ready', async () => ({ status: 'ready' }));
  app.post<{ Params: { bytes: number } }>(
    '/ceiling/:bytes',
    {
      schema: {
        params: {
          type: 'object',
          properties: { bytes: { type: 'integer', minimum: MIN_BYTES, maximum: MAX_BYTES } },
          required: ['bytes'],
        },
      },
    },
    async (request, reply) => {
      const { bytes } = request.params;
      let body = bodies.get(bytes);
      if (body === undefined) bodies.set(bytes, (body = ceilingBody(bytes)));
      return reply.type('application/json').send(body);
    },
  );
  await app.listen({ port, host: '127.0.0.1' });
}

runClustered(serve);
