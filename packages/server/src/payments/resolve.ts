import type { Db } from '../db/db.ts';
import type { Clock } from '../shared/clock.ts';
import { transition } from './lifecycle.ts';
import type { PaymentState } from './model.ts';
import type { Payment } from './repository.ts';

/**
 * A person settles an unknown payment (under_review, or earlier): completed books the debit, failed releases the
 * hold, each with its event like any transition, and the decision is kept with its note.
 */
export type ResolveResult =
  | { kind: 'resolved'; payment: Payment }
  | { kind: 'invalid'; message: string }
  | { kind: 'not_found' }
  | { kind: 'not_unknown'; state: PaymentState };

export async function resolvePayment(
  deps: { db: Db; clock: Clock; onMoved?: (payment: Payment) => void },
  paymentId: string,
  input: { outcome: unknown; note: unknown; resolvedBy?: string },
): Promise<ResolveResult> {
  if (input.outcome !== 'completed' && input.outcome !== 'failed') {
    return { kind: 'invalid', message: 'outcome must be completed or failed' };
  }
  if (typeof input.note !== 'string' || input.note.trim() === '' || input.note.length > 2000) {
    return { kind: 'invalid', message: 'note is required: a string of 1 to 2000 characters saying why' };
  }
  const outcome = input.outcome;
  const note = input.note;
  const resolved = await deps.db.tx(async (q): Promise<ResolveResult> => {
    const result = await transition(
      q,
      deps.clock,
      paymentId,
      outcome === 'completed'
        ? { state: 'completed', subStatus: null }
        : { state: 'failed', subStatus: null, failureCode: 'resolved_by_operator' },
      { onlyFrom: ['unknown'] },
    );
    if (result.kind === 'not_found') return { kind: 'not_found' };
    if (result.kind !== 'moved') return { kind: 'not_unknown', state: result.payment.state };
    await q.query(
      `INSERT INTO payment_resolutions (payment_id, from_state, from_sub, outcome, note, resolved_by, created_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7)`,
      [
        paymentId,
        result.previous.state,
        result.previous.subStatus,
        outcome,
        note,
        input.resolvedBy ?? 'operator',
        deps.clock.now(),
      ],
    );
    return { kind: 'resolved', payment: result.payment };
  });
  // Counted once committed, like every other move.
  if (resolved.kind === 'resolved') deps.onMoved?.(resolved.payment);
  return resolved;
}
