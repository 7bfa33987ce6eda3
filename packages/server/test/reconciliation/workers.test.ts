import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectLedgerSound } from '../support/ledger.ts';
import { balanceOf, CCE, PM, pay, waitForPayment } from '../support/payments.ts';
import { startTestServer, type TestClient, type TestServer } from '../support/test-server.ts';

/**
 * The reconciliation loops as the service runs them (compose.ts), on the real clock with the small values the
 * operator contract allows: nothing but time passes, and every unknown payment reaches its final state.
 */

let server: TestServer;
let c: TestClient;

beforeAll(async () => {
  server = await startTestServer({
    env: {
      DISPERSA_SANDBOX_SETTLE_MS: '300',
      DISPERSA_RECONCILE_INTERVAL_MS: '100',
      DISPERSA_UNKNOWN_BUDGET_SECONDS: '2',
    },
  });
  c = await server.newClient({ fundMinor: 100_000_000n });
});
afterAll(async () => {
  await expectLedgerSound(server.testDb.db);
  await server.stop();
});

async function waitFor<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('the loops of the running service', () => {
  it('finish 03, 04, CCE 06 as completed and CCE 07 as failed, by themselves', async () => {
    const before = await balanceOf(c);
    const made = await Promise.all([
      pay(c, '100003', PM),
      pay(c, '100004', PM),
      pay(c, '100006', CCE),
      pay(c, '100007', CCE),
    ]);
    const ids = made.map((r) => r.body.payload.id as string);
    expect(made.map((r) => r.body.payload.state)).toEqual(['unknown', 'unknown', 'unknown', 'unknown']);
    const final = await Promise.all(
      ids.map((id) => waitForPayment(c, id, (p) => p.state === 'completed' || p.state === 'failed', 15_000)),
    );
    expect(final.map((p) => p.state)).toEqual(['completed', 'completed', 'completed', 'failed']);
    expect(await balanceOf(c)).toBe(before - 100003n - 100004n - 100006n);
  });

  it('02 goes under_review when the budget runs out', async () => {
    const res = await pay(c, '100002', PM);
    const p = await waitForPayment(c, res.body.payload.id, (x) => x.subStatus === 'under_review', 15_000);
    expect(p.state).toBe('unknown');
  });

  it('an orphan debit on the bank becomes an exception the operator API lists', async () => {
    const line = await server.admin('POST', '/admin/v1/sandbox/bank/lines', {
      direction: 'debit',
      amountMinor: '4242',
      reference: 'WHO-DID-THIS',
    });
    const e = await waitFor('the exception', async () => {
      const res = await server.admin('GET', '/admin/v1/reconciliation/exceptions?kind=orphan_debit&status=open');
      expect(res.status).toBe(200);
      return res.body.payload.data.find((x: any) => x.bankLines[0]?.bankLineId === line.body.payload.bankLineId);
    });
    expect(e).toMatchObject({ kind: 'orphan_debit', status: 'open', amountMinor: '4242' });
    const status = await server.admin('GET', '/admin/v1/reconciliation/status');
    expect(status.body.payload.sources).toEqual([expect.objectContaining({ name: 'sandbox' })]);
    expect(status.body.payload.balances).toContainEqual(
      expect.objectContaining({ currency: 'VES', baselineMinor: (10n ** 15n).toString() }),
    );
  });
});
