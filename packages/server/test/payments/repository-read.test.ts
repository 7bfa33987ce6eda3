import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findPayment, findPaymentsByIds } from '../../src/payments/repository.ts';
import { CCE, paymentsOfEachOutcome } from '../support/payments.ts';
import { startTestServer, type TestServer } from '../support/test-server.ts';

/**
 * The batched read (signed GETs, replays) decodes one JSON text per payment; the single read decodes columns.
 * Both must give the same payment, field for field, whatever is null and however large a 64-bit amount.
 */

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ env: { DISPERSA_RECONCILE_INTERVAL_MS: '3600000' } });
});
afterAll(async () => {
  await server.stop();
});

describe('findPaymentsByIds', () => {
  it('reads exactly what findPayment reads', async () => {
    const c = await server.newClient({ fundMinor: 10_000_000_000n });
    const ids = await paymentsOfEachOutcome(c, 'read');
    const { db } = server.testDb;
    // Beyond 2^53, where a JSON number would round.
    await db.query('UPDATE payments SET amount_minor = 9007199254740993 WHERE id = $1', [ids[0]]);

    const batched = await findPaymentsByIds(db, [...ids, 'pay_9999999999999999']);
    expect([...batched.keys()].sort()).toEqual([...ids].sort());
    for (const id of ids) expect(batched.get(id)).toEqual(await findPayment(db, id));
    expect(batched.get(ids[0]!)!.amountMinor).toBe(9007199254740993n);
    expect(batched.get(ids[2]!)!.unknownSince).toBeInstanceOf(Date);
    expect(batched.get(ids[3]!)!.beneficiaryName).toBe(CCE.beneficiaryName);
  });
});
