import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newKey, PM } from '../support/payments.ts';
import { withQuery } from '../support/test-db.ts';
import type { TestServer } from '../support/test-server.ts';
import { startWrappedServer } from '../support/wrapped-server.ts';

/**
 * The payment phases overlap (payments/pipeline.ts): while one batch is being booked, the next one is already at
 * the rail. The database here holds the first booking statement until the rail is handed another batch, so the
 * second payment must reach the rail while the first is still being booked; were it to wait for that booking, the
 * hold would end only by its time limit, and the test says so.
 */

const HOLD_LIMIT_MS = 4_000;

let server: TestServer;
let close: () => Promise<void>;
/** The booking being held, once the next one is armed. */
let hold: { release(): void } | null = null;
let armed: (() => void) | null = null;
let submitsWhileHeld = 0;

beforeAll(async () => {
  ({ server, close } = await startWrappedServer((inner) =>
    withQuery(inner, async (sql, params) => {
      if (sql.includes('sandbox_submit_transfers(') && hold !== null) {
        submitsWhileHeld++;
        hold.release();
      }
      if (armed !== null && sql.includes('book_payments(')) {
        const onHeld = armed;
        armed = null;
        await new Promise<void>((resolve) => {
          const limit = setTimeout(resolve, HOLD_LIMIT_MS);
          hold = {
            release() {
              clearTimeout(limit);
              resolve();
            },
          };
          onHeld();
        });
        hold = null;
      }
      return inner.query(sql, params);
    }),
  ));
});
afterAll(() => close());

describe('the payment phases', () => {
  it('hand the next batch to the rail while the previous one is being booked', async () => {
    const client = await server.newClient({ fundMinor: 1_000_000n });
    const otherKey = await server.addKey(client.clientId, 4);
    const pay = (c: typeof client, amountMinor: string) =>
      c.api.post('/v2/payments', { currency: 'VES', amountMinor, ...PM }, { idempotencyKey: newKey('overlap') });

    const held = new Promise<void>((resolve) => {
      armed = resolve;
    });
    const first = pay(client, '10000');
    await held;
    const startedAt = Date.now();
    const second = pay(otherKey, '20000');
    const answers = await Promise.all([first, second]);

    expect(submitsWhileHeld, 'the second payment reached the rail while the first was being booked').toBe(1);
    expect(Date.now() - startedAt).toBeLessThan(HOLD_LIMIT_MS);
    for (const answer of answers) {
      expect(answer.status).toBe(201);
      expect(answer.body.payload.state).toBe('completed');
    }
  });
});
