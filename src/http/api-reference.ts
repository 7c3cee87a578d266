/**
 * The API reference: the OpenAPI documents (openapi.ts), the API's at /openapi.json and the admin API's at
 * /openapi-admin.json, and the interactive reference at /docs (Swagger UI), where every operation's example
 * is a request the demo dataset answers; `GET /` leads there. None holds a password or a token: the examples
 * show placeholders, which /docs fills in with the demo's passwords once Authorize has a token that may read
 * them.
 */
import { createHash } from 'node:crypto';
import { promisify } from 'node:util';
import { gzip } from 'node:zlib';
import swagger from '@fastify/swagger';
import swaggerUi, { type FastifySwaggerUiOptions } from '@fastify/swagger-ui';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { adminDocument, openApiOptions, type OpenApiSettings } from './openapi.js';

/**
 * /docs's own content policy: its scripts and styles from itself, calls to this origin only (Try it out),
 * no framing. Swagger UI's default adds `upgrade-insecure-requests`, which would send Try it out over
 * HTTPS from a page served over plain HTTP on any host but localhost.
 */
const DOCS_CONTENT_POLICY = [
  "default-src 'self'",
  "base-uri 'self'",
  "connect-src 'self'",
  "font-src 'self' data:",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "img-src 'self' data:",
  "object-src 'none'",
  "script-src 'self'",
  "script-src-attr 'none'",
  "style-src 'self' 'unsafe-inline'",
].join('; ');

const LOGO = `<svg xmlns="http://www.w3.org/2000/svg" width="300" height="40" viewBox="0 0 300 40">
<rect x="1" y="5" width="30" height="30" rx="7" fill="#1f7a4d"/>
<path d="M22 14.5a8 8 0 1 0 0 11" fill="none" stroke="#fff" stroke-width="3.2" stroke-linecap="round"/>
<text x="42" y="27" font-family="Helvetica, Arial, sans-serif" font-size="21" font-weight="700" fill="#fff">coregate</text>
<text x="135" y="27" font-family="Helvetica, Arial, sans-serif" font-size="16" fill="#cfd8d3">API reference</text>
</svg>`;

const FAVICON = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32">
<rect width="32" height="32" rx="7" fill="#1f7a4d"/>
<path d="M22.5 10.5a8 8 0 1 0 0 11" fill="none" stroke="#fff" stroke-width="3.4" stroke-linecap="round"/>
</svg>`;

/** The top bar in coregate's colours. */
const THEME_CSS =
  '.swagger-ui .topbar { background-color: #16382a; } .swagger-ui .topbar .download-url-wrapper .select-label { color: #cfd8d3; }';

/**
 * Swagger UI's request interceptor on /docs: a call whose body holds a placeholder of the demo's passwords
 * (openapi-examples.ts's `PLACEHOLDER`, written out here), sent under the token given to Authorize, first
 * asks `GET /admin/demo-credentials` with that token and puts the passwords it answers in their place. Without
 * a token, or answered anything but 200 (no admin scope, no demo dataset), the body goes as written.
 * @fastify/swagger-ui sends the function's source to the browser: it uses nothing outside itself.
 */
async function fillDemoCredentials(request: Record<string, unknown>): Promise<Record<string, unknown>> {
  const placeholders: Record<string, 'adminPassword' | 'userPassword'> = {
    '"<admin password>"': 'adminPassword',
    '"<user password>"': 'userPassword',
  };
  const headers = (request.headers ?? {}) as Record<string, string | undefined>;
  const authorization = headers.Authorization ?? headers.authorization;
  const body = request.body;
  if (!authorization || typeof body !== 'string') return request;
  if (!Object.keys(placeholders).some((placeholder) => body.includes(placeholder))) return request;
  const answer = await fetch(new URL('/admin/demo-credentials', String(request.url)), { headers: { authorization } });
  if (answer.status !== 200) return request;
  const demo = (await answer.json()) as Partial<Record<'adminPassword' | 'userPassword', string>>;
  let filled = body;
  for (const [placeholder, name] of Object.entries(placeholders)) {
    const password = demo[name];
    if (typeof password === 'string') filled = filled.split(placeholder).join(JSON.stringify(password));
  }
  request.body = filled;
  return request;
}

const gzipped = promisify(gzip);

/** An OpenAPI document as it is sent: serialized once, as JSON and gzipped, and its entity tag. */
interface DocumentBytes {
  readonly json: Buffer;
  readonly gzip: Buffer;
  readonly etag: string;
}

/** The reference's two documents, as they are sent. */
interface ReferenceBytes {
  /** /openapi.json: the API. */
  readonly api: DocumentBytes;
  /** /openapi-admin.json: the admin API. */
  readonly admin: DocumentBytes;
}

/** Each app's documents' bytes, once made (or being made). */
const madeDocuments = new WeakMap<FastifyInstance, Promise<ReferenceBytes>>();

async function bytesOf(document: unknown): Promise<DocumentBytes> {
  const json = Buffer.from(JSON.stringify(document));
  const etag = `"${createHash('sha256').update(json).digest('base64url').slice(0, 27)}"`;
  return { json, gzip: await gzipped(json), etag };
}

/**
 * The documents' bytes, made once: the documents are completed (openapi.ts, about a second of CPU on two
 * shared cores), serialized and gzipped on the first call for either.
 */
function documentBytes(app: FastifyInstance): Promise<ReferenceBytes> {
  let made = madeDocuments.get(app);
  if (!made) {
    made = (async () => {
      const api = app.swagger();
      return { api: await bytesOf(api), admin: await bytesOf(adminDocument(api)) };
    })();
    // A making that failed is not kept: the next call tries again.
    made.catch(() => madeDocuments.delete(app));
    madeDocuments.set(app, made);
  }
  return made;
}

/**
 * Starts making the documents' bytes, unless made or being made, once the current request has been answered:
 * asked for /docs, the browser still has Swagger UI's scripts to load and run before it asks for a document.
 */
function prepareDocument(app: FastifyInstance): void {
  if (madeDocuments.has(app)) return;
  setImmediate(() => {
    documentBytes(app).catch((error: unknown) => app.log.error({ err: error }, 'the OpenAPI document failed'));
  });
}

/** Whether an Accept-Encoding header takes gzip: named (or `*`) without `q=0`. */
function acceptsGzip(header: string | undefined): boolean {
  return (header ?? '').split(',').some((coding) => {
    const [name, ...parameters] = coding.trim().toLowerCase().split(';');
    const refused = parameters.some((parameter) => /^\s*q=0(?:\.0{0,3})?\s*$/.test(parameter));
    return (name === 'gzip' || name === '*') && !refused;
  });
}

/** A document: the same bytes on every call, gzipped to a client that accepts it, 304 to one that has them. */
function documentAnswer(app: FastifyInstance, which: keyof ReferenceBytes) {
  return async (request: FastifyRequest, reply: FastifyReply) => {
    const { json, gzip: zipped, etag } = (await documentBytes(app))[which];
    reply
      .header('content-type', 'application/json; charset=utf-8')
      .header('vary', 'accept-encoding')
      .header('etag', etag);
    if (request.headers['if-none-match'] === etag) return reply.code(304).send();
    if (!acceptsGzip(request.headers['accept-encoding'])) return reply.send(json);
    return reply.header('content-encoding', 'gzip').send(zipped);
  };
}

/** /docs: Swagger UI on /openapi.json, in coregate's colours. */
const DOCS_OPTIONS = {
  routePrefix: '/docs',
  staticCSP: DOCS_CONTENT_POLICY,
  logo: { type: 'image/svg+xml', content: LOGO, href: '/docs', target: '_self' },
  theme: {
    title: 'coregate API reference',
    favicon: [{ filename: 'favicon.svg', rel: 'icon', sizes: 'any', type: 'image/svg+xml', content: FAVICON }],
    css: [{ filename: 'coregate.css', content: THEME_CSS }],
  },
  uiConfig: {
    // The documents the reference shows, the API first, as the top bar says.
    urls: [
      { url: '/openapi.json', name: 'coregate API: /openapi.json' },
      { url: '/openapi-admin.json', name: 'coregate admin API: /openapi-admin.json' },
    ],
    deepLinking: true,
    tryItOutEnabled: true,
    // The token given to Authorize is kept in the browser across reloads: entered once.
    persistAuthorization: true,
    displayRequestDuration: true,
    // The demo's passwords are fetched with that token when a call needs them, never put in the page.
    requestInterceptor: fillDemoCredentials,
  },
} satisfies FastifySwaggerUiOptions;

/** Registers the documents, /openapi.json, /openapi-admin.json and /docs; call before the routes they document. */
export async function registerApiReference(app: FastifyInstance, settings: OpenApiSettings): Promise<void> {
  await app.register(swagger, openApiOptions(settings));
  app.get('/openapi.json', { schema: { hide: true } }, documentAnswer(app, 'api'));
  app.get('/openapi-admin.json', { schema: { hide: true } }, documentAnswer(app, 'admin'));
  // /docs in a context of its own, whose one hook starts making the document while the page loads: a process
  // nobody reads the reference of (a gateway's worker, a test's server) never makes it.
  await app.register(async (docs) => {
    docs.addHook('onRequest', (_request, _reply, done) => {
      prepareDocument(app);
      done();
    });
    await docs.register(swaggerUi, DOCS_OPTIONS);
  });
  app.get('/', { schema: { hide: true } }, (_request, reply) => reply.redirect('/docs', 302));
}
