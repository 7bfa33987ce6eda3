import type { RailCode } from '../config.ts';
import type { Destination } from '../rails/rail.ts';

/**
 * A payment's state and sub-state (spec, States and transitions). Every allowed move is in
 * lifecycle.ts's TRANSITIONS table; nothing changes a payment's state any other way.
 */
export type PaymentState = 'pending' | 'processing' | 'completed' | 'failed' | 'unknown';

export type SubStatus =
  | null
  | 'reserved'
  | 'reconciling'
  | 'under_review'
  | 'at_rail'
  | 'declined'
  | 'wrong_beneficiary'
  | 'rejected_by_us';

/** The destination a payment was made to (rails/rail.ts). */
export type PaymentDestination = Destination;

/** The Payment object of the API (spec, Payment resource; operator contract, section 5). */
export interface PublicPayment {
  intentId: string;
  id: string;
  state: PaymentState;
  subStatus: SubStatus;
  amountMinor: string;
  currency: 'VES';
  rail: RailCode;
  beneficiary: string;
  createdAt: string;
  updatedAt: string;
  /** Why a failed payment failed, e.g. invalid_phone_number, insufficient_funds, limit_exceeded. null otherwise. */
  failureCode: string | null;
  /** Present when the payment was made by beneficiaryId. */
  beneficiaryId?: string;
  /** Present when the balance is not in VES: what was (or would be) debited, in the balance currency. */
  sourceAmountMinor?: string;
  sourceCurrency?: string;
  /** Present when the payment cited a quote. */
  quoteId?: string;
}

/** Body of a `payment.state_changed` event (operator contract, section 7). */
export interface PaymentStateChangedData {
  payment: PublicPayment;
  previousState: PaymentState | null;
}
