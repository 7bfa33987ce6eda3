import type { Db } from '../db/db.ts';
import type { RailOutcome } from '../rails/rail.ts';
import type { Clock } from '../shared/clock.ts';
import { statusOfOutcome } from './dispatch.ts';
import { recordPaymentEvents } from './events.ts';
import type { PaymentState, SubStatus } from './model.ts';
import { findPaymentsByIds, type Payment } from './repository.ts';

/**
 * The booking phase of a batch: what the rail answered for each payment, moved out of processing by one call of
 * book_payments (migration 0013) with the ledger effect of lifecycle.ts, and the events of the moves, in one
 * transaction. A payment no longer processing (booked by another path meanwhile) is answered as it is.
 */

const EVENTFUL: readonly PaymentState[] = ['completed', 'failed', 'unknown'];

export interface Booked {
  payment: Payment;
  /** Whether this booking moved it (false: it had moved already). */
  moved: boolean;
}

export async function bookBatch(
  db: Db,
  clock: Clock,
  batch: readonly { payment: Payment; outcome: RailOutcome }[],
): Promise<Booked[]> {
  const at = clock.now();
  const items = batch.map(({ payment, outcome }) => {
    const to = statusOfOutcome(outcome);
    return { id: payment.id, state: to.state, subStatus: to.subStatus, failureCode: to.failureCode ?? null };
  });
  return db.tx(async (q) => {
    const { rows } = await q.query<{ payment_id: string; moved: boolean; previous_state: PaymentState }>(
      'SELECT payment_id, moved, previous_state FROM book_payments($1::jsonb, $2::timestamptz)',
      [JSON.stringify(items), at],
    );
    const moved = new Set(rows.filter((r) => r.moved).map((r) => r.payment_id));
    // A payment this booking moved is known: what it was plus the move. Only the others are read back.
    const others = await findPaymentsByIds(
      q,
      batch.filter((b) => !moved.has(b.payment.id)).map((b) => b.payment.id),
    );
    const now = new Map<string, Payment>();
    batch.forEach(({ payment }, i) => {
      if (moved.has(payment.id)) now.set(payment.id, afterMove(payment, items[i]!, at));
      else if (others.has(payment.id)) now.set(payment.id, others.get(payment.id)!);
    });
    await recordPaymentEvents(
      q,
      clock,
      rows.flatMap((r) => {
        const p = now.get(r.payment_id)!;
        return r.moved && EVENTFUL.includes(p.state) ? [{ payment: p, previousState: r.previous_state }] : [];
      }),
    );
    return batch.map(({ payment }) => {
      const current = now.get(payment.id);
      if (current === undefined) throw new Error(`payment ${payment.id} vanished during booking`);
      return { payment: current, moved: moved.has(payment.id) };
    });
  });
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
