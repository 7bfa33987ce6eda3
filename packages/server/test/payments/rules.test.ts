import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectLedgerSound } from '../support/ledger.ts';
import { balanceOf, CCE, expectFailedAtOnceEvent, newKey, PM, pay } from '../support/payments.ts';
import { startTestServer, TEST_MASTER_KEY, type TestServer } from '../support/test-server.ts';

let server: TestServer;

beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await expectLedgerSound(server.testDb.db);
  await server.stop();
});

async function expectFailed422(
  c: Awaited<ReturnType<TestServer['newClient']>>,
  amount: string,
  dest: object,
  code: string,
) {
  const key = newKey('r');
  const before = await balanceOf(c);
  const res = await pay(c, amount, dest as Record<string, unknown>, key);
  expect(res.status).toBe(422);
  expect(Object.keys(res.body)).toEqual(['error']);
  expect(await balanceOf(c)).toBe(before);
  const replay = await pay(c, amount, dest as Record<string, unknown>, key);
  expect(replay.status).toBe(200);
  expect(replay.body.payload).toMatchObject({
    state: 'failed',
    subStatus: null,
    failureCode: code,
    amountMinor: amount,
  });
  // A failed payment is in the listing and has its event, which carries exactly what a read of it shows.
  const { rows } = await server.testDb.db.query<{ body: string }>(
    "SELECT body FROM events WHERE payment_id = $1 AND type = 'payment.state_changed'",
    [replay.body.payload.id],
  );
  expect(rows).toHaveLength(1);
  const event = JSON.parse(rows[0]!.body) as { data: { payment: unknown; previousState: unknown } };
  expect(event.data).toEqual({ payment: replay.body.payload, previousState: null });
  return res;
}

describe('business rules: 422 with a failed payment, no bank attempt, no money moved', () => {
  it('insufficient balance', async () => {
    const c = await server.newClient({ fundMinor: 100_000n });
    const res = await expectFailed422(c, '100100', PM, 'insufficient_balance');
    expect(res.body.error).toBe('insufficient balance');
    expect((await pay(c, '100000', PM)).status).toBe(201);
    expect(await balanceOf(c)).toBe(0n);
  });

  it('per-payment limit of the key', async () => {
    const c = await server.newClient({
      fundMinor: 10_000_000n,
      limits: [
        { rail: 'PM', perPaymentMaxMinor: '50000', dailyMaxMinor: '1000000' },
        { rail: 'CCE', perPaymentMaxMinor: '50000', dailyMaxMinor: '1000000' },
      ],
    });
    await expectFailed422(c, '50100', PM, 'limit_exceeded');
    expect((await pay(c, '50000', PM)).status).toBe(201);
  });

  it('daily limit of the key, counting payments that did not fail', async () => {
    const c = await server.newClient({
      fundMinor: 10_000_000n,
      limits: [
        { rail: 'PM', perPaymentMaxMinor: '100000', dailyMaxMinor: '250000' },
        { rail: 'CCE', perPaymentMaxMinor: '100000', dailyMaxMinor: '250000' },
      ],
    });
    expect((await pay(c, '100000', PM)).status).toBe(201);
    expect((await pay(c, '100000', PM)).status).toBe(201);
    await expectFailed422(c, '50100', PM, 'daily_limit_exceeded');
    // A failed payment (magic 01) does not use the allowance.
    const declined = await pay(c, '10001', PM);
    expect(declined.body.payload.state).toBe('failed');
    expect((await pay(c, '50000', PM)).status).toBe(201);
    // Limits are per rail.
    expect((await pay(c, '100000', CCE)).status).toBe(201);
  });

  it('service limits cap the key: the lower one wins', async () => {
    const s = await startTestServer({
      env: { DISPERSA_SERVICE_LIMITS: '[{"rail":"PM","perPaymentMaxMinor":"30000","dailyMaxMinor":"9000000"}]' },
    });
    try {
      const c = await s.newClient({ fundMinor: 1_000_000n });
      const res = await pay(c, '30100', PM);
      expect(res.status).toBe(422);
      expect((await pay(c, '30000', PM)).status).toBe(201);
      await expectLedgerSound(s.testDb.db);
    } finally {
      await s.stop();
    }
  });

  it('limits not configured for the rail: 422 whatever the amount', async () => {
    const c = await server.newClient({
      fundMinor: 1_000_000n,
      limits: [{ rail: 'PM', perPaymentMaxMinor: '100000', dailyMaxMinor: '1000000' }],
    });
    const me = await c.api.get('/v2/me');
    expect(me.body.payload.limitsConfigured).toBe(false);
    await expectFailed422(c, '100', CCE, 'limits_not_configured');
    expect((await pay(c, '100', PM)).status).toBe(201);
    const none = await server.newClient({ fundMinor: 1_000_000n, limits: null });
    await expectFailed422(none, '100', PM, 'limits_not_configured');
  });
});

describe('blocked by us', () => {
  it('a rail the deployment has not enabled fails rejected_by_us, 201, with no debit', async () => {
    const s = await startTestServer({ env: { DISPERSA_RAILS: 'PM' } });
    try {
      const c = await s.newClient({
        fundMinor: 1_000_000n,
        limits: [
          { rail: 'PM', perPaymentMaxMinor: '100000', dailyMaxMinor: '1000000' },
          { rail: 'CCE', perPaymentMaxMinor: '100000', dailyMaxMinor: '1000000' },
        ],
      });
      const res = await pay(c, '5000', CCE);
      expect(res.status).toBe(201);
      expect(res.body.payload).toMatchObject({
        state: 'failed',
        subStatus: 'rejected_by_us',
        failureCode: 'rail_not_enabled',
      });
      // The answer is what the database holds, to the field, and so is its event.
      expect((await c.api.get(`/v2/payments/${res.body.payload.id}`)).body.payload).toEqual(res.body.payload);
      await expectFailedAtOnceEvent(s.testDb.db, c, res.body.payload.id);
      expect(await balanceOf(c)).toBe(1_000_000n);
      const lines = await s.admin('GET', '/admin/v1/sandbox/bank/lines');
      expect(lines.body.payload.data.filter((l: any) => l.direction === 'debit')).toHaveLength(0);
    } finally {
      await s.stop();
    }
  });

  it('production without a bank gateway fails rejected_by_us with no debit, and reports simulado true', async () => {
    const s = await startTestServer({
      env: {
        DISPERSA_ENV: 'production',
        DISPERSA_ALLOW_EMBEDDED_IN_PRODUCTION: 'true',
        DISPERSA_MASTER_KEY: TEST_MASTER_KEY,
      },
    });
    try {
      const version: any = await (await fetch(`${s.baseUrl}/v2/version`)).json();
      expect(version.payload).toMatchObject({ environment: 'production', rails: ['PM'], simulado: true });
      const c = await s.newClient({ fundMinor: 1_000_000n });
      expect(c.apiKey.startsWith('sk_live_')).toBe(true);
      const res = await pay(c, '5000', PM);
      expect(res.status).toBe(201);
      expect(res.body.payload).toMatchObject({
        state: 'failed',
        subStatus: 'rejected_by_us',
        failureCode: 'rail_not_configured',
      });
      expect(await balanceOf(c)).toBe(1_000_000n);
      expect((await s.admin('GET', '/admin/v1/sandbox/bank/lines')).status).toBe(404);
    } finally {
      await s.stop();
    }
  });
});
