import type { Db } from '../db/db.ts';
import type { Rail } from '../rails/rail.ts';
import type { Clock } from '../shared/clock.ts';
import { statusOfOutcome } from './dispatch.ts';
import { transition } from './lifecycle.ts';

/**
 * Background follow-up of payments the request path could not finish:
 * - settlement: an interbank transfer left `pending` is re-queried on its rail until it settles or fails;
 * - interrupted dispatch: a payment still `processing` long after it was handed to the rail (the process died
 *   between dispatch and booking) becomes unknown/reconciling, its hold kept. It is never submitted again:
 *   reconciliation finishes it from the bank's evidence.
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
      await deps.db.tx((q) => transition(q, deps.clock, claimed.id, statusOfOutcome(status)));
    }
    return claimed.id;
  }

  async function recoverInterruptedNext(): Promise<string | undefined> {
    const cutoff = new Date(deps.clock.now().getTime() - deps.dispatchTimeoutMs);
    return deps.db.tx(async (q) => {
      const { rows } = await q.query<{ id: string }>(
        `SELECT id FROM payments WHERE state = 'processing' AND dispatched_at <= $1
         ORDER BY dispatched_at LIMIT 1 FOR UPDATE SKIP LOCKED`,
        [cutoff],
      );
      const row = rows[0];
      if (!row) return undefined;
      await transition(q, deps.clock, row.id, { state: 'unknown', subStatus: 'reconciling' });
      return row.id;
    });
  }

  return { settlePendingNext, recoverInterruptedNext };
}
