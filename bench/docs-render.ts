/**
 * How heavy the API reference is for a newcomer's first look: `coregate serve` on a fresh data directory
 * (the demo set up), then /openapi.json's bytes as written and as sent to a browser that accepts gzip, and how
 * long /docs takes in headless Chromium from navigation to the first operation tags (`.opblock-tag`) on screen:
 * the median of three loads, each in a cold browser context (no cache), the first of them right after the
 * server announced it listens. Beside the time, the page's main-thread work until then (Chromium's
 * TaskDuration, of which ScriptDuration is JavaScript and LayoutDuration with RecalcStyleDuration the page's
 * layout and style): on shared cores both follow the load of the machine, the work less than the time.
 *
 * Run: node --import tsx bench/docs-render.ts [loads]   (default 3; every load is printed, then the median)
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { launchChromium } from '../test/support/chromium.js';
import { serve, stop } from '../test/support/serve-process.js';
import { median } from './measure.js';

const loads = Number(process.argv[2] ?? 3);
const kb = (bytes: number) => `${(bytes / 1000).toFixed(1)} KB`;

const dataDir = mkdtempSync(join(tmpdir(), 'coregate-docs-bench-'));
const served = await serve({
  env: { COREGATE_DATA_DIR: dataDir, PORT: '0', LOG_LEVEL: 'warn', DATABASE_URL: '' },
  ready: /Try it:\n.*\n/,
});
const browser = await launchChromium();
try {
  const renders: number[] = [];
  const documentArrivals: number[] = [];
  const tasks: number[] = [];
  const scripts: number[] = [];
  const layouts: number[] = [];
  for (let load = 0; load < loads; load++) {
    const context = await browser.newContext();
    const page = await context.newPage();
    const devtools = await context.newCDPSession(page);
    await devtools.send('Performance.enable');
    const started = performance.now();
    const documentArrived = page
      .waitForResponse((response) => new URL(response.url()).pathname === '/openapi.json', { timeout: 120_000 })
      .then(() => performance.now() - started);
    await page.goto(`${served.baseUrl}/docs`);
    await page.locator('.opblock-tag').first().waitFor({ state: 'visible', timeout: 120_000 });
    renders.push(performance.now() - started);
    documentArrivals.push(await documentArrived);
    const { metrics } = await devtools.send('Performance.getMetrics');
    const metric = (name: string) => 1000 * (metrics.find((m) => m.name === name)?.value ?? Number.NaN);
    tasks.push(metric('TaskDuration'));
    scripts.push(metric('ScriptDuration'));
    layouts.push(metric('LayoutDuration') + metric('RecalcStyleDuration'));
    await context.close();
  }
  const raw = await fetch(`${served.baseUrl}/openapi.json`, { headers: { 'accept-encoding': 'identity' } });
  const rawBytes = (await raw.arrayBuffer()).byteLength;
  // undici's fetch decodes gzip itself: the bytes on the wire are read from a plain request.
  const { request } = await import('undici');
  const sent = await request(`${served.baseUrl}/openapi.json`, { headers: { 'accept-encoding': 'gzip' } });
  const sentBody = Buffer.from(await sent.body.arrayBuffer());
  const encoding = String(sent.headers['content-encoding'] ?? 'identity');
  const decoded = encoding === 'gzip' ? gunzipSync(sentBody).byteLength : sentBody.byteLength;
  console.log(`/openapi.json: ${kb(rawBytes)} as written, ${kb(sentBody.byteLength)} as sent (${encoding})`);
  if (decoded !== rawBytes) console.log(`  (decoded ${kb(decoded)}: differs from the plain answer)`);
  const ms = (values: readonly number[]) => values.map((value) => `${Math.round(value)} ms`).join(', ');
  console.log(`each load, the first right after the start:`);
  console.log(`/openapi.json arrived after: ${ms(documentArrivals)}`);
  console.log(`/docs to the first .opblock-tag: ${ms(renders)}; median ${Math.round(median(renders))} ms`);
  console.log(`the page's main-thread work until then: ${ms(tasks)}; median ${Math.round(median(tasks))} ms`);
  console.log(`  of which JavaScript: ${ms(scripts)}; median ${Math.round(median(scripts))} ms`);
  console.log(`  of which layout and style: ${ms(layouts)}; median ${Math.round(median(layouts))} ms`);
} finally {
  await browser.close();
  await stop(served.child);
  rmSync(dataDir, { recursive: true, force: true });
}
