import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectLedgerSound } from '../support/ledger.ts';
import { balanceOf, newKey, PM } from '../support/payments.ts';
import { startTestServer, type TestServer } from '../support/test-server.ts';

let server: TestServer;

beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await expectLedgerSound(server.testDb.db);
  await server.stop();
});

describe('concurrency', () => {
  it('many simultaneous payments from several keys of one client never overdraw it', async () => {
    const c = await server.newClient({ fundMinor: 1_000_000n });
    // Parallel POSTs need a key each (POST nonces must rise strictly per key): three keys of one client.
    const apis = [c.api, (await server.addKey(c.clientId, 1)).api, (await server.addKey(c.clientId, 2)).api];
    // 30 payments of 70,000 against 1,000,000: at most 14 can succeed.
    const answers = await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        apis[i % apis.length]!.post(
          '/v2/payments',
          { amountMinor: '70000', currency: 'VES', ...PM },
          { idempotencyKey: newKey('od') },
        ),
      ),
    );
    const completed = answers.filter((a) => a.status === 201 && a.body.payload.state === 'completed').length;
    const rejected = answers.filter((a) => a.status === 422).length;
    expect(completed + rejected).toBe(30);
    expect(completed).toBe(14);
    expect(await balanceOf(c)).toBe(1_000_000n - 14n * 70_000n);
  });
});
