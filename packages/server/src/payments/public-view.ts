import type { RailCode } from '../config.ts';
import { isoTimeFromDb } from '../shared/money.ts';
import type { PaymentState, PublicPayment, SubStatus } from './model.ts';

/**
 * The public view of a payment straight from the JSON text payments_public_json renders of its row (migration
 * 0041), for the signed GET: the fields the view shows and the client it belongs to, without a Payment between them.
 * It answers exactly what toPublicPayment (repository.ts) answers for the same row; test/payments/public-view.test.ts
 * holds the two to that.
 */

interface PublicJsonRow {
  id: string;
  client_id: string;
  state: PaymentState;
  sub_status: SubStatus;
  failure_code: string | null;
  amount_minor: string;
  rail: RailCode;
  account: string;
  beneficiary_id: string | null;
  source_currency: string;
  source_amount_minor: string;
  quote_id: string | null;
  created_at: string;
  updated_at: string;
}

/** A payment as its client may see it, and that client. */
export interface PaymentView {
  clientId: string;
  payment: PublicPayment;
}

export function paymentViewFromJson(text: string): PaymentView {
  const r = JSON.parse(text) as PublicJsonRow;
  const payment: PublicPayment = {
    intentId: r.id,
    id: r.id,
    state: r.state,
    subStatus: r.sub_status,
    amountMinor: r.amount_minor,
    currency: 'VES',
    rail: r.rail,
    beneficiary: r.account,
    createdAt: isoTimeFromDb(r.created_at),
    updatedAt: isoTimeFromDb(r.updated_at),
    failureCode: r.failure_code,
  };
  if (r.beneficiary_id !== null) payment.beneficiaryId = r.beneficiary_id;
  const sourceCurrency = r.source_currency.trim();
  if (sourceCurrency !== 'VES') {
    payment.sourceCurrency = sourceCurrency;
    payment.sourceAmountMinor = r.source_amount_minor;
  }
  if (r.quote_id !== null) payment.quoteId = r.quote_id;
  return { clientId: r.client_id, payment };
}
