import type { Queryable } from '../db/db.ts';
import type { Clock } from '../shared/clock.ts';
import { enqueueEvents } from '../webhooks/outbox.ts';
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
  const [id] = await recordPaymentEvents(q, clock, [{ payment, previousState }]);
  return id!;
}

/** The events of a batch of state changes, in one statement, in the order given. */
export async function recordPaymentEvents(
  q: Queryable,
  clock: Clock,
  changes: readonly { payment: Payment; previousState: PaymentState | null }[],
): Promise<string[]> {
  const createdAt = clock.now();
  const queued = await enqueueEvents(
    q,
    changes.map(({ payment, previousState }) => {
      const data: PaymentStateChangedData = { payment: toPublicPayment(payment), previousState };
      return {
        clientId: payment.clientId,
        type: 'payment.state_changed' as const,
        test: false,
        paymentId: payment.id,
        createdAt,
        data,
      };
    }),
  );
  return queued.map((e) => e.id);
}
