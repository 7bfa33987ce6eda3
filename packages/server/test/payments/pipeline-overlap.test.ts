import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newKey, PM } from '../support/payments.ts';
import { withQuery } from '../support/test-db.ts';
import type { TestServer } from '../support/test-server.ts';
import { startWrappedServer } from '../support/wrapped-server.ts';

/**
 * The payment phases overlap (payments/pipeline.ts): while the rail has one batch, the next is reserved, and while
 * that first batch is being booked, the next one is already at the rail. The database here holds the first
 * payment at the rail until the second is reserved, then holds the first payment's booking until the rail is
 * handed the second; were either to wait for the other, a hold would end only by its time limit, and the test
 * says so.
 */

const HOLD_LIMIT_MS = 4_000;
const FIRST = '10000';
const SECOND = '20000';

let server: TestServer;
let close: () => Promise<void>;
let reservedSecond = false;
let submittedSecond = false;
let onSecondReserved: (() => void) | null = null;
let onSecondSubmitted: (() => void) | null = null;
let firstAtRail = false;
let firstBooked = false;

/** Waits for wake() or the time limit; says which came. */
function hold(register: (wake: () => void) => void): Promise<'woken' | 'timed out'> {
  return new Promise((resolve) => {
    const limit = setTimeout(() => resolve('timed out'), HOLD_LIMIT_MS);
    register(() => {
      clearTimeout(limit);
      resolve('woken');
    });
  });
}

/** What happened, in order: each hold with how it ended, the second's submission, the first's booking. */
const holds: string[] = [];

beforeAll(async () => {
  ({ server, close } = await startWrappedServer((inner) =>
    withQuery(inner, async (sql, params) => {
      const items = String(params?.[0]);
      if (sql.includes('sandbox_submit_transfers(') && items.includes(`"amountMinor":"${SECOND}"`)) {
        submittedSecond = true;
        holds.push('second at the rail');
        onSecondSubmitted?.();
      }
      if (sql.includes('sandbox_submit_transfers(') && items.includes(`"amountMinor":"${FIRST}"`)) {
        firstAtRail = true;
        if (!reservedSecond) holds.push(`rail: ${await hold((wake) => (onSecondReserved = wake))}`);
      }
      // The first step to book after the first payment reached the rail books it (the second is not there yet).
      const books =
        sql.includes('book_payments(') ||
        (sql.includes('advance_payments(') && (JSON.parse(String(params![2])) as unknown[]).length > 0);
      const booksFirst = books && firstAtRail && !firstBooked;
      if (booksFirst) firstBooked = true;
      if (booksFirst && !submittedSecond) holds.push(`booking: ${await hold((wake) => (onSecondSubmitted = wake))}`);
      const result = await inner.query(sql, params);
      if (booksFirst) holds.push('first booked');
      const reserves = sql.includes('reserve_payments(') || sql.includes('advance_payments(');
      if (reserves && items.includes(`"amountMinor":"${SECOND}"`)) {
        reservedSecond = true;
        onSecondReserved?.();
      }
      return result as never;
    }),
  ));
});
afterAll(() => close());

describe('the payment phases', () => {
  it('reserve the next batch while the rail has one, and hand it to the rail while the first is being booked', async () => {
    const client = await server.newClient({ fundMinor: 1_000_000n });
    const otherKey = await server.addKey(client.clientId, 4);
    const pay = (c: typeof client, amountMinor: string) =>
      c.api.post('/v2/payments', { currency: 'VES', amountMinor, ...PM }, { idempotencyKey: newKey('overlap') });

    const first = pay(client, FIRST);
    while (!firstAtRail) await new Promise((r) => setTimeout(r, 10));
    const startedAt = Date.now();
    const second = pay(otherKey, SECOND);
    const answers = await Promise.all([first, second]);

    // Neither waited for its time limit, and the second reached the rail before the first's booking was done.
    expect(holds.filter((h) => h.endsWith('timed out'))).toEqual([]);
    expect(holds.filter((h) => !h.endsWith('woken'))).toEqual(['second at the rail', 'first booked']);
    expect(Date.now() - startedAt).toBeLessThan(HOLD_LIMIT_MS);
    for (const answer of answers) {
      expect(answer.status).toBe(201);
      expect(answer.body.payload.state).toBe('completed');
    }
  });
});
