import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectLedgerSound } from '../support/ledger.ts';
import { balanceOf, PM, pay } from '../support/payments.ts';
import { startTestServer, type TestClient, type TestServer } from '../support/test-server.ts';

let server: TestServer;
let c: TestClient;

beforeAll(async () => {
  server = await startTestServer({ env: { DISPERSA_UNKNOWN_BUDGET_SECONDS: '3600' } });
  c = await server.newClient({ fundMinor: 10_000_000n });
});
afterAll(async () => {
  await expectLedgerSound(server.testDb.db);
  await server.stop();
});

describe('fundings', () => {
  it('credits the balance at once and books the matching credit on the sandbox bank', async () => {
    const before = await balanceOf(c);
    const res = await server.admin('POST', `/admin/v1/clients/${c.clientId}/fundings`, {
      amountMinor: '250000',
      reference: 'wire-0001',
    });
    expect(res.status).toBe(201);
    expect(res.body.payload).toMatchObject({ amountMinor: '250000', currency: 'VES', reference: 'wire-0001' });
    expect(res.body.payload.fundingId).toMatch(/^fnd_/);
    expect(await balanceOf(c)).toBe(before + 250000n);
    const lines = await server.admin('GET', '/admin/v1/sandbox/bank/lines');
    expect(lines.body.payload.data).toContainEqual(
      expect.objectContaining({ direction: 'credit', amountMinor: '250000', reference: 'wire-0001' }),
    );
  });

  it('rejects bad input, unknown clients and a reused reference', async () => {
    const url = `/admin/v1/clients/${c.clientId}/fundings`;
    expect((await server.admin('POST', url, { amountMinor: 100, reference: 'x' })).status).toBe(400);
    expect((await server.admin('POST', url, { amountMinor: '0', reference: 'x' })).status).toBe(400);
    expect((await server.admin('POST', url, { amountMinor: '100' })).status).toBe(400);
    expect(
      (await server.admin('POST', '/admin/v1/clients/cli_nope/fundings', { amountMinor: '100', reference: 'y' }))
        .status,
    ).toBe(404);
    expect((await server.admin('POST', url, { amountMinor: '100', reference: 'dup-ref' })).status).toBe(201);
    const again = await server.admin('POST', url, { amountMinor: '100', reference: 'dup-ref' });
    expect(again.status).toBe(409);
  });

  it('the operator sees the client with its balance and keys', async () => {
    const res = await server.admin('GET', `/admin/v1/clients/${c.clientId}`);
    expect(res.body.payload.balance).toEqual({ currency: 'VES', availableMinor: (await balanceOf(c)).toString() });
    expect(res.body.payload.keys[0]).toMatchObject({ keyId: c.keyId, active: true, limitsConfigured: true });
  });
});

describe('operator payments', () => {
  it('lists across clients with filters, keyset paged', async () => {
    const other = await server.newClient({ fundMinor: 1_000_000n });
    await pay(c, '100000', PM);
    await pay(other, '100002', PM);
    const all = await server.admin('GET', '/admin/v1/payments?limit=100');
    expect(all.status).toBe(200);
    expect(new Set(all.body.payload.data.map((p: any) => p.clientId))).toEqual(new Set([c.clientId, other.clientId]));
    const unknown = await server.admin('GET', '/admin/v1/payments?state=unknown&subStatus=reconciling');
    expect(unknown.body.payload.data.every((p: any) => p.state === 'unknown' && p.subStatus === 'reconciling')).toBe(
      true,
    );
    const mine = await server.admin('GET', `/admin/v1/payments?clientId=${other.clientId}`);
    expect(mine.body.payload.data.every((p: any) => p.clientId === other.clientId)).toBe(true);
    expect((await server.admin('GET', '/admin/v1/payments?state=lost')).status).toBe(400);
  });

  it('resolves an unknown payment as completed: the hold becomes the debit, with its event', async () => {
    const before = await balanceOf(c);
    const res = await pay(c, '300002', PM);
    expect(res.body.payload.state).toBe('unknown');
    const id = res.body.payload.id;
    expect((await server.admin('POST', `/admin/v1/payments/${id}/resolve`, { outcome: 'completed' })).status).toBe(400);
    expect(
      (await server.admin('POST', `/admin/v1/payments/${id}/resolve`, { outcome: 'maybe', note: 'x' })).status,
    ).toBe(400);
    const resolved = await server.admin('POST', `/admin/v1/payments/${id}/resolve`, {
      outcome: 'completed',
      note: 'bank confirmed by phone',
    });
    expect(resolved.status).toBe(200);
    expect(resolved.body.payload).toMatchObject({ state: 'completed', subStatus: null });
    expect(await balanceOf(c)).toBe(before - 300002n);
    const again = await server.admin('POST', `/admin/v1/payments/${id}/resolve`, {
      outcome: 'failed',
      note: 'second thoughts',
    });
    expect(again.status).toBe(409);
    const { rows } = await server.testDb.db.query<{ note: string; outcome: string }>(
      'SELECT note, outcome FROM payment_resolutions WHERE payment_id = $1',
      [id],
    );
    expect(rows).toEqual([{ note: 'bank confirmed by phone', outcome: 'completed' }]);
    const events = await server.testDb.db.query<{ state: string }>(
      "SELECT body::json->'data'->'payment'->>'state' AS state FROM events WHERE payment_id = $1 ORDER BY seq",
      [id],
    );
    expect(events.rows.map((r) => r.state)).toEqual(['unknown', 'completed']);
  });

  it('resolves an unknown payment as failed: the hold is released', async () => {
    const before = await balanceOf(c);
    const res = await pay(c, '400002', PM);
    const resolved = await server.admin('POST', `/admin/v1/payments/${res.body.payload.id}/resolve`, {
      outcome: 'failed',
      note: 'bank says never received',
    });
    expect(resolved.body.payload).toMatchObject({ state: 'failed', failureCode: 'resolved_by_operator' });
    expect(await balanceOf(c)).toBe(before);
    expect(
      (await server.admin('POST', '/admin/v1/payments/pay_0000000099999999/resolve', { outcome: 'failed', note: 'n' }))
        .status,
    ).toBe(404);
  });
});
