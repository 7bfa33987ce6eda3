import { type Db, type Queryable, statementRetrying } from '../db/db.ts';
import { prepared } from '../db/prepared.ts';
import type { RailOutcome } from '../rails/rail.ts';
import type { Clock } from '../shared/clock.ts';
import { renderEvent } from '../webhooks/outbox.ts';
import { statusOfOutcome } from './dispatch.ts';
import { paymentEvent } from './events.ts';
import type { PaymentState, SubStatus } from './model.ts';
import { findPaymentsByIds, type Payment } from './repository.ts';

/**
 * The booking phase of a batch: what the rail answered for each payment, moved out of processing by book_payments
 * (migrations 0013, 0025) with the ledger effect of lifecycle.ts and the event of each move: one statement, so one
 * round trip and one commit. On the payment path it shares that statement with the next batch's reserve
 * (advance.ts), unless the answer fails the payment (bookBatch, as the follow-up worker books). Only a processing
 * payment moves, and a moved payment's next state is known here, so its event is rendered before the call and
 * written by the function only if it moves. A payment no longer processing (booked by another path meanwhile) is
 * answered as it is.
 */

export const BOOK_SQL = prepared('SELECT payment_id, moved FROM book_payments($1::jsonb, $2::timestamptz)');

const EVENTFUL: readonly PaymentState[] = ['completed', 'failed', 'unknown'];

export interface Booked {
  payment: Payment;
  /** Whether this booking moved it (false: it had moved already). */
  moved: boolean;
}

/** Whether booking this answer gives the payment's hold back (a balance and usage row to lock: book_payments). */
export function failsPayment(outcome: RailOutcome): boolean {
  return statusOfOutcome(outcome).state === 'failed';
}

/** A batch of the rail's answers, each with the payment it moves. */
export type BookBatch = readonly { payment: Payment; outcome: RailOutcome }[];

/** What the database call of a booking takes: the moves as JSON (each with its event), and each row after it. */
export interface BookCall {
  json: string;
  at: Date;
  after: Payment[];
}

export function bookCall(clock: Clock, batch: BookBatch): BookCall {
  const at = clock.now();
  const items = batch.map(({ payment, outcome }) => {
    const to = statusOfOutcome(outcome);
    const move = { state: to.state, subStatus: to.subStatus, failureCode: to.failureCode ?? null };
    const after = afterMove(payment, move, at);
    const event = EVENTFUL.includes(after.state) ? renderEvent(paymentEvent(after, 'processing', at)) : null;
    return { item: { id: payment.id, ...move, event }, after };
  });
  return { json: JSON.stringify(items.map((i) => i.item)), at, after: items.map((i) => i.after) };
}

/** A row of book_payments. */
export interface BookRow {
  payment_id: string;
  moved: boolean;
}

/** Each payment as the booking left it, from the rows book_payments answered for the call. */
export async function bookAnswers(
  q: Queryable,
  batch: BookBatch,
  call: BookCall,
  rows: readonly BookRow[],
): Promise<Booked[]> {
  const moved = new Set(rows.filter((r) => r.moved).map((r) => r.payment_id));
  // Those another path moved first are read as they are now.
  const others = await findPaymentsByIds(
    q,
    batch.filter((b) => !moved.has(b.payment.id)).map((b) => b.payment.id),
  );
  return batch.map(({ payment }, i) => {
    if (moved.has(payment.id)) return { payment: call.after[i]!, moved: true };
    const current = others.get(payment.id);
    if (current === undefined) throw new Error(`payment ${payment.id} vanished during booking`);
    return { payment: current, moved: false };
  });
}

/** Books a batch on its own: one call of book_payments, so one round trip and one commit. */
export async function bookBatch(db: Db, clock: Clock, batch: BookBatch): Promise<Booked[]> {
  const call = bookCall(clock, batch);
  const { rows } = await statementRetrying<BookRow>(db, BOOK_SQL, [call.json, call.at]);
  return bookAnswers(db, batch, call, rows);
}

/** The row book_payments leaves after moving a processing payment (as paymentFromRow would read it). */
function afterMove(
  p: Payment,
  to: { state: PaymentState; subStatus: SubStatus; failureCode: string | null },
  at: Date,
): Payment {
  return {
    ...p,
    state: to.state,
    subStatus: to.subStatus,
    failureCode: to.state === 'failed' ? to.failureCode : null,
    unknownSince: to.state === 'unknown' ? at : null,
    updatedAt: at,
  };
}
