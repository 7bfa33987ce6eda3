import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { browserSkipReason, launchBrowser } from '../support/browser.ts';

const skip = browserSkipReason();

// The browser harness itself: later browser tests (API reference, operator console) rely on it.
describe.skipIf(skip !== null)(`headless Chromium ${skip ?? ''}`.trim(), () => {
  it('renders a loopback page and runs its script', async () => {
    const server = createServer((_req, res) => {
      res.setHeader('content-type', 'text/html');
      res.end(
        '<!doctype html><title>t</title><p id="out">waiting</p><script>out.textContent = "ran " + (6 * 7)</script>',
      );
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    const b = await launchBrowser();
    try {
      const page = await b.browser.newPage();
      await page.goto(`http://127.0.0.1:${port}/`);
      expect(await page.textContent('#out')).toBe('ran 42');
    } finally {
      await b.close();
      server.close();
    }
  });
});
