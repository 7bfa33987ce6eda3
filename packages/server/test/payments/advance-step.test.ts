import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newKey, PM } from '../support/payments.ts';
import { withQuery } from '../support/test-db.ts';
import type { TestServer } from '../support/test-server.ts';
import { startWrappedServer } from '../support/wrapped-server.ts';

/**
 * On PostgreSQL reserve and booking share one statement (payments/advance.ts): the rail's answer for one payment
 * and a new payment that arrive while a step is in flight go into the next step together, one call and one
 * commit. On the embedded database each phase keeps its own batches, and the two are separate calls. The
 * database here holds the first payment at the rail and the second payment's step after its commit, so that the
 * first's answer and a third payment both wait for that step.
 */

const HOLD_LIMIT_MS = 4_000;
const FIRST = '10000';
const SECOND = '20000';
const THIRD = '30000';

let server: TestServer;
let close: () => Promise<void>;
let firstAtRail: (() => void) | null = null;
let releaseFirst: (() => void) | null = null;
let firstAnswered: (() => void) | null = null;
let secondHeld: (() => void) | null = null;
let releaseSecond: (() => void) | null = null;
/** Each step: the amounts it reserved and the payments it booked. */
const steps: { reserved: string[]; booked: string[] }[] = [];

function gate(set: (open: () => void) => void): Promise<void> {
  return new Promise((resolve) => {
    const limit = setTimeout(resolve, HOLD_LIMIT_MS);
    set(() => {
      clearTimeout(limit);
      resolve();
    });
  });
}

beforeAll(async () => {
  ({ server, close } = await startWrappedServer((inner) =>
    withQuery(inner, async (sql, params) => {
      const items = String(params?.[0]);
      const has = (amount: string) => items.includes(`"amountMinor":"${amount}"`);
      if (sql.includes('sandbox_submit_transfers(') && has(FIRST)) {
        firstAtRail?.();
        await gate((open) => (releaseFirst = open));
        const result = await inner.query(sql, params);
        firstAnswered?.();
        return result as never;
      }
      const joint = sql.includes('advance_payments(');
      const reserves = sql.includes('reserve_payments(');
      if (!joint && !reserves && !sql.includes('book_payments(')) return inner.query(sql, params);
      const amounts = (json: unknown) =>
        (JSON.parse(String(json)) as { amountMinor: string }[]).map((i) => i.amountMinor);
      const ids = (json: unknown) => (JSON.parse(String(json)) as { id: string }[]).map((i) => i.id);
      steps.push({
        reserved: joint || reserves ? amounts(params![0]) : [],
        booked: joint ? ids(params![2]) : reserves ? [] : ids(params![0]),
      });
      const result = await inner.query(sql, params);
      if (has(SECOND)) {
        secondHeld?.();
        await gate((open) => (releaseSecond = open));
      }
      return result as never;
    }),
  ));
});
afterAll(() => close());

const signal = (set: (fn: () => void) => void) => new Promise<void>((resolve) => set(resolve));

describe('a step of the payment path', () => {
  it('books the answers and reserves the payments that arrived while the previous step ran, in one call', async () => {
    const client = await server.newClient({ fundMinor: 1_000_000n });
    const second = await server.addKey(client.clientId, 4);
    const third = await server.addKey(client.clientId, 5);
    const pay = (c: typeof client, amountMinor: string) =>
      c.api.post('/v2/payments', { currency: 'VES', amountMinor, ...PM }, { idempotencyKey: newKey('step') });

    const atRail = signal((fn) => (firstAtRail = fn));
    const one = pay(client, FIRST);
    await atRail;
    const held = signal((fn) => (secondHeld = fn));
    const two = pay(second, SECOND);
    await held;
    // The second payment's step is in flight: the first payment's answer queues behind it, and so does a third.
    const answered = signal((fn) => (firstAnswered = fn));
    releaseFirst!();
    await answered;
    const three = pay(third, THIRD);
    await new Promise((r) => setTimeout(r, 300));
    releaseSecond!();
    const answers = await Promise.all([one, two, three]);

    for (const a of answers) {
      expect(a.status).toBe(201);
      expect(a.body.payload.state).toBe('completed');
    }
    const firstId = answers[0].body.payload.id as string;
    // On the embedded database each phase keeps batches of its own (payments/pipeline.ts says why).
    const joint = server.testDb.db.kind === 'postgres';
    expect(steps.filter((s) => s.booked.includes(firstId))).toEqual([
      { reserved: joint ? [THIRD] : [], booked: [firstId] },
    ]);
    expect(steps.filter((s) => s.reserved.includes(THIRD))).toEqual([
      { reserved: [THIRD], booked: joint ? [firstId] : [] },
    ]);
  });

  it('is refused an answer that fails a payment: that booking gives a hold back, outside the step', async () => {
    await expect(
      server.testDb.db.query('SELECT * FROM advance_payments($1::jsonb, $2::timestamptz, $3::jsonb, $4::timestamptz)', [
        '[]',
        new Date(),
        JSON.stringify([{ id: 'pay_0000000000000001', state: 'failed', subStatus: 'rejected_by_bank' }]),
        new Date(),
      ]),
    ).rejects.toThrow('a failed payment is booked by book_payments on its own');
  });
});
