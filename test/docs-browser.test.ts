/**
 * /docs as a newcomer meets it, in a real headless browser (Debian's Chromium driven by playwright-core):
 * `coregate serve` on a fresh data directory seeds the demo; `/` leads to coregate's own reference of
 * /openapi.json, and nothing the page loads holds the demo's passwords or its token; the token is given once
 * to Authorize (and kept across a reload), and findBySSN, a share update and logon are answered 200 straight
 * from their examples, whose password placeholders the page fills in, under the page's content policy.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { CHROMIUM, launchChromium } from './support/chromium.js';
import { serve, stop, type Served } from './support/serve-process.js';

const skip = existsSync(CHROMIUM) ? false : `no Chromium at ${CHROMIUM} (apt-get install chromium; .ci/run does)`;

describe('/docs in a headless browser, on the demo dataset', { skip }, () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'coregate-docs-'));
  let served: Served;
  let token: string;
  /** What demo-credentials.json holds: the token and the passwords. */
  let secrets: Record<string, string>;
  let browser: Browser;
  let page: Page;
  /** Every answer the page was given before Authorize, by its URL. */
  const loadedUnauthorized = new Map<string, Promise<string>>();
  let authorized = false;
  /** What the page's console reported as errors (a content policy refusal among them). */
  const consoleErrors: string[] = [];

  before(async () => {
    served = await serve({
      env: { COREGATE_DATA_DIR: dataDir, PORT: '0', LOG_LEVEL: 'warn', DATABASE_URL: '' },
      ready: /Try it:\n.*\n/,
    });
    const credentials = JSON.parse(readFileSync(join(dataDir, 'demo-credentials.json'), 'utf8'));
    token = credentials.apiToken;
    secrets = {
      'the demo token': token,
      'the admin password': credentials.adminPassword,
      "the demo user's password": credentials.userPassword,
    };
    browser = await launchChromium();
    page = await browser.newPage();
    page.on('console', (message) => {
      if (message.type() === 'error') consoleErrors.push(message.text());
    });
    page.on('response', (response) => {
      if (!authorized)
        loadedUnauthorized.set(
          response.url(),
          response.text().catch(() => ''),
        );
    });
  });
  after(async () => {
    await browser?.close();
    if (served) await stop(served.child);
    rmSync(dataDir, { recursive: true, force: true });
  });

  /** Opens an operation (by its tag and operationId), presses Execute and returns the status the page shows. */
  async function execute(tag: string, operationId: string): Promise<string> {
    const operation = page.locator(`#operations-${tag}-${operationId}`);
    await operation.locator('.opblock-summary').first().click();
    await operation.locator('button.execute').click();
    const status = operation.locator('.live-responses-table .response .response-col_status').first();
    await status.waitFor({ timeout: 30_000 });
    return (await status.innerText()).trim();
  }

  test("/ leads to coregate's reference of /openapi.json, without Swagger's or Fastify's logo", async () => {
    const spec = page.waitForResponse((response) => new URL(response.url()).pathname === '/openapi.json');
    await page.goto(`${served.baseUrl}/`);
    assert.equal(new URL(page.url()).pathname, '/docs');
    assert.equal((await spec).status(), 200);
    assert.equal(await page.title(), 'coregate API reference');
    await page.locator('#operations-findby-findBySSN').waitFor();
    const logo = page.locator('.topbar a.link img');
    assert.match(String(await logo.getAttribute('src')), /^data:image\/svg\+xml/);
    assert.match(await page.locator('.topbar select').innerText(), /\/openapi\.json/);
  });

  test("nothing the page loaded before Authorize holds the demo's passwords or its token", async () => {
    assert.ok(loadedUnauthorized.size > 3, [...loadedUnauthorized.keys()].join(', '));
    for (const [url, body] of loadedUnauthorized) {
      const text = await body;
      for (const [what, secret] of Object.entries(secrets)) assert.ok(!text.includes(secret), `${url} holds ${what}`);
    }
  });

  test('the token is given once to Authorize', async () => {
    authorized = true;
    await page.locator('.auth-wrapper button.authorize').click();
    const dialog = page.locator('.modal-ux');
    // The token field comes first: the scopes are listed in the document's description, not above it.
    assert.doesNotMatch(await dialog.innerText(), /Calls findBy/);
    await dialog.locator('input').first().fill(token);
    await dialog.locator('button.authorize').click();
    await dialog.locator('button.btn-done').click();
    assert.equal(await page.locator('.auth-wrapper button.authorize.locked').count(), 1, 'the padlock is closed');
  });

  test('findBySSN answers 200 from its example', async () => {
    assert.equal(await execute('findby', 'findBySSN'), '200');
  });

  test('a share update answers 200 from its example', async () => {
    assert.equal(await execute('account', 'updateShareHoldByID'), '200');
  });

  test("logon answers 200 from its example, the demo user's password filled in", async () => {
    assert.equal(await execute('usermanagement', 'logon'), '200');
  });

  test('after a reload the token is still there: a call answers 200 without Authorize', async () => {
    await page.reload();
    await page.locator('#operations-findby-findByShortName').waitFor();
    assert.equal(await execute('findby', 'findByShortName'), '200');
  });

  test("nothing broke the page's content policy or scripts", () => {
    assert.deepEqual(consoleErrors, []);
  });
});
