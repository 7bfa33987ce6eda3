import type { RailCode } from '../config.ts';
import { isoTimeFromDb } from '../shared/money.ts';
import type { PaymentState, PublicPayment, SubStatus } from './model.ts';

/**
 * The public view of a payment straight from the JSON text payments_public_json renders of its row (migration
 * 0041), for the signed GET: the fields the view shows and the client it belongs to, without a Payment between them.
 * Both it and toPublicPayment (repository.ts) make the view with publicPaymentOf; test/payments/public-view.test.ts
 * holds the two to the same answer for the same row.
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

/** What the public view shows of a payment, each field already in its edge form. */
export interface PublicFields {
  id: string;
  state: PaymentState;
  subStatus: SubStatus;
  amountMinor: string;
  rail: RailCode;
  account: string;
  createdAt: string;
  updatedAt: string;
  failureCode: string | null;
  beneficiaryId: string | null;
  sourceCurrency: string;
  sourceAmountMinor: string;
  quoteId: string | null;
}

/**
 * The public view: which fields it shows and when. Every answer about a payment comes through here, from a whole
 * Payment (repository.ts, toPublicPayment) or from the view's own JSON (paymentViewFromJson).
 */
export function publicPaymentOf(f: PublicFields): PublicPayment {
  const out: PublicPayment = {
    intentId: f.id,
    id: f.id,
    state: f.state,
    subStatus: f.subStatus,
    amountMinor: f.amountMinor,
    currency: 'VES',
    rail: f.rail,
    beneficiary: f.account,
    createdAt: f.createdAt,
    updatedAt: f.updatedAt,
    failureCode: f.failureCode,
  };
  if (f.beneficiaryId !== null) out.beneficiaryId = f.beneficiaryId;
  if (f.sourceCurrency !== 'VES') {
    out.sourceCurrency = f.sourceCurrency;
    out.sourceAmountMinor = f.sourceAmountMinor;
  }
  if (f.quoteId !== null) out.quoteId = f.quoteId;
  return out;
}

export function paymentViewFromJson(text: string): PaymentView {
  const r = JSON.parse(text) as PublicJsonRow;
  return {
    clientId: r.client_id,
    payment: publicPaymentOf({
      id: r.id,
      state: r.state,
      subStatus: r.sub_status,
      amountMinor: r.amount_minor,
      rail: r.rail,
      account: r.account,
      createdAt: isoTimeFromDb(r.created_at),
      updatedAt: isoTimeFromDb(r.updated_at),
      failureCode: r.failure_code,
      beneficiaryId: r.beneficiary_id,
      sourceCurrency: r.source_currency.trim(),
      sourceAmountMinor: r.source_amount_minor,
      quoteId: r.quote_id,
    }),
  };
}
