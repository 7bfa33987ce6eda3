import { runAtOnce, SLICE_ITEMS } from '../shared/event-loop.ts';
import {
  type ExceptionReason,
  type FundingFacts,
  fundingKey,
  type IncomingLine,
  type LineExceptionKind,
  type LineStatus,
  type MatchFacts,
  type MatchKind,
  type PaymentFacts,
} from './model.ts';

/**
 * The matching rules, as a pure function over one batch of new statement lines and what was known before it.
 * No database, no clock: table-tested and property-tested on its own; ingest.ts loads the facts (locked) and
 * writes the result in one transaction.
 *
 * Debits (in statement order):
 *   1. byte-identical to an earlier debit (same raw hash, another bank id) → double_debit;
 *   2. reference names no payment → orphan_debit; names one with another amount or currency → orphan_debit;
 *   3. the payment already has its debit → double_debit (not byte-identical);
 *   4. payment not final (processing, pending, unknown): its return is in the batch too → the payment fails
 *      (nothing was really paid: both lines matched, nothing booked); otherwise → the payment completes;
 *   5. payment completed → matched (confirms the payout the ledger already holds);
 *   6. payment failed: its return is in the batch → both matched; otherwise → awaiting its return.
 * Credits naming a payment are decided after every debit of the batch (a return is evidence about the debit):
 *   paired above → matched; the payment's debit is awaiting → both matched; the payment is completed with its
 *   debit matched → the payout is reversed; otherwise → unfunded_credit (a return without a debit, a second
 *   return, another amount).
 * Other credits: a funding with that reference, same amount, not yet matched → matched; anything else →
 * unfunded_credit. A credit is never matched to a funding by amount or guess: a person decides.
 */

export interface LineException {
  kind: LineExceptionKind;
  reason: ExceptionReason;
  /** The earlier line a double debit repeats. */
  relatedBankLineId: string | null;
}

export interface LineOutcome {
  line: IncomingLine;
  status: LineStatus;
  matchKind: MatchKind | null;
  exception: LineException | null;
  paymentId: string | null;
  fundingId: string | null;
  /** The ledger holds (or, with this batch's actions, will hold) this movement. */
  booked: boolean;
}

export type PaymentAction =
  /** A payment not final whose real debit is matched: it completes (the hold becomes the debit). */
  | { kind: 'complete'; paymentId: string }
  /** A payment not final whose debit and return are both seen: it fails (the hold is released). */
  | { kind: 'fail_returned'; paymentId: string }
  /** A completed payment whose debit is now matched: its debit watch ends (and a missing_debit flag with it). */
  | { kind: 'debit_confirmed'; paymentId: string }
  /** A completed payment whose money came back: completed → failed, the client credited back. */
  | { kind: 'reverse'; paymentId: string };

export interface BatchResult {
  /** One per input line, in input order. */
  lines: LineOutcome[];
  /** In the order they must be applied. */
  actions: PaymentAction[];
  /** Stored awaiting debits paired by a return of this batch: they become matched. */
  pairedAwaiting: string[];
}

const FINAL = new Set(['completed', 'failed']);

function sameMoney(line: IncomingLine, p: { amountMinor: bigint; currency: string }): boolean {
  return line.amountMinor === p.amountMinor && line.currency === p.currency;
}

export function matchBatch(lines: readonly IncomingLine[], facts: MatchFacts): BatchResult {
  return runAtOnce(matchSteps(lines, facts));
}

/**
 * matchBatch in slices: yields after every `slice` lines decided, so that a caller serving requests can let them
 * in between (ingest.ts, through runInSlices); the result is the same whatever the slice. The working state lives
 * across the yields, so later lines still see what earlier ones decided; the caller must not touch the lines or
 * the facts until it is done.
 */
export function* matchSteps(
  lines: readonly IncomingLine[],
  facts: MatchFacts,
  slice: number = SLICE_ITEMS,
): Generator<void, BatchResult, void> {
  // Working copies: later lines of the batch see what earlier ones decided.
  const payments = new Map<string, PaymentFacts>();
  for (const [ref, p] of facts.payments) payments.set(ref, { ...p, debit: p.debit ? { ...p.debit } : null });
  const fundings = new Map<string, FundingFacts>();
  for (const [key, f] of facts.fundings) fundings.set(key, { ...f });
  const debitsByHash = new Map(facts.debitsByHash);

  const outcomes = new Array<LineOutcome>(lines.length);
  const actions: PaymentAction[] = [];
  const pairedAwaiting: string[] = [];

  // Returns of the batch by reference, for a debit to pair with; a paired one is consumed.
  const returnsByRef = new Map<string, number[]>();
  const paired = new Set<number>();
  lines.forEach((line, i) => {
    if (line.direction !== 'credit' || !payments.has(line.reference)) return;
    const list = returnsByRef.get(line.reference) ?? [];
    list.push(i);
    returnsByRef.set(line.reference, list);
  });
  const takeReturn = (debit: IncomingLine): number | null => {
    for (const i of returnsByRef.get(debit.reference) ?? []) {
      const c = lines[i]!;
      if (!paired.has(i) && c.amountMinor === debit.amountMinor && c.currency === debit.currency) {
        paired.add(i);
        return i;
      }
    }
    return null;
  };

  const exception = (
    line: IncomingLine,
    kind: LineExceptionKind,
    reason: ExceptionReason,
    ids: { paymentId?: string | null; related?: string | null } = {},
  ): LineOutcome => ({
    line,
    status: 'exception',
    matchKind: null,
    exception: { kind, reason, relatedBankLineId: ids.related ?? null },
    paymentId: ids.paymentId ?? null,
    fundingId: null,
    booked: false,
  });
  const matched = (
    line: IncomingLine,
    matchKind: MatchKind,
    booked: boolean,
    ids: { paymentId?: string; fundingId?: string },
  ): LineOutcome => ({
    line,
    status: 'matched',
    matchKind,
    exception: null,
    paymentId: ids.paymentId ?? null,
    fundingId: ids.fundingId ?? null,
    booked,
  });

  function decideDebit(line: IncomingLine): LineOutcome {
    const earlier = debitsByHash.get(line.rawHash);
    if (earlier !== undefined) {
      return exception(line, 'double_debit', 'byte_identical', {
        paymentId: earlier.paymentId,
        related: earlier.bankLineId,
      });
    }
    const p = payments.get(line.reference);
    const outcome = ((): LineOutcome => {
      if (p === undefined) return exception(line, 'orphan_debit', 'no_owner');
      if (line.currency !== p.currency)
        return exception(line, 'orphan_debit', 'currency_mismatch', { paymentId: p.id });
      if (line.amountMinor !== p.amountMinor) {
        return exception(line, 'orphan_debit', 'amount_mismatch', { paymentId: p.id });
      }
      if (p.debit !== null) {
        return exception(line, 'double_debit', 'second_debit_of_payment', {
          paymentId: p.id,
          related: p.debit.bankLineId,
        });
      }
      if (!FINAL.has(p.state)) {
        if (takeReturn(line) !== null) {
          actions.push({ kind: 'fail_returned', paymentId: p.id });
          p.state = 'failed';
          p.debit = { bankLineId: line.bankLineId, status: 'matched' };
          p.returned = true;
          return matched(line, 'payout', false, { paymentId: p.id });
        }
        actions.push({ kind: 'complete', paymentId: p.id });
        p.state = 'completed';
        p.debit = { bankLineId: line.bankLineId, status: 'matched' };
        return matched(line, 'payout', true, { paymentId: p.id });
      }
      if (p.state === 'completed') {
        actions.push({ kind: 'debit_confirmed', paymentId: p.id });
        p.debit = { bankLineId: line.bankLineId, status: 'matched' };
        return matched(line, 'payout', true, { paymentId: p.id });
      }
      // Failed: a debit contradicts "no debit" unless its return pairs it.
      if (!p.returned && takeReturn(line) !== null) {
        p.debit = { bankLineId: line.bankLineId, status: 'matched' };
        p.returned = true;
        return matched(line, 'payout', false, { paymentId: p.id });
      }
      p.debit = { bankLineId: line.bankLineId, status: 'awaiting' };
      return {
        line,
        status: 'awaiting',
        matchKind: null,
        exception: null,
        paymentId: p.id,
        fundingId: null,
        booked: false,
      };
    })();
    debitsByHash.set(line.rawHash, { bankLineId: line.bankLineId, paymentId: outcome.paymentId });
    return outcome;
  }

  function decideReturn(line: IncomingLine, index: number, p: PaymentFacts): LineOutcome {
    if (paired.has(index)) return matched(line, 'return', false, { paymentId: p.id });
    if (!sameMoney(line, p)) return exception(line, 'unfunded_credit', 'amount_mismatch', { paymentId: p.id });
    if (p.debit === null || !FINAL.has(p.state)) {
      return exception(line, 'unfunded_credit', 'return_without_debit', { paymentId: p.id });
    }
    if (p.returned) return exception(line, 'unfunded_credit', 'second_return', { paymentId: p.id });
    p.returned = true;
    if (p.debit.status === 'awaiting') {
      pairedAwaiting.push(p.debit.bankLineId);
      p.debit.status = 'matched';
      return matched(line, 'return', false, { paymentId: p.id });
    }
    if (p.state === 'completed') {
      actions.push({ kind: 'reverse', paymentId: p.id });
      p.state = 'failed';
      return matched(line, 'return', true, { paymentId: p.id });
    }
    // Failed with its debit matched and not yet returned: the two pair up, nothing was booked for either.
    return matched(line, 'return', false, { paymentId: p.id });
  }

  function decideCredit(line: IncomingLine): LineOutcome {
    const f = fundings.get(fundingKey(line.currency, line.reference));
    if (f === undefined) return exception(line, 'unfunded_credit', 'no_funding');
    if (f.matched) return exception(line, 'unfunded_credit', 'funding_already_matched');
    if (line.amountMinor !== f.amountMinor) return exception(line, 'unfunded_credit', 'amount_mismatch');
    f.matched = true;
    return matched(line, 'funding', true, { fundingId: f.id });
  }

  const returns: number[] = [];
  for (let i = 0; i < lines.length; i++) {
    if (i > 0 && i % slice === 0) yield;
    const line = lines[i]!;
    if (line.direction === 'debit') outcomes[i] = decideDebit(line);
    else if (payments.has(line.reference)) returns.push(i);
    else outcomes[i] = decideCredit(line);
  }
  for (let n = 0; n < returns.length; n++) {
    if (n > 0 && n % slice === 0) yield;
    const i = returns[n]!;
    const line = lines[i]!;
    outcomes[i] = decideReturn(line, i, payments.get(line.reference)!);
  }
  return { lines: outcomes, actions, pairedAwaiting };
}
