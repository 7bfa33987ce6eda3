import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type PaymentView, paymentViewFromJson } from '../../src/payments/public-view.ts';
import { findPaymentsByIds, paymentFromJson, toPublicPayment } from '../../src/payments/repository.ts';
import { paymentsOfEachOutcome } from '../support/payments.ts';
import { startTestServer, type TestServer } from '../support/test-server.ts';

/**
 * The signed GET reads a payment's public view straight from payments_public_json (migration 0041); every other
 * answer about a payment goes through the whole row and toPublicPayment. Both must show the same thing, field for
 * field, whichever optional fields a payment has and whatever its timestamps' fractions.
 */

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ env: { DISPERSA_RECONCILE_INTERVAL_MS: '3600000' } });
});
afterAll(async () => {
  await server.stop();
});

async function views(ids: string[]): Promise<Map<string, PaymentView>> {
  const { rows } = await server.testDb.db.query<{ j: string }>('SELECT j FROM payments_public_json($1::text[]) AS j', [
    ids,
  ]);
  return new Map(rows.map((r) => paymentViewFromJson(r.j)).map((v) => [v.payment.id, v]));
}

describe('payments_public_json and paymentViewFromJson', () => {
  it('show what toPublicPayment shows of the whole row, and the owning client', async () => {
    const c = await server.newClient({ fundMinor: 10_000_000_000n });
    // Completed PM, failed at the bank, unknown, interbank pending, refused (failed at once with its code).
    const ids = await paymentsOfEachOutcome(c, 'view');
    const { db } = server.testDb;
    // The optional fields and timestamps no sandbox flow writes: another balance currency, a beneficiary and a
    // quote, a 64-bit amount beyond 2^53, whole seconds and microseconds.
    await db.query(
      `UPDATE payments SET source_currency = 'USD', source_amount_minor = 9007199254740993, quote_id = 'quote_x',
         created_at = '2026-01-02 03:04:05+00', updated_at = '2026-01-02 03:04:05.123456+00' WHERE id = $1`,
      [ids[0]],
    );
    await db.query(
      `UPDATE payments SET beneficiary_id = 'ben_x', amount_minor = 9007199254740995,
         updated_at = '2026-01-02 03:04:05.1+00' WHERE id = $1`,
      [ids[1]],
    );

    const read = await views([...ids, 'pay_9999999999999999']);
    const whole = await findPaymentsByIds(db, ids);
    expect([...read.keys()].sort()).toEqual([...ids].sort());
    for (const id of ids) {
      expect(read.get(id)).toEqual({ clientId: c.clientId, payment: toPublicPayment(whole.get(id)!) });
    }
    expect(read.get(ids[0]!)!.payment).toMatchObject({
      sourceCurrency: 'USD',
      sourceAmountMinor: '9007199254740993',
      quoteId: 'quote_x',
      createdAt: '2026-01-02T03:04:05.000Z',
      updatedAt: '2026-01-02T03:04:05.123Z',
    });
    expect(read.get(ids[1]!)!.payment).toMatchObject({ beneficiaryId: 'ben_x', amountMinor: '9007199254740995' });
    expect(read.get(ids[4]!)!.payment).toMatchObject({ state: 'failed', failureCode: 'limit_exceeded' });
  });

  it('leave the read of the code before them as it was, for a process not yet replaced', async () => {
    const c = await server.newClient({ fundMinor: 10_000_000_000n });
    const ids = await paymentsOfEachOutcome(c, 'old');
    const { db } = server.testDb;
    // 0029's read, as that code calls it: no nonce, every id; each payment's whole row.
    const { rows } = await db.query<{ pos: number | null; payment: string | null }>(
      'SELECT pos, verdict, payment FROM read_payments_signed($1::text[], $2::numeric[], $3::boolean[], $4::text[])',
      [[], [], [], ids],
    );
    const whole = await findPaymentsByIds(db, ids);
    expect(rows).toHaveLength(ids.length);
    for (const row of rows) {
      const payment = paymentFromJson(row.payment!);
      expect(payment).toEqual(whole.get(payment.id));
    }
  });
});
