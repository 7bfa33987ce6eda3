import type { Db } from '../db/db.ts';
import type { Clock } from '../shared/clock.ts';
import { isoTime, minorFromDb } from '../shared/money.ts';
import { insertLineExceptions, openMissingDebit } from './exceptions.ts';

/**
 * The checks of evidence that did not come in time, each an exception for a person and no balance touched:
 * - a completed payout whose real debit is still not matched after the grace period → missing_debit (the watch
 *   row stays, flagged, so the balance check still knows the ledger holds a debit the bank does not show; a late
 *   debit resolves the exception itself);
 * - a debit of a failed payment whose return did not come within the grace period → orphan_debit.
 * Rows are claimed with their payment locked, SKIP LOCKED: a statement batch deciding the same payment holds that
 * lock, so the two never decide the same payment at once, and several processes share the work.
 */
export interface WatchDeps {
  db: Db;
  clock: Clock;
  graceMs: number;
  /** Most rows decided per transaction. */
  batchSize?: number;
}

export function createWatch(deps: WatchDeps) {
  const batchSize = deps.batchSize ?? 100;

  async function missingDebits(): Promise<number> {
    const now = deps.clock.now();
    const cutoff = new Date(now.getTime() - deps.graceMs);
    return deps.db.tx(async (q) => {
      const { rows } = await q.query<{
        payment_id: string;
        currency: string;
        amount_minor: string;
        completed_at: Date;
        rail_reference: string;
        debited: boolean;
      }>(
        `SELECT w.payment_id, w.currency, w.amount_minor, w.completed_at, p.rail_reference,
                EXISTS (SELECT 1 FROM recon_lines l WHERE l.payment_id = w.payment_id AND l.match_kind = 'payout') AS debited
           FROM recon_debit_watch w JOIN payments p ON p.id = w.payment_id
          WHERE NOT w.flagged AND w.completed_at <= $1
          ORDER BY w.completed_at LIMIT $2
          FOR UPDATE OF w, p SKIP LOCKED`,
        [cutoff, batchSize],
      );
      for (const r of rows) {
        if (r.debited) {
          await q.query('DELETE FROM recon_debit_watch WHERE payment_id = $1', [r.payment_id]);
          continue;
        }
        await q.query('UPDATE recon_debit_watch SET flagged = true WHERE payment_id = $1', [r.payment_id]);
        await openMissingDebit(
          q,
          {
            paymentId: r.payment_id,
            currency: r.currency.trim(),
            amountMinor: minorFromDb(r.amount_minor),
            details: {
              reason: 'no_debit_within_grace',
              railReference: r.rail_reference,
              completedAt: isoTime(r.completed_at),
              graceSeconds: deps.graceMs / 1000,
            },
          },
          now,
        );
      }
      return rows.length;
    });
  }

  async function unreturnedDebits(): Promise<number> {
    const now = deps.clock.now();
    const cutoff = new Date(now.getTime() - deps.graceMs);
    return deps.db.tx(async (q) => {
      const { rows } = await q.query<{
        bank_line_id: string;
        payment_id: string;
        currency: string;
        amount_minor: string;
        reference: string;
      }>(
        `SELECT l.bank_line_id, l.payment_id, l.currency, l.amount_minor, l.reference
           FROM recon_lines l JOIN payments p ON p.id = l.payment_id
          WHERE l.status = 'awaiting' AND l.ingested_at <= $1
          ORDER BY l.ingested_at LIMIT $2
          FOR UPDATE OF l, p SKIP LOCKED`,
        [cutoff, batchSize],
      );
      if (rows.length === 0) return 0;
      await q.query(
        `UPDATE recon_lines SET status = 'exception', exception_kind = 'orphan_debit'
          WHERE bank_line_id IN (SELECT unnest($1::text[]))`,
        [rows.map((r) => r.bank_line_id)],
      );
      await insertLineExceptions(
        q,
        rows.map((r) => ({
          kind: 'orphan_debit' as const,
          bankLineId: r.bank_line_id,
          paymentId: r.payment_id,
          currency: r.currency.trim(),
          amountMinor: minorFromDb(r.amount_minor),
          details: { reason: 'debit_of_failed_payment', direction: 'debit', reference: r.reference },
        })),
        now,
      );
      return rows.length;
    });
  }

  /** Re-query leases of payments another path finished (a person, settlement): nothing will read them again. */
  async function forgetFinished(): Promise<void> {
    await deps.db.query(
      `DELETE FROM recon_requery WHERE payment_id IN (
         SELECT r.payment_id FROM recon_requery r JOIN payments p ON p.id = r.payment_id
          WHERE p.state <> 'unknown' LIMIT $1)`,
      [batchSize],
    );
  }

  /** One pass of both checks; 'checked' when it decided anything (the loop then comes back at once). */
  async function checkNext(): Promise<string | undefined> {
    const decided = (await missingDebits()) + (await unreturnedDebits());
    if (decided === 0) await forgetFinished();
    return decided > 0 ? 'checked' : undefined;
  }

  return { checkNext, missingDebits, unreturnedDebits };
}
