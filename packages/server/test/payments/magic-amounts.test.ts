import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { expectLedgerSound } from '../support/ledger.ts';
import { balanceOf, CCE, CCE_SAME_BANK, PM, pay, waitForPayment } from '../support/payments.ts';
import { startTestServer, type TestClient, type TestServer } from '../support/test-server.ts';

let server: TestServer;
let c: TestClient;
const FUND = 100_000_000n;

beforeAll(async () => {
  server = await startTestServer({
    // Reconciliation finishes the unknown ones (its own tests); here the long interval keeps them unknown.
    env: {
      DISPERSA_SANDBOX_SETTLE_MS: '300',
      DISPERSA_RECONCILE_INTERVAL_MS: '100',
      DISPERSA_UNKNOWN_BUDGET_SECONDS: '3600',
    },
  });
});
// A client per test: reconciliation finishes earlier unknown payments in the background, which would move a shared
// client's balance between a test's two readings.
beforeEach(async () => {
  c = await server.newClient({ fundMinor: FUND });
});
afterAll(async () => {
  await expectLedgerSound(server.testDb.db);
  await server.stop();
});

async function debitLinesOf(paymentId: string) {
  const lines = await server.admin('GET', '/admin/v1/sandbox/bank/lines');
  return lines.body.payload.data.filter((l: any) => l.paymentId === paymentId);
}

interface Expectation {
  state: string;
  subStatus: string | null;
  failureCode?: string | null;
  /** The client's available balance drops by the amount (held or debited). */
  holdsMoney: boolean;
}

const both: [string, string, Expectation][] = [
  [
    '01',
    'insufficient funds of the paying account',
    { state: 'failed', subStatus: 'declined', failureCode: 'insufficient_funds', holdsMoney: false },
  ],
  ['02', 'no answer', { state: 'unknown', subStatus: 'reconciling', holdsMoney: true }],
  ['03', 'no answer but money moved', { state: 'unknown', subStatus: 'reconciling', holdsMoney: true }],
  ['04', 'duplicate report', { state: 'unknown', subStatus: 'reconciling', holdsMoney: true }],
  [
    '05',
    'restricted beneficiary',
    { state: 'failed', subStatus: 'wrong_beneficiary', failureCode: 'restricted_beneficiary', holdsMoney: false },
  ],
  [
    '09',
    'amount over the permitted limit',
    { state: 'failed', subStatus: 'declined', failureCode: 'limit_exceeded', holdsMoney: false },
  ],
];

describe.each([
  ['PM', PM],
  ['CCE', CCE_SAME_BANK],
])('magic amounts on %s', (rail, destination) => {
  for (const [ending, what, exp] of both) {
    it(`${ending}: ${what}`, async () => {
      const amount = `1234${ending}`;
      const before = await balanceOf(c);
      const res = await pay(c, amount, destination);
      expect(res.status).toBe(201);
      expect(res.body.payload).toMatchObject({ state: exp.state, subStatus: exp.subStatus, rail, amountMinor: amount });
      if (exp.failureCode !== undefined) expect(res.body.payload.failureCode).toBe(exp.failureCode);
      expect(await balanceOf(c)).toBe(exp.holdsMoney ? before - BigInt(amount) : before);
    });
  }

  it('any other ending completes and debits once', async () => {
    const before = await balanceOf(c);
    const res = await pay(c, '123400', destination);
    expect(res.status).toBe(201);
    expect(res.body.payload).toMatchObject({ state: 'completed', subStatus: null, failureCode: null });
    expect(await balanceOf(c)).toBe(before - 123400n);
    const lines = await debitLinesOf(res.body.payload.id);
    expect(lines.filter((l: any) => l.direction === 'debit')).toHaveLength(1);
  });
});

describe('CCE-only endings', () => {
  it('06 on CCE: unknown at_rail, money held', async () => {
    const before = await balanceOf(c);
    const res = await pay(c, '765406', CCE);
    expect(res.body.payload).toMatchObject({ state: 'unknown', subStatus: 'at_rail' });
    expect(await balanceOf(c)).toBe(before - 765406n);
  });

  it('07 on CCE: unknown at_rail first', async () => {
    const res = await pay(c, '765407', CCE);
    expect(res.body.payload).toMatchObject({ state: 'unknown', subStatus: 'at_rail' });
  });

  it('06 and 07 on PM settle normally', async () => {
    for (const amount of ['765406', '765407']) {
      const res = await pay(c, amount, PM);
      expect(res.body.payload).toMatchObject({ state: 'completed', subStatus: null });
    }
  });
});

describe('interbank transfers and malformed destinations', () => {
  it('CCE to another bank stays pending until settlement, then completes (debited once)', async () => {
    const before = await balanceOf(c);
    const res = await pay(c, '500000', CCE);
    expect(res.status).toBe(201);
    expect(res.body.payload).toMatchObject({ state: 'pending', subStatus: null });
    expect(await balanceOf(c)).toBe(before - 500000n);
    const done = await waitForPayment(c, res.body.payload.id, (p) => p.state === 'completed');
    expect(done.subStatus).toBeNull();
    expect(await balanceOf(c)).toBe(before - 500000n);
    const lines = await debitLinesOf(res.body.payload.id);
    expect(lines.filter((l: any) => l.direction === 'debit')).toHaveLength(1);
    const { rows } = await server.testDb.db.query<{ previous: string; state: string }>(
      `SELECT body::json->'data'->>'previousState' AS previous, body::json->'data'->'payment'->>'state' AS state
       FROM events WHERE payment_id = $1 ORDER BY seq`,
      [res.body.payload.id],
    );
    expect(rows).toEqual([{ previous: 'pending', state: 'completed' }]);
  });

  it('a malformed PM phone is rejected by the rail: failed invalid_phone_number, no debit', async () => {
    const before = await balanceOf(c);
    const res = await pay(c, '150000', { ...PM, beneficiary: '4141234567' });
    expect(res.status).toBe(201);
    expect(res.body.payload).toMatchObject({
      state: 'failed',
      subStatus: 'wrong_beneficiary',
      failureCode: 'invalid_phone_number',
    });
    expect(await balanceOf(c)).toBe(before);
  });

  it('a malformed CCE account is rejected by the rail, not by the service', async () => {
    const res = await pay(c, '150000', { ...CCE, beneficiary: '0105123' });
    expect(res.status).toBe(201);
    expect(res.body.payload).toMatchObject({ state: 'failed', subStatus: 'wrong_beneficiary' });
  });

  it('GET returns the latest state; another client gets 404', async () => {
    const res = await pay(c, '1000', PM);
    const read = await c.api.get(`/v2/payments/${res.body.payload.id}`);
    expect(read.status).toBe(200);
    expect(read.body.payload).toEqual(res.body.payload);
    const other = await server.newClient();
    expect(await other.api.get(`/v2/payments/${res.body.payload.id}`)).toMatchObject({
      status: 404,
      body: { error: 'payment not found' },
    });
    expect((await c.api.get('/v2/payments/pay_nope')).status).toBe(404);
  });

  it('the rail reference is generated by the service, unique, never the idempotency key', async () => {
    const { rows } = await server.testDb.db.query<{ rail_reference: string; idempotency_key: string }>(
      'SELECT rail_reference, idempotency_key FROM payments',
    );
    expect(new Set(rows.map((r) => r.rail_reference)).size).toBe(rows.length);
    for (const r of rows) expect(r.rail_reference).not.toContain(r.idempotency_key);
  });
});
