import { hash } from 'node:crypto';
import type { PaymentState } from '../payments/model.ts';
import type { BankStatementLine } from '../rails/rail.ts';

/**
 * What reconciliation works on. A statement line is matched (to a payout, the return of a payout or a
 * funding), in exactly one exception, or awaiting (a debit of a payment already failed, waiting for the
 * return that pairs it; an exception if none comes within the grace period).
 */
export type LineStatus = 'matched' | 'exception' | 'awaiting';
export type MatchKind = 'payout' | 'return' | 'funding';

export type LineExceptionKind = 'orphan_debit' | 'unfunded_credit' | 'double_debit';
export type ExceptionKind = LineExceptionKind | 'missing_debit' | 'balance_mismatch';
export const EXCEPTION_KINDS: readonly ExceptionKind[] = [
  'orphan_debit',
  'unfunded_credit',
  'double_debit',
  'missing_debit',
  'balance_mismatch',
];

/** Why a line became an exception, in the words an operator reads (details.reason). */
export type ExceptionReason =
  | 'no_owner'
  | 'amount_mismatch'
  | 'currency_mismatch'
  | 'byte_identical'
  | 'second_debit_of_payment'
  | 'debit_of_failed_payment'
  | 'return_without_debit'
  | 'second_return'
  | 'no_funding'
  | 'funding_already_matched';

/** A statement line as ingestion sees it: the bank's fields and the hash of its raw text. */
export type IncomingLine = Omit<BankStatementLine, 'raw'> & { rawHash: string };

export function rawHashOf(raw: string): string {
  return hash('sha256', raw, 'hex');
}

export function toIncoming(line: BankStatementLine): IncomingLine {
  return {
    bankLineId: line.bankLineId,
    direction: line.direction,
    amountMinor: line.amountMinor,
    currency: line.currency,
    valueDate: line.valueDate,
    reference: line.reference,
    rawHash: rawHashOf(line.raw),
  };
}

/** A payout line already stored for a payment (its debit, or its return). */
export interface StoredPayoutLine {
  bankLineId: string;
  status: LineStatus;
}

/** What the matcher needs to know about the payment a reference names. */
export interface PaymentFacts {
  id: string;
  state: PaymentState;
  amountMinor: bigint;
  currency: string;
  /** The payment's debit line (matched or awaiting), if one was seen. */
  debit: StoredPayoutLine | null;
  /** The matched return of the payment's money, if one was seen. */
  returned: boolean;
}

export interface FundingFacts {
  id: string;
  amountMinor: bigint;
  currency: string;
  /** A credit line is matched to it already. */
  matched: boolean;
}

/** What the matcher knows about the world before the batch (loaded in the batch's transaction, locked). */
export interface MatchFacts {
  /** By rail reference. */
  payments: ReadonlyMap<string, PaymentFacts>;
  /** By `${currency}:${reference}`. */
  fundings: ReadonlyMap<string, FundingFacts>;
  /** Debits stored earlier, by raw hash: the first one's bank line id and its payment (if matched). */
  debitsByHash: ReadonlyMap<string, { bankLineId: string; paymentId: string | null }>;
}

export const fundingKey = (currency: string, reference: string): string => `${currency}:${reference}`;
