import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectLedgerSound } from '../support/ledger.ts';
import { OffsetClock } from '../support/offset-clock.ts';
import { balanceOf, expectFailedAtOnceEvent, newKey, PM, pay } from '../support/payments.ts';
import { startTestServer, type TestClient, type TestServer } from '../support/test-server.ts';

const clock = new OffsetClock();

/** Paying out VES from a USD balance: with a quote, or at the rate in force (operator contract, section 5). */

let server: TestServer;
let usd: TestClient;
const RATE = '36.123456789012'; // VES per USD, 12 decimals

beforeAll(async () => {
  server = await startTestServer({
    clock,
    env: { DISPERSA_QUOTE_TTL_SECONDS: '60', DISPERSA_UNKNOWN_BUDGET_SECONDS: '3600' },
  });
  usd = await server.newClient({ currency: 'USD', fundMinor: 1_000_000n }); // 10,000.00 USD
  const published = await server.admin('POST', '/admin/v1/rates', {
    base: 'USD',
    rate: RATE,
    clientId: usd.clientId,
    expiresAt: new Date(Date.now() + 3_600_000).toISOString(),
  });
  expect(published.status).toBe(201);
});
afterAll(async () => {
  await expectLedgerSound(server.testDb.db);
  await server.stop();
});

const quote = async (c: TestClient, amountType: 'SOURCE' | 'TARGET', amountMinor: string) => {
  const res = await c.api.post('/v2/quotes', { amountType, amountMinor }, { idempotencyKey: newKey('q') });
  expect(res.status).toBe(201);
  return res.body.payload as { quoteId: string; sourceAmountMinor: string; targetAmountMinor: string };
};

const payWithQuote = (c: TestClient, amountMinor: string, quoteId: string, key = newKey('pq')) =>
  c.api.post('/v2/payments', { amountMinor, currency: 'VES', quoteId, ...PM }, { idempotencyKey: key });

describe('with a quote', () => {
  it('debits exactly sourceAmountMinor and pays exactly targetAmountMinor; the quote is consumed', async () => {
    const q = await quote(usd, 'TARGET', '1500000'); // 15,000.00 VES
    // ceil(15000.00 / 36.123456789012) = 415.2463... USD → 41525 cents (rounded up).
    expect(q.sourceAmountMinor).toBe('41525');
    const before = await balanceOf(usd);
    const res = await payWithQuote(usd, '1500000', q.quoteId);
    expect(res.status).toBe(201);
    expect(res.body.payload).toMatchObject({
      state: 'completed',
      amountMinor: '1500000',
      currency: 'VES',
      sourceCurrency: 'USD',
      sourceAmountMinor: '41525',
      quoteId: q.quoteId,
    });
    expect(await balanceOf(usd)).toBe(before - 41525n);
    // Both legs are booked in their own currencies through the FX position accounts.
    const { rows } = await server.testDb.db.query<{ account_id: string; currency: string; amount_minor: string }>(
      `SELECT p.account_id, p.currency, p.amount_minor::text FROM postings p JOIN journal_entries e ON e.id = p.entry_id
       WHERE e.payment_id = $1 ORDER BY p.id`,
      [res.body.payload.id],
    );
    expect(rows).toEqual([
      { account_id: `client:${usd.clientId}:USD`, currency: 'USD', amount_minor: '41525' },
      { account_id: 'fx:USD', currency: 'USD', amount_minor: '-41525' },
      { account_id: 'fx:VES', currency: 'VES', amount_minor: '1500000' },
      { account_id: 'bank:VES', currency: 'VES', amount_minor: '-1500000' },
    ]);
    const reuse = await payWithQuote(usd, '1500000', q.quoteId);
    expect(reuse).toMatchObject({ status: 409, body: { error: 'quote already used' } });
  });

  it('a SOURCE quote fixes the debit; the replay of its payment answers 200', async () => {
    const q = await quote(usd, 'SOURCE', '10000'); // 100.00 USD → floor(3612.3456789012) VES = 361234
    expect(q.targetAmountMinor).toBe('361234');
    const key = newKey('src');
    const first = await payWithQuote(usd, '361234', q.quoteId, key);
    expect(first.body.payload.sourceAmountMinor).toBe('10000');
    const replay = await payWithQuote(usd, '361234', q.quoteId, key);
    expect(replay.status).toBe(200);
    expect(replay.body.payload.id).toBe(first.body.payload.id);
  });

  it("refuses without creating anything: amount other than the target 400, unknown or another client's quote 404", async () => {
    const q = await quote(usd, 'TARGET', '100000');
    const before = await balanceOf(usd);
    const wrong = await payWithQuote(usd, '100001', q.quoteId);
    expect(wrong.status).toBe(400);
    expect(wrong.body.error).toMatch(/targetAmountMinor/);
    expect((await payWithQuote(usd, '100000', 'quo_nope')).status).toBe(404);
    const other = await server.newClient({ currency: 'USD', fundMinor: 1_000_000n });
    expect((await payWithQuote(other, '100000', q.quoteId)).status).toBe(404);
    expect(await balanceOf(usd)).toBe(before);
    const { rows } = await server.testDb.db.query<{ n: string }>(
      'SELECT count(*)::text AS n FROM payments WHERE quote_id = $1',
      [q.quoteId],
    );
    expect(rows[0]!.n).toBe('0');
    // The quote is still usable.
    expect((await payWithQuote(usd, '100000', q.quoteId)).status).toBe(201);
  });

  it('an expired quote is 422 with a failed payment (quote_expired) and no money moved', async () => {
    const q = await quote(usd, 'TARGET', '100000');
    // Time passes on the injected clock: no sleep, and no quote expiring early elsewhere on a loaded machine.
    clock.advance(61_000);
    const before = await balanceOf(usd);
    const key = newKey('exp');
    const res = await payWithQuote(usd, '100000', q.quoteId, key);
    expect(res.status).toBe(422);
    expect(await balanceOf(usd)).toBe(before);
    const replay = await payWithQuote(usd, '100000', q.quoteId, key);
    expect(replay.status).toBe(200);
    expect(replay.body.payload).toMatchObject({ state: 'failed', failureCode: 'quote_expired' });
    expect(replay.body.payload.sourceAmountMinor).toBe(q.sourceAmountMinor);
    await expectFailedAtOnceEvent(server.testDb.db, usd, replay.body.payload.id);
  });

  it('a quote cited by two concurrent payments backs exactly one', async () => {
    const q = await quote(usd, 'TARGET', '200000');
    const second = await server.addKey(usd.clientId, 1);
    const answers = await Promise.all([
      payWithQuote(usd, '200000', q.quoteId),
      payWithQuote(second, '200000', q.quoteId),
    ]);
    const statuses = answers.map((a) => a.status).sort();
    expect(statuses).toEqual([201, 409]);
  });
});

describe('without a quote', () => {
  it('converts at the rate in force, rounding the debited source up', async () => {
    const before = await balanceOf(usd);
    const res = await pay(usd, '100000', PM); // 1,000.00 VES / 36.123456789012 = 27.683... → 2769 cents
    expect(res.status).toBe(201);
    expect(res.body.payload).toMatchObject({ state: 'completed', sourceCurrency: 'USD', sourceAmountMinor: '2769' });
    expect(await balanceOf(usd)).toBe(before - 2769n);
  });

  it('a failed payment restores the source balance exactly', async () => {
    const before = await balanceOf(usd);
    const res = await pay(usd, '100001', PM); // magic 01: declined
    expect(res.body.payload.state).toBe('failed');
    expect(await balanceOf(usd)).toBe(before);
  });

  it('503 with no rate in force, nothing created', async () => {
    const eur = await server.newClient({ currency: 'EUR', fundMinor: 1_000_000n });
    const res = await pay(eur, '100000', PM);
    expect(res).toMatchObject({ status: 503, body: { error: 'no rate in force for EUR/VES' } });
    expect(await balanceOf(eur)).toBe(1_000_000n);
  });

  it('insufficient source balance is a 422 like any other', async () => {
    const poor = await server.newClient({ currency: 'USD', fundMinor: 100n });
    await server.admin('POST', '/admin/v1/rates', {
      base: 'USD',
      rate: RATE,
      clientId: poor.clientId,
      expiresAt: new Date(Date.now() + 3_600_000).toISOString(),
    });
    const key = newKey('poor');
    const res = await pay(poor, '100000', PM, key);
    expect(res.status).toBe(422);
    expect(await balanceOf(poor)).toBe(100n);
    const failed = (await pay(poor, '100000', PM, key)).body.payload;
    expect(failed).toMatchObject({ state: 'failed', failureCode: 'insufficient_balance', sourceAmountMinor: '2769' });
    await expectFailedAtOnceEvent(server.testDb.db, poor, failed.id);
  });
});
