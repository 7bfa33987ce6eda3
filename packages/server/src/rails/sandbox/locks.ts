import type { Queryable } from '../../db/db.ts';

// Class ids of the two-key advisory locks of the simulated bank. migrate.ts uses the one-key form
// (class 0), so these cannot collide with it. Class 4_242_041 serialises the assignment of statement positions
// (statement-source.ts); it is taken in SQL, by sandbox_fetch_statement (migration 0040).
const PAYMENT_LOCK = 4_242_042;

/**
 * Serialises booking a payment's lines with suppressing them: under READ COMMITTED a suppression
 * committed while a submit is in flight would otherwise miss the debit that submit is about to book.
 */
export async function lockPayment(q: Queryable, paymentId: string): Promise<void> {
  await q.query('SELECT pg_advisory_xact_lock($1, hashtext($2))', [PAYMENT_LOCK, paymentId]);
}
