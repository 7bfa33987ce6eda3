import { existsSync } from 'node:fs';
import { type Browser, chromium } from 'playwright-core';

/**
 * Headless Chromium for browser tests: Debian's `chromium` driven by playwright-core (which never downloads a
 * browser of its own). `.ci/run` installs the package; where it is absent the browser tests are skipped, and say
 * so, instead of failing a machine that cannot have it.
 */
export const CHROMIUM_PATH = process.env['CHROMIUM_PATH'] ?? '/usr/bin/chromium';

export const chromiumAvailable = (): boolean => existsSync(CHROMIUM_PATH);

/** Why a browser test is skipped, for the test's title; null when Chromium is there. */
export const browserSkipReason = (): string | null =>
  chromiumAvailable()
    ? null
    : `skipped: no Chromium at ${CHROMIUM_PATH} (apt-get install chromium, or set CHROMIUM_PATH)`;

export interface TestBrowser {
  browser: Browser;
  close(): Promise<void>;
}

/**
 * Launches a fresh headless Chromium (playwright gives it a new temporary profile). The background-networking
 * flags keep it from calling out (the machine's network is closed, and a test talks to loopback only).
 */
export async function launchBrowser(): Promise<TestBrowser> {
  const browser = await chromium.launch({
    executablePath: CHROMIUM_PATH,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  return {
    browser,
    async close() {
      await browser.close().catch(() => {});
    },
  };
}
