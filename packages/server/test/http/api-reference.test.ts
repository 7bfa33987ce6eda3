import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OPERATION_IDS } from '../../src/http/openapi.ts';
import { REFERENCE_PATH } from '../../src/http/public-app.ts';
import { browserSkipReason, launchBrowser, type TestBrowser } from '../support/browser.ts';
import { startTestServer, type TestServer } from '../support/test-server.ts';

/**
 * The browsable API reference the service serves at /docs, in a real headless Chromium: it renders every operation
 * of GET /v2/openapi.json and the security schemes, and loads nothing from anywhere but the service (offline, no
 * CDN). REFERENCE_SCREENSHOT=1 also writes docs/reference/api-reference.png.
 */

const skip = browserSkipReason();
const SHOT = process.env['REFERENCE_SCREENSHOT']
  ? fileURLToPath(new URL('../../../../docs/reference/api-reference.png', import.meta.url))
  : null;

describe.skipIf(skip !== null)(`API reference ${skip ?? ''}`.trim(), () => {
  let server: TestServer;
  let b: TestBrowser;

  beforeAll(async () => {
    server = await startTestServer();
    b = await launchBrowser();
  });
  afterAll(async () => {
    await b?.close();
    await server?.stop();
  });

  it('renders every operation of the document from the service alone', async () => {
    const page = await b.browser.newPage({ viewport: { width: 1280, height: 900 } });
    const origin = new URL(server.baseUrl).origin;
    const elsewhere: string[] = [];
    const failed: string[] = [];
    // Anything not from the service is recorded and refused, so the page must work without it.
    await page.route('**/*', (route) => {
      const url = route.request().url();
      if (url.startsWith(origin) || url.startsWith('data:')) return route.continue();
      elsewhere.push(url);
      return route.abort();
    });
    page.on('requestfailed', (r) => failed.push(r.url()));
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));

    const response = await page.goto(`${server.baseUrl}${REFERENCE_PATH}`);
    expect(response?.status()).toBe(200);
    await page.waitForSelector('.opblock');
    // Every operation, and the three webhooks the service sends.
    await expect.poll(() => page.locator('.opblock').count()).toBe(Object.keys(OPERATION_IDS).length + 3);
    expect(await page.locator('body').textContent()).toContain('paymentStateChanged');
    expect(await page.locator('.info .title').textContent()).toContain('dispersa API');
    if (SHOT) await page.screenshot({ path: SHOT, fullPage: false });
    // The security schemes are shown (the Authorize dialog lists them).
    await page.click('button.authorize');
    const dialog = await page.locator('.auth-container').allTextContents();
    expect(dialog.join('\n')).toContain('x-signature');
    await page.keyboard.press('Escape');
    // One operation opened: its parameters and its answers.
    await page.click('#operations-payments-createPayment .opblock-summary');
    await page.waitForSelector('#operations-payments-createPayment .parameters');
    const opened = await page.locator('#operations-payments-createPayment').textContent();
    expect(opened).toContain('idempotency-key');
    expect(opened).toContain('415');
    // No "Try it out": a browser holds no key to sign with.
    expect(await page.locator('.try-out__btn').count()).toBe(0);

    expect(elsewhere).toEqual([]);
    expect(failed).toEqual([]);
    expect(errors).toEqual([]);
  }, 90_000);
});
