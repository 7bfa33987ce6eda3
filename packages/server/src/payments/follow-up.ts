import type { Db } from '../db/db.ts';
import type { Rail, RailOutcome } from '../rails/rail.ts';
import type { Clock } from '../shared/clock.ts';
import { bookBatch } from './book.ts';
import { statusOfOutcome, submitToRail } from './dispatch.ts';
import { transition } from './lifecycle.ts';
import { findPayment, type Payment } from './repository.ts';

/**
 * Background follow-up of payments the request path could not finish:
 * - settlement: an interbank transfer left `pending` is re-queried on its rail until it settles or fails;
 * - interrupted dispatch: a payment still `processing` long after it was reserved (the process died between
 *   reserving and booking) is finished: the rail is asked, and sent the payment if it never received it.
 * Each claims one payment with SKIP LOCKED and a lease (updated_at), then talks to the rail outside any
 * transaction.
 */
export interface FollowUpDeps {
  db: Db;
  clock: Clock;
  rail: Rail;
  /** How long a pending payment waits between two re-queries. */
  requeryAfterMs: number;
  /** How long a payment may stay `processing` after dispatch before it is presumed interrupted. */
  dispatchTimeoutMs: number;
  logger: { warn(obj: object, msg: string): void };
  /** Told each payment this worker moved, once committed (metrics). */
  onMoved?: (payment: Payment) => void;
}

export function createFollowUp(deps: FollowUpDeps) {
  async function settlePendingNext(): Promise<string | undefined> {
    const now = deps.clock.now();
    const claimed = await deps.db.tx(async (q) => {
      const { rows } = await q.query<{ id: string; rail_reference: string }>(
        `SELECT id, rail_reference FROM payments WHERE state = 'pending' AND updated_at <= $1
         ORDER BY updated_at LIMIT 1 FOR UPDATE SKIP LOCKED`,
        [new Date(now.getTime() - deps.requeryAfterMs)],
      );
      const row = rows[0];
      if (!row) return null;
      await q.query('UPDATE payments SET updated_at = $2 WHERE id = $1', [row.id, now]);
      return row;
    });
    if (claimed === null) return undefined;
    const status = await deps.rail.query(claimed.rail_reference);
    if (status.kind === 'completed' || status.kind === 'failed') {
      const result = await deps.db.tx((q) => transition(q, deps.clock, claimed.id, statusOfOutcome(status)));
      if (result.kind === 'moved') deps.onMoved?.(result.payment);
    }
    return claimed.id;
  }

  /**
   * A payment still processing long after it was reserved: the process that reserved it died before booking what
   * the rail said, perhaps before calling the rail at all. The rail is asked about the reference; one it never
   * received is sent now, with the same reference (every rail here deduplicates by reference, so a call that
   * did reach it cannot execute twice), and the answer is booked like the request path's. The claim is a lease
   * on dispatched_at, so two workers never recover one payment at once and a crash here is retried later.
   */
  async function recoverInterruptedNext(): Promise<string | undefined> {
    const now = deps.clock.now();
    const cutoff = new Date(now.getTime() - deps.dispatchTimeoutMs);
    const claimed = await deps.db.tx(async (q) => {
      const { rows } = await q.query<{ id: string }>(
        `SELECT id FROM payments WHERE state = 'processing' AND dispatched_at <= $1
         ORDER BY dispatched_at LIMIT 1 FOR UPDATE SKIP LOCKED`,
        [cutoff],
      );
      const row = rows[0];
      if (!row) return null;
      await q.query('UPDATE payments SET dispatched_at = $2 WHERE id = $1', [row.id, now]);
      return findPayment(q, row.id);
    });
    if (claimed === null) return undefined;
    const asked = await deps.rail.query(claimed.railReference);
    const outcome: RailOutcome =
      asked.kind === 'not_found' ? (await submitToRail(deps.rail, [claimed], deps.logger))[0]! : asked;
    const [booked] = await bookBatch(deps.db, deps.clock, [{ payment: claimed, outcome }]);
    if (booked?.moved) deps.onMoved?.(booked.payment);
    return claimed.id;
  }

  return { settlePendingNext, recoverInterruptedNext };
}
