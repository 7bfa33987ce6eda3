import type { Queryable } from '../db/db.ts';
import type { Clock } from '../shared/clock.ts';
import { enqueueEvent } from '../webhooks/outbox.ts';
import type { PaymentState, PaymentStateChangedData } from './model.ts';
import { type Payment, toPublicPayment } from './repository.ts';

/**
 * Writes the outbox row of a payment's state change, in the caller's transaction (spec, Events, rule 1). The
 * outbox owns the event format; every delivery attempt sends (and signs) exactly the bytes written here.
 */
export async function recordPaymentEvent(
  q: Queryable,
  clock: Clock,
  payment: Payment,
  previousState: PaymentState | null,
): Promise<string> {
  const data: PaymentStateChangedData = { payment: toPublicPayment(payment), previousState };
  const { id } = await enqueueEvent(q, {
    clientId: payment.clientId,
    type: 'payment.state_changed',
    test: false,
    paymentId: payment.id,
    createdAt: clock.now(),
    data,
  });
  return id;
}
