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
    // Parallel POSTs need a key each: a write's nonce must rise strictly per key, so two writes of one key in
    // flight at once may overtake each other and the later-signed one is a replay (401). Ten keys of one client,
    // three payments each, one at a time per key.
    const apis = [c.api];
    for (let k = 1; k < 10; k++) apis.push((await server.addKey(c.clientId, k)).api);
    // 30 payments of 70,000 against 1,000,000: at most 14 can succeed.
    const perKey = await Promise.all(
      apis.map(async (api) => {
        const answers = [];
        for (let i = 0; i < 3; i++) {
          answers.push(
            await api.post(
              '/v2/payments',
              { amountMinor: '70000', currency: 'VES', ...PM },
              { idempotencyKey: newKey('od') },
            ),
          );
        }
        return answers;
      }),
    );
    const answers = perKey.flat();
    const completed = answers.filter((a) => a.status === 201 && a.body.payload.state === 'completed').length;
    const rejected = answers.filter((a) => a.status === 422).length;
    expect(completed + rejected).toBe(30);
    expect(completed).toBe(14);
    expect(await balanceOf(c)).toBe(1_000_000n - 14n * 70_000n);
  });
});
