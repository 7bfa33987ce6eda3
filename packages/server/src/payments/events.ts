import type { Queryable } from '../db/db.ts';
import type { Clock } from '../shared/clock.ts';
import { enqueueEvent, type NewEvent } from '../webhooks/outbox.ts';
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
  return (await enqueueEvent(q, paymentEvent(payment, previousState, clock.now()))).id;
}

/** The outbox event of a payment now in its state (rendered by the outbox, written by the caller's statement). */
export function paymentEvent(
  payment: Payment,
  previousState: PaymentState | null,
  createdAt: Date,
): NewEvent & { data: PaymentStateChangedData } {
  const data: PaymentStateChangedData = { payment: toPublicPayment(payment), previousState };
  return {
    clientId: payment.clientId,
    type: 'payment.state_changed',
    test: false,
    paymentId: payment.id,
    createdAt,
    data,
  };
}
