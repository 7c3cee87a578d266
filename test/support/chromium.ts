/**
 * Debian's Chromium, headless, driven by playwright-core: how the /docs test and the API reference's
 * benchmark (bench/docs-render.ts) open a page.
 */
import { chromium, type Browser } from 'playwright-core';

/** Where Debian's package puts it (`apt-get install chromium`; .ci/run does). */
export const CHROMIUM = '/usr/bin/chromium';

const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** A headless Chromium with nothing of its own going on (no sync, updates or background fetches). */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
}
