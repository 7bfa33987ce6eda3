import type { Status } from '../payments/lifecycle.ts';
import type { SubStatus } from '../payments/model.ts';
import type { RailStatus } from '../rails/rail.ts';

/**
 * What a re-query of the rail proves about a payment in state unknown (pure; table-tested). The statement is
 * the other source of evidence: a matched debit completes the payment whatever the rail says (ingest.ts), so
 * this only decides what the rail's own answer settles.
 *
 * - completed → completed. The rail confirmed it; if no real debit follows within the grace period, the debit
 *   watch raises missing_debit for a person.
 * - failed → failed with the rail's sub-state and code: the hold is released.
 * - anything else (no answer, at the clearing house, pending, no record) → keep waiting while the budget lasts;
 *   once unknown_since + budget has passed: a rail that has no record of the reference never received the
 *   payment (the process died after the hold and before the call), so it fails with nothing moved; any other
 *   answer goes to a person (under_review).
 */
export type UnknownDecision = { kind: 'move'; to: Status; why: string } | { kind: 'wait'; why: string };

export const NOT_RECEIVED_FAILURE_CODE = 'not_received_by_rail';

export function decideUnknown(input: {
  subStatus: SubStatus;
  unknownSince: Date | null;
  now: Date;
  budgetMs: number;
  rail: RailStatus;
}): UnknownDecision {
  const { rail } = input;
  if (rail.kind === 'completed') {
    return { kind: 'move', to: { state: 'completed', subStatus: null }, why: 'the rail confirmed it' };
  }
  if (rail.kind === 'failed') {
    return {
      kind: 'move',
      to: { state: 'failed', subStatus: rail.subStatus, failureCode: rail.failureCode },
      why: 'the rail rejected it after the fact',
    };
  }
  const since = input.unknownSince?.getTime() ?? input.now.getTime();
  if (input.now.getTime() - since < input.budgetMs) return { kind: 'wait', why: `the rail says ${rail.kind}` };
  if (rail.kind === 'not_found') {
    return {
      kind: 'move',
      to: { state: 'failed', subStatus: null, failureCode: NOT_RECEIVED_FAILURE_CODE },
      why: 'the rail has no record of it after the waiting budget',
    };
  }
  if (input.subStatus === 'under_review') return { kind: 'wait', why: 'a person handles it' };
  return {
    kind: 'move',
    to: { state: 'unknown', subStatus: 'under_review' },
    why: 'nothing proved the outcome within the waiting budget',
  };
}
