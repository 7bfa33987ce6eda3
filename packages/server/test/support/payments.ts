import { expect } from 'vitest';
import type { Answer } from './signed-client.ts';
import type { TestClient } from './test-server.ts';

let counter = 0;
export const newKey = (prefix = 'k'): string => `${prefix}-${Date.now().toString(36)}-${++counter}`;

export const PM = { rail: 'PM', beneficiary: '04141234567', bankCode: '0102', docType: 'V', docNumber: '12345678' };
export const CCE = {
  rail: 'CCE',
  beneficiary: '01050000000000000001',
  bankCode: '0105',
  docType: 'J',
  docNumber: '123456789',
  beneficiaryName: 'Inversiones Ejemplo CA',
};
/** A CCE account at the sandbox bank itself (0102): settles at once. */
export const CCE_SAME_BANK = { ...CCE, beneficiary: '01020000000000000001', bankCode: '0102' };

export function pay(
  c: TestClient,
  amountMinor: string,
  destination: Record<string, unknown> = PM,
  key = newKey(),
): Promise<Answer> {
  return c.api.post('/v2/payments', { amountMinor, currency: 'VES', ...destination }, { idempotencyKey: key });
}

export async function balanceOf(c: TestClient): Promise<bigint> {
  const res = await c.api.get('/v2/balance');
  if (res.status !== 200) throw new Error(`balance: ${res.status}`);
  return BigInt(res.body.payload.availableMinor);
}

/** Polls a payment until the predicate holds (bounded). */
export async function waitForPayment(
  c: TestClient,
  id: string,
  until: (p: any) => boolean,
  timeoutMs = 30_000,
): Promise<any> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const res = await c.api.get(`/v2/payments/${id}`);
    if (until(res.body.payload)) return res.body.payload;
    if (Date.now() > deadline)
      throw new Error(`payment ${id} never reached the expected state: ${JSON.stringify(res.body)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * The one event of a payment that failed at once: its members in the contract's order, and its data exactly
 * what a read of the payment shows (no placeholder of the reserve phase left in it).
 */
export async function expectFailedAtOnceEvent(
  db: { query<R>(sql: string, params?: readonly unknown[]): Promise<{ rows: R[] }> },
  c: TestClient,
  paymentId: string,
): Promise<void> {
  const { rows } = await db.query<{ body: string }>('SELECT body FROM events WHERE payment_id = $1 ORDER BY seq', [
    paymentId,
  ]);
  expect(rows).toHaveLength(1);
  const body = rows[0]!.body;
  expect(body).not.toContain('\\u0001');
  const event = JSON.parse(body) as Record<string, any>;
  expect(Object.keys(event)).toEqual(['id', 'type', 'test', 'createdAt', 'data']);
  const read = await c.api.get(`/v2/payments/${paymentId}`);
  expect(read.status).toBe(200);
  expect(event.data, body).toEqual({ payment: read.body.payload, previousState: null });
}

/**
 * One payment of each outcome the sandbox gives at once, in this order: completed PM, failed at the bank, unknown,
 * interbank pending (with a beneficiary name), and refused (failed at once, read through its key's replay, as a 422
 * names no payment). Their ids.
 */
export async function paymentsOfEachOutcome(c: TestClient, keyPrefix: string): Promise<string[]> {
  const ids: string[] = [];
  for (const [amount, destination] of [
    ['10000', PM],
    ['10001', PM],
    ['10002', PM],
    ['10000', CCE],
    ['999999999999', PM],
  ] as const) {
    const key = newKey(keyPrefix);
    const res = await pay(c, amount, destination, key);
    ids.push(res.status === 422 ? (await pay(c, amount, destination, key)).body.payload.id : res.body.payload.id);
  }
  return ids;
}
