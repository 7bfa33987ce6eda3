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

export async function enqueueEvent(q: Queryable, event: NewEvent): Promise<QueuedEvent> {
  const [queued] = await enqueueEvents(q, [event]);
  return queued!;
}

/** Several events in one statement (a batch of payments); their order in the outbox is the order given. */
export async function enqueueEvents(q: Queryable, events: readonly NewEvent[]): Promise<QueuedEvent[]> {
  if (events.length === 0) return [];
  const queued = events.map(renderEvent);
  await q.query(
    `INSERT INTO events (id, client_id, type, test, payment_id, body, created_at, next_attempt_at)
     SELECT id, client_id, type, test, payment_id, body, created_at, created_at
     FROM unnest($1::text[], $2::text[], $3::text[], $4::boolean[], $5::text[], $6::text[], $7::timestamptz[])
       WITH ORDINALITY AS t(id, client_id, type, test, payment_id, body, created_at, n)
     ORDER BY n`,
    [
      queued.map((e) => e.id),
      events.map((e) => e.clientId),
      events.map((e) => e.type),
      events.map((e) => e.test),
      events.map((e) => e.paymentId),
      queued.map((e) => e.body),
      events.map((e) => e.createdAt.toISOString()),
    ],
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
