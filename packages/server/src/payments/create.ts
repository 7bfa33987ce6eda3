import type { AuthContext } from '../auth/authenticate.ts';
import type { BeneficiaryDomain, StoredDestination } from '../beneficiaries/domain.ts';
import type { Config } from '../config.ts';
import type { Db } from '../db/db.ts';
import { sourceForPayment } from '../fx/convert.ts';
import type { RateService } from '../fx/rates.ts';
import type { Clock } from '../shared/clock.ts';
import { paymentFingerprint } from './fingerprint.ts';
import type { Payment } from './repository.ts';
import { toPaymentRequest } from './request.ts';
import type { RuleViolation } from './rules.ts';

/**
 * POST /v2/payments before the batch: the checks that need nothing but the request (and, for a stored
 * beneficiary, its destination): the body's rules, the destination, the fingerprint, the rate for a non-VES
 * balance. What needs the database's current state under lock (reused key, archive, quote, limits, balance,
 * daily allowance) is decided for the whole batch by reserve.ts; what is decided here travels with the item.
 */

/** Why a request creates nothing; the route layer turns each into its status and text (routes.ts). */
export type Refusal =
  | { reason: 'invalid'; message: string }
  | { reason: 'beneficiary_not_found' }
  | { reason: 'beneficiary_archived' }
  | { reason: 'key_reused' }
  | { reason: 'quote_not_found' }
  | { reason: 'quote_amount_mismatch'; targetAmountMinor: bigint }
  | { reason: 'quote_used' }
  | { reason: 'no_rate'; currency: string }
  /** The deferred nonce, consumed first by the reserve transaction, was a replay, or the key was deactivated. */
  | { reason: 'nonce_replay' }
  | { reason: 'key_inactive' };

/** The answer of the payment path to one request, in domain terms. */
export type CreateResult =
  | { kind: 'created'; payment: Payment }
  | { kind: 'replayed'; payment: Payment }
  | { kind: 'rejected'; payment: Payment; violation: RuleViolation }
  | ({ kind: 'refused' } & Refusal);

/** One validated request, as the reserve phase takes it (JSON to the reserve_payments SQL function). */
export interface ReserveItem {
  client: string;
  key: string;
  idem: string;
  /** The request's nonce when its route defers it to this transaction (auth/deferred-nonce.ts); consumed first. */
  nonce: string | null;
  fingerprint: string;
  amountMinor: string;
  rail: string;
  account: string;
  bankCode: string | null;
  docType: string | null;
  docNumber: string | null;
  beneficiaryName: string | null;
  beneficiaryId: string | null;
  sourceCurrency: string;
  /** The amount leaving the balance; replaced by the quote's when a quote is cited. */
  sourceAmountMinor: string;
  quoteId: string | null;
  rateId: string | null;
  /** A non-VES balance, no quote, and no rate in force: 503 unless the key was used already. */
  noRate: boolean;
  /** rejected_by_us code decided here (rail not enabled, destination incomplete): a failed payment, 201. */
  refused: string | null;
  servicePerPaymentMaxMinor: string | null;
  serviceDailyMaxMinor: string | null;
}

export interface PrepareDeps {
  db: Db;
  clock: Clock;
  config: Pick<Config, 'rails' | 'serviceLimits'>;
  rates: Pick<RateService, 'inForce'>;
  beneficiaries: Pick<BeneficiaryDomain, 'resolveForPayment'>;
}

export type Prepared = { kind: 'item'; item: ReserveItem } | ({ kind: 'refused' } & Refusal);

const refused = (r: Refusal): Prepared => ({ kind: 'refused', ...r });

export async function preparePayment(
  deps: PrepareDeps,
  auth: AuthContext,
  idempotencyKey: string,
  body: Record<string, unknown>,
): Promise<Prepared> {
  const request = toPaymentRequest(body);

  let destination: StoredDestination;
  let beneficiaryId: string | null = null;
  if (request.way === 'beneficiary') {
    const found = await deps.beneficiaries.resolveForPayment(deps.db, auth.clientId, request.beneficiaryId);
    if (found.kind === 'not_found') return refused({ reason: 'beneficiary_not_found' });
    // An archived one is refused by the reserve phase, after the reused-key check (a replay still answers 200).
    destination = found.destination;
    beneficiaryId = found.beneficiaryId;
  } else {
    destination = request.destination;
  }

  let sourceAmountMinor = request.amountMinor;
  let rateId: string | null = null;
  let noRate = false;
  if (request.quoteId === null && auth.clientCurrency !== 'VES') {
    const rate = await deps.rates.inForce(auth.clientId, auth.clientCurrency);
    if (rate === null) {
      noRate = true;
    } else {
      sourceAmountMinor = sourceForPayment({
        targetMinor: request.amountMinor,
        clientCurrency: auth.clientCurrency,
        rate,
      });
      rateId = rate.rateId;
    }
  }

  const service = deps.config.serviceLimits.find((l) => l.rail === destination.rail);
  return {
    kind: 'item',
    item: {
      client: auth.clientId,
      key: auth.keyId,
      idem: idempotencyKey,
      nonce: auth.deferredNonce?.nonce ?? null,
      fingerprint: paymentFingerprint({ amountMinor: request.amountMinor, destination, quoteId: request.quoteId }),
      amountMinor: request.amountMinor.toString(),
      rail: destination.rail,
      account: destination.account,
      bankCode: destination.bankCode,
      docType: destination.docType,
      docNumber: destination.docNumber,
      beneficiaryName: destination.rail === 'CCE' ? destination.beneficiaryName : null,
      beneficiaryId,
      sourceCurrency: auth.clientCurrency,
      sourceAmountMinor: sourceAmountMinor.toString(),
      quoteId: request.quoteId,
      rateId,
      noRate,
      refused: refusedByUs(deps.config.rails, destination),
      servicePerPaymentMaxMinor: service ? service.perPaymentMaxMinor.toString() : null,
      serviceDailyMaxMinor: service ? service.dailyMaxMinor.toString() : null,
    },
  };
}

/** Payments we will not send, whatever the balance: a failed payment (rejected_by_us), not a 4xx. */
function refusedByUs(enabled: readonly string[], d: StoredDestination): string | null {
  if (!enabled.includes(d.rail)) return 'rail_not_enabled';
  if (d.bankCode === null || d.docType === null || d.docNumber === null) return 'beneficiary_incomplete';
  if (d.rail === 'CCE' && d.beneficiaryName === null) return 'beneficiary_incomplete';
  return null;
}
