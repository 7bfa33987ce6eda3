import type { Queryable } from '../db/db.ts';
import { releaseHold, reversePayout, settlePayout } from '../ledger/ledger.ts';
import type { Clock } from '../shared/clock.ts';
import { recordPaymentEvent } from './events.ts';
import type { PaymentState, SubStatus } from './model.ts';
import { findPayment, type Payment, updateStatus } from './repository.ts';
import { returnDailyAllowance } from './rules.ts';

/**
 * The payment state machine: one table of allowed moves, and one function every move goes through. The move
 * locks the payment row, checks the table, books the ledger effect of the target state and writes the event,
 * all in the caller's transaction.
 *
 *   (new) ──► processing/reserved   funds held, about to be handed to the rail
 *   (new) ──► failed                 business rule (422) or blocked by us (rejected_by_us); nothing held
 *   processing ──► completed         rail confirmed: the hold becomes the debit
 *   processing ──► failed            rail refused: the hold is released
 *   processing ──► pending           interbank transfer awaiting settlement: hold kept
 *   processing ──► unknown           no proof either way (reconciling) or held at the clearing house (at_rail)
 *   pending    ──► completed | failed | unknown
 *   unknown    ──► completed | failed | unknown (reconciling → at_rail/under_review, at_rail → under_review)
 *   completed, failed: terminal.
 */

export interface Status {
  state: PaymentState;
  subStatus: SubStatus;
  failureCode?: string | null;
}

const TRANSITIONS: Record<PaymentState, readonly PaymentState[]> = {
  processing: ['completed', 'failed', 'pending', 'unknown'],
  pending: ['completed', 'failed', 'unknown'],
  unknown: ['completed', 'failed', 'unknown'],
  completed: [],
  failed: [],
};

/** Sub-states each state may carry. */
export const SUB_STATUSES: Record<PaymentState, readonly SubStatus[]> = {
  pending: [null],
  processing: ['reserved'],
  completed: [null],
  failed: [null, 'declined', 'wrong_beneficiary', 'rejected_by_us'],
  unknown: ['reconciling', 'under_review', 'at_rail'],
};

const UNKNOWN_ORDER: Record<string, number> = { reconciling: 0, at_rail: 1, under_review: 2 };

export function isAllowed(from: Status, to: Status): boolean {
  if (!TRANSITIONS[from.state].includes(to.state)) return false;
  if (!SUB_STATUSES[to.state].includes(to.subStatus)) return false;
  // Within unknown, only forward: reconciling → at_rail → under_review.
  if (from.state === 'unknown' && to.state === 'unknown') {
    return UNKNOWN_ORDER[to.subStatus ?? '']! > UNKNOWN_ORDER[from.subStatus ?? '']!;
  }
  return true;
}

export type TransitionResult =
  | { kind: 'moved'; payment: Payment; previous: Payment }
  | { kind: 'unchanged'; payment: Payment }
  | { kind: 'not_allowed'; payment: Payment }
  | { kind: 'not_found' };

/**
 * Moves a payment to `to`. Re-entrant: asking for the state it already has is `unchanged` (a second booking of
 * the same outcome books nothing). `onlyFrom` narrows the accepted current states (e.g. operator resolve: unknown).
 */
export async function transition(
  q: Queryable,
  clock: Clock,
  paymentId: string,
  to: Status,
  options: { onlyFrom?: readonly PaymentState[] } = {},
): Promise<TransitionResult> {
  const current = await findPayment(q, paymentId, { forUpdate: true });
  if (current === null) return { kind: 'not_found' };
  if (current.state === to.state && current.subStatus === to.subStatus) return { kind: 'unchanged', payment: current };
  if (options.onlyFrom && !options.onlyFrom.includes(current.state)) return { kind: 'not_allowed', payment: current };
  if (!isAllowed(current, to)) return { kind: 'not_allowed', payment: current };

  if (to.state === 'completed') {
    await settlePayout(q, {
      paymentId: current.id,
      clientId: current.clientId,
      sourceCurrency: current.sourceCurrency,
      targetMinor: current.amountMinor,
    });
  } else if (to.state === 'failed') {
    await releaseHold(q, current.id);
    await returnDailyAllowance(q, {
      keyId: current.keyId,
      rail: current.rail,
      madeAt: current.createdAt,
      amountMinor: current.amountMinor,
    });
  }
  const now = clock.now();
  const updated = await updateStatus(q, current.id, {
    state: to.state,
    subStatus: to.subStatus,
    failureCode: to.state === 'failed' ? (to.failureCode ?? null) : null,
    unknownSince: to.state === 'unknown' ? (current.unknownSince ?? now) : null,
    now,
  });
  if (to.state === 'completed' || to.state === 'failed' || to.state === 'unknown') {
    await recordPaymentEvent(q, clock, updated, current.state);
  }
  return { kind: 'moved', payment: updated, previous: current };
}

/**
 * Added for reconciliation (issue 7), and used only by it: the bank returned the money of a completed payout (a
 * clearing-house return seen on the statement after the debit was matched). completed is otherwise terminal;
 * this is the one move out of it, completed → failed (declined, with `failureCode`, e.g. `returned`), booked by
 * ledger.reversePayout (the client is credited back exactly what it paid) with its event, like any transition.
 * Re-entrant: a payment already failed is `unchanged`; any other state is `not_allowed`.
 */
export async function reverseCompletedPayment(
  q: Queryable,
  clock: Clock,
  paymentId: string,
  failureCode: string,
): Promise<TransitionResult> {
  const current = await findPayment(q, paymentId, { forUpdate: true });
  if (current === null) return { kind: 'not_found' };
  if (current.state === 'failed') return { kind: 'unchanged', payment: current };
  if (current.state !== 'completed') return { kind: 'not_allowed', payment: current };
  const reversed = await reversePayout(q, {
    paymentId: current.id,
    clientId: current.clientId,
    sourceCurrency: current.sourceCurrency,
    targetMinor: current.amountMinor,
  });
  if (!reversed) throw new Error(`payment ${current.id} is completed but has no payout to reverse`);
  // Like any failed payment, it no longer counts against the key's daily limit.
  await returnDailyAllowance(q, {
    keyId: current.keyId,
    rail: current.rail,
    madeAt: current.createdAt,
    amountMinor: current.amountMinor,
  });
  const updated = await updateStatus(q, current.id, {
    state: 'failed',
    subStatus: 'declined',
    failureCode,
    unknownSince: null,
    now: clock.now(),
  });
  await recordPaymentEvent(q, clock, updated, current.state);
  return { kind: 'moved', payment: updated, previous: current };
}
