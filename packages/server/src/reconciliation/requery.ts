import type { Db } from '../db/db.ts';
import { transition } from '../payments/lifecycle.ts';
import type { SubStatus } from '../payments/model.ts';
import type { Payment } from '../payments/repository.ts';
import type { Rail, RailStatus } from '../rails/rail.ts';
import type { Clock } from '../shared/clock.ts';
import { decideUnknown } from './unknown-decision.ts';

/**
 * Re-query of unknown payments: each payment in unknown (reconciling or at_rail) is asked about once per
 * interval. Claim (SKIP LOCKED, with a lease row so another process skips it until the next interval), ask the
 * rail outside any transaction, then book what the answer proves in one transaction (unknown-decision.ts).
 * A crash between the two only delays the payment by one interval: the lease expires and it is asked again.
 */
export interface RequeryDeps {
  db: Db;
  clock: Clock;
  rail: Rail;
  intervalMs: number;
  budgetMs: number;
  logger: { warn(obj: object, msg: string): void };
  /** Told of each payment a re-query moved, after its transaction committed (the transition counter). */
  onMoved?: (payment: Payment) => void;
}

export function createRequery(deps: RequeryDeps) {
  async function claim(): Promise<{ id: string; railReference: string } | null> {
    const now = deps.clock.now();
    return deps.db.tx(async (q) => {
      const { rows } = await q.query<{ id: string; rail_reference: string }>(
        `SELECT p.id, p.rail_reference FROM payments p
           LEFT JOIN recon_requery r ON r.payment_id = p.id
          WHERE p.state = 'unknown' AND p.sub_status IN ('reconciling', 'at_rail')
            AND (r.next_at IS NULL OR r.next_at <= $1)
          ORDER BY p.updated_at LIMIT 1
          FOR UPDATE OF p SKIP LOCKED`,
        [now],
      );
      const row = rows[0];
      if (row === undefined) return null;
      await q.query(
        `INSERT INTO recon_requery (payment_id, next_at, attempts) VALUES ($1, $2, 1)
         ON CONFLICT (payment_id) DO UPDATE SET next_at = EXCLUDED.next_at, attempts = recon_requery.attempts + 1`,
        [row.id, new Date(now.getTime() + deps.intervalMs)],
      );
      return { id: row.id, railReference: row.rail_reference };
    });
  }

  async function ask(railReference: string): Promise<RailStatus> {
    try {
      return await deps.rail.query(railReference);
    } catch (err) {
      // A rail that cannot answer proves nothing: the payment waits (and its budget keeps running).
      deps.logger.warn({ err, railReference }, 'rail re-query failed');
      return { kind: 'unknown', subStatus: 'reconciling', detail: 'rail re-query failed' };
    }
  }

  /** Re-queries one due payment; its id, or undefined when none is due. */
  async function requeryNext(): Promise<string | undefined> {
    const claimed = await claim();
    if (claimed === null) return undefined;
    const status = await ask(claimed.railReference);
    const moved = await deps.db.tx(async (q): Promise<Payment | null> => {
      const { rows } = await q.query<{ state: string; sub_status: SubStatus; unknown_since: Date | null }>(
        'SELECT state, sub_status, unknown_since FROM payments WHERE id = $1 FOR UPDATE',
        [claimed.id],
      );
      const now = deps.clock.now();
      await q.query(
        'UPDATE recon_requery SET last_status = $2, last_detail = $3, queried_at = $4 WHERE payment_id = $1',
        [claimed.id, status.kind, 'detail' in status ? (status.detail ?? null) : null, now],
      );
      const current = rows[0];
      // The statement may have finished it meanwhile: then there is nothing left to decide.
      if (current === undefined || current.state !== 'unknown') return null;
      const decision = decideUnknown({
        subStatus: current.sub_status,
        unknownSince: current.unknown_since,
        now,
        budgetMs: deps.budgetMs,
        rail: status,
      });
      if (decision.kind === 'wait') return null;
      const result = await transition(q, deps.clock, claimed.id, decision.to, { onlyFrom: ['unknown'] });
      if (decision.to.state !== 'unknown') {
        await q.query('DELETE FROM recon_requery WHERE payment_id = $1', [claimed.id]);
      }
      return result.kind === 'moved' ? result.payment : null;
    });
    if (moved !== null) deps.onMoved?.(moved);
    return claimed.id;
  }

  return { requeryNext };
}
