import type { Queryable } from '../db/db.ts';
import type { Clock } from '../shared/clock.ts';
import { randomId } from '../shared/ids.ts';
import type { PaymentState, PaymentStateChangedData } from './model.ts';
import { type Payment, toPublicPayment } from './repository.ts';

/**
 * Writes the outbox row of a payment's state change, in the caller's transaction (spec, Events, rule 1).
 * The body is serialised once here; every delivery attempt sends (and signs) exactly these bytes.
 */
export async function recordPaymentEvent(
  q: Queryable,
  clock: Clock,
  payment: Payment,
  previousState: PaymentState | null,
): Promise<string> {
  const id = randomId('evt');
  const now = clock.now();
  const data: PaymentStateChangedData = { payment: toPublicPayment(payment), previousState };
  const body = JSON.stringify({
    id,
    type: 'payment.state_changed',
    test: false,
    createdAt: now.toISOString(),
    data,
  });
  await q.query(
    `INSERT INTO events (id, client_id, type, test, payment_id, body, created_at, next_attempt_at)
     VALUES ($1, $2, 'payment.state_changed', false, $3, $4, $5, $5)`,
    [id, payment.clientId, payment.id, body, now],
  );
  return id;
}
