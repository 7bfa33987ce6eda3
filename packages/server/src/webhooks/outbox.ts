import type { Queryable } from '../db/db.ts';
import type { PaymentStateChangedData } from '../payments/model.ts';
import { randomId } from '../shared/ids.ts';

/**
 * Writing events into the transactional outbox (table events). The caller passes its own transaction, so
 * a state change and its event commit together or not at all; the delivery worker does the rest. The
 * body is serialised once here and those exact bytes are signed and sent on every attempt.
 */

export type EventType = 'payment.state_changed';

export interface NewEvent {
  clientId: string;
  type: EventType;
  test: boolean;
  /** The payment whose events must arrive in order; null for events of no payment. */
  paymentId: string | null;
  data: unknown;
  createdAt: Date;
}

export interface QueuedEvent {
  id: string;
  body: string;
}

/** Member order id, type, test, createdAt, data (operator contract section 7), the same in every event. */
export function eventBody(id: string, type: string, test: boolean, createdAt: Date, data: unknown): string {
  return JSON.stringify({ id, type, test, createdAt: createdAt.toISOString(), data });
}

/** An event's id and the exact bytes every delivery of it sends. */
export function renderEvent(e: NewEvent): QueuedEvent {
  const id = randomId('evt');
  return { id, body: eventBody(id, e.type, e.test, e.createdAt, e.data) };
}

/**
 * Writes one event in the caller's transaction. (The payment path's batches write theirs inside their own
 * statements, from bodies rendered by renderEvent.) An event of a client with no webhook URL at that moment is
 * written settled, no_webhook with no attempt, as the payment path's statements write theirs (migration 0035):
 * such an event is never kept for a URL set later (docs/webhooks.md), so every path settles it alike instead of
 * leaving some for the worker's claim to settle a moment later.
 */
export async function enqueueEvent(q: Queryable, event: NewEvent): Promise<QueuedEvent> {
  const queued = renderEvent(event);
  await q.query(
    `INSERT INTO events (id, client_id, type, test, payment_id, body, created_at, next_attempt_at, delivery_status,
       last_error)
     SELECT $1, $2, $3, $4, $5, $6, $7, $7, CASE WHEN w.url IS NULL THEN 'no_webhook' ELSE 'pending' END,
       CASE WHEN w.url IS NULL THEN 'no webhook URL' END
     FROM (SELECT (SELECT url FROM webhook_configs WHERE client_id = $2) AS url) w`,
    [queued.id, event.clientId, event.type, event.test, event.paymentId, queued.body, event.createdAt],
  );
  return queued;
}

/**
 * The test event of POST /v2/webhook/test: a completed PM payment that never existed, in the exact shape
 * of a real one, so a receiver exercises its real code path; test: true tells it not to act on it.
 */
export function syntheticPaymentChange(at: Date): PaymentStateChangedData {
  const id = randomId('pay');
  const time = at.toISOString();
  return {
    payment: {
      intentId: id,
      id,
      state: 'completed',
      subStatus: null,
      amountMinor: '150000',
      currency: 'VES',
      rail: 'PM',
      beneficiary: '04141234567',
      createdAt: time,
      updatedAt: time,
      failureCode: null,
    },
    previousState: 'processing',
  };
}

export function enqueueTestEvent(q: Queryable, clientId: string, at: Date): Promise<QueuedEvent> {
  // No payment id: a test event never waits behind, nor holds back, the events of a real payment.
  return enqueueEvent(q, {
    clientId,
    type: 'payment.state_changed',
    test: true,
    paymentId: null,
    data: syntheticPaymentChange(at),
    createdAt: at,
  });
}
