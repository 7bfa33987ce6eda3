import type { Queryable } from '../../db/db.ts';

// Class ids of the two-key advisory locks of the simulated bank. migrate.ts uses the one-key form
// (class 0), so these cannot collide with it.
const STATEMENT_LOCK = 4_242_041;
const PAYMENT_LOCK = 4_242_042;

/** Serialises the assignment of statement positions (see statement-source.ts). */
export async function lockStatement(q: Queryable): Promise<void> {
  await q.query('SELECT pg_advisory_xact_lock($1, 0)', [STATEMENT_LOCK]);
}

/**
 * Serialises booking a payment's lines with suppressing them: under READ COMMITTED a suppression
 * committed while a submit is in flight would otherwise miss the debit that submit is about to book.
 */
export async function lockPayment(q: Queryable, paymentId: string): Promise<void> {
  await q.query('SELECT pg_advisory_xact_lock($1, hashtext($2))', [PAYMENT_LOCK, paymentId]);
}
