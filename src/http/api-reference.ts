/**
 * The API reference: the OpenAPI document (openapi.ts; served at /openapi.json by ops-routes.ts) and the
 * interactive reference at /docs (Swagger UI), where every operation's example is a request the demo
 * dataset answers; `GET /` leads there.
 */
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import type { Authenticator } from '../security/authenticator.js';
import { verifyPassword } from '../crypto/passwords.js';
import { demoDataset, users } from '../store/access.js';
import { EXAMPLE_USER_NUMBER } from './openapi-examples.js';
import type { Db } from '../database/database.js';
import { openApiOptions, type OpenApiSettings } from './openapi.js';

export interface ApiReferenceSettings extends Omit<OpenApiSettings, 'demoAdminPassword' | 'demoUserPassword'> {
  readonly db: Db;
  readonly authenticator: Authenticator;
  /**
   * The administrative password the demo set-up wrote to demo-credentials.json, if any: shown in the
   * examples only when `demoPassword` accepts it.
   */
  readonly demoAdminPassword?: string;
  /** The demo user's password from the same file: shown in logon's example on the same terms. */
  readonly demoUserPassword?: string;
}

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
 * The demo dataset's administrative password when it may be shown: the database holds a demo dataset (the
 * demo set-up, `coregate seed` and `coregate reset` mark it; an import of other records forgets it) and the
 * password is still its administrative password (an operator who set their own never sees it, nor anyone
 * else).
 */
export async function demoPassword(
  db: Db,
  authenticator: Authenticator,
  candidate: string | undefined,
): Promise<string | undefined> {
  if (candidate === undefined) return undefined;
  if (!(await demoDataset.get(db))) return undefined;
  return (await authenticator.isAdminPassword(candidate)) ? candidate : undefined;
}

/** The demo user's password when it may be shown: on the terms of `demoPassword`, for the examples' user. */
async function demoUserPassword(db: Db, candidate: string | undefined): Promise<string | undefined> {
  if (candidate === undefined || !(await demoDataset.get(db))) return undefined;
  const user = await users.find(db, EXAMPLE_USER_NUMBER);
  return user && (await verifyPassword(candidate, user.passwordHash)) ? candidate : undefined;
}

/** Registers the document and /docs; call before the routes it documents. */
export async function registerApiReference(app: FastifyInstance, settings: ApiReferenceSettings): Promise<void> {
  const demoAdminPassword = await demoPassword(settings.db, settings.authenticator, settings.demoAdminPassword);
  const demoUser = await demoUserPassword(settings.db, settings.demoUserPassword);
  await app.register(swagger, openApiOptions({ ...settings, demoAdminPassword, demoUserPassword: demoUser }));
  await app.register(swaggerUi, {
    routePrefix: '/docs',
    staticCSP: DOCS_CONTENT_POLICY,
    logo: { type: 'image/svg+xml', content: LOGO, href: '/docs', target: '_self' },
    theme: {
      title: 'coregate API reference',
      favicon: [{ filename: 'favicon.svg', rel: 'icon', sizes: 'any', type: 'image/svg+xml', content: FAVICON }],
      css: [{ filename: 'coregate.css', content: THEME_CSS }],
    },
    uiConfig: {
      // The document the reference shows is /openapi.json, as the top bar says.
      urls: [{ url: '/openapi.json', name: 'coregate: /openapi.json' }],
      deepLinking: true,
      tryItOutEnabled: true,
      // The token given to Authorize is kept in the browser across reloads: entered once.
      persistAuthorization: true,
      displayRequestDuration: true,
    },
  });
  app.get('/', { schema: { hide: true } }, (_request, reply) => reply.redirect('/docs', 302));
}
