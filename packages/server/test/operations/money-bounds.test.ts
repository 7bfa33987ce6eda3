import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBalanceCheck } from '../../src/reconciliation/balance.ts';
import { MAX_BALANCE_MINOR, MAX_FUNDING_MINOR } from '../../src/shared/money.ts';
import { createTestDb } from '../support/test-db.ts';
import { startTestServer, type TestServer } from '../support/test-server.ts';

/**
 * Issue 13, item 6: a funding above 10^15 minor units, or one that would take a balance above 10^16, is a 400; the
 * reconciliation's sums are numeric, so even figures beyond the bigint range do not stop the balance check.
 */

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => server?.stop());

const fund = (clientId: string, amountMinor: string, reference: string) =>
  server.admin('POST', `/admin/v1/clients/${clientId}/fundings`, { amountMinor, reference });

async function availableOf(clientId: string): Promise<string> {
  return (await server.admin('GET', `/admin/v1/clients/${clientId}`)).body.payload.balance.availableMinor;
}

describe('funding bounds', () => {
  it('one funding: at most 10^15 minor units; the range of the column is not the bound', async () => {
    const { clientId } = await server.newClient();
    for (const amount of ['9223372036854775807', '9223372036854775808', (MAX_FUNDING_MINOR + 1n).toString()]) {
      const res = await fund(clientId, amount, `too-much-${amount}`);
      expect(res.status, amount).toBe(400);
      expect(res.body).toEqual({ error: 'amountMinor must be at most 1000000000000000 minor units per funding' });
    }
    expect(await availableOf(clientId)).toBe('0');
    expect((await fund(clientId, MAX_FUNDING_MINOR.toString(), 'at-the-bound')).status).toBe(201);
    expect(await availableOf(clientId)).toBe(MAX_FUNDING_MINOR.toString());
  });

  it('a balance: at most 10^16; the funding that would pass it is refused whole', async () => {
    const { clientId } = await server.newClient();
    const steps = Number(MAX_BALANCE_MINOR / MAX_FUNDING_MINOR);
    for (let i = 0; i < steps; i++) {
      expect((await fund(clientId, MAX_FUNDING_MINOR.toString(), `fill-${clientId}-${i}`)).status).toBe(201);
    }
    expect(await availableOf(clientId)).toBe(MAX_BALANCE_MINOR.toString());
    const over = await fund(clientId, '1', `over-${clientId}`);
    expect(over.status).toBe(400);
    expect(over.body).toEqual({
      error: 'the balance would exceed 10000000000000000 minor units, the most one balance holds',
    });
    expect(await availableOf(clientId)).toBe(MAX_BALANCE_MINOR.toString());
    // The refused funding left nothing: the same reference is still free.
    const { clientId: other } = await server.newClient();
    expect((await fund(other, '1', `over-${clientId}`)).status).toBe(201);
  });
});

describe('reconciliation sums', () => {
  it('a balance check with figures beyond the bigint range completes and records them', async () => {
    const testDb = await createTestDb();
    try {
      const huge = 2n * 9_223_372_036_854_775_807n;
      const check = createBalanceCheck({
        db: testDb.db,
        clock: { now: () => new Date('2026-01-01T00:00:00Z') },
        source: {
          name: 'test',
          fetchSince: async () => ({ lines: [], cursor: null }) as never,
          balance: async () => huge,
        },
        intervalMs: 1000,
        logger: { warn() {} },
      });
      await testDb.db.query(`INSERT INTO recon_balance (currency) VALUES ('VES')`);
      const first = await check.compare('VES', huge);
      expect(first?.bankMinor).toBe(huge);
      const later = createBalanceCheck({
        db: testDb.db,
        clock: { now: () => new Date('2026-01-01T01:00:00Z') },
        source: {
          name: 'test',
          fetchSince: async () => ({ lines: [], cursor: null }) as never,
          balance: async () => 0n,
        },
        intervalMs: 1000,
        logger: { warn() {} },
        persistChecks: 1,
      });
      // The bank now shows nothing: a difference of minus twice the bigint maximum, recorded as an exception.
      const second = await later.compare('VES', 0n);
      expect(second?.unexplainedMinor).toBe(-huge);
      const { rows } = await testDb.db.query<{ bank: string; amount: string }>(
        `SELECT b.bank_minor::text AS bank, e.amount_minor::text AS amount FROM recon_balance b, recon_exceptions e
          WHERE b.currency = 'VES' AND e.kind = 'balance_mismatch'`,
      );
      expect(rows).toEqual([{ bank: '0', amount: (-huge).toString() }]);
    } finally {
      await testDb.close();
    }
  });
});
