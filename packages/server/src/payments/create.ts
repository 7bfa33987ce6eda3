import { randomBytes } from 'node:crypto';
import type { AuthContext } from '../auth/authenticate.ts';
import type { BeneficiaryDomain, StoredDestination } from '../beneficiaries/domain.ts';
import type { Config } from '../config.ts';
import type { Db } from '../db/db.ts';
import { sourceForPayment } from '../fx/convert.ts';
import type { QuoteService } from '../fx/quotes.ts';
import type { RateService } from '../fx/rates.ts';
import { noRateMessage } from '../fx/rates.ts';
import { placeHold, releaseHold } from '../ledger/ledger.ts';
import type { Clock } from '../shared/clock.ts';
import { recordPaymentEvent } from './events.ts';
import { paymentFingerprint } from './fingerprint.ts';
import type { PaymentState, SubStatus } from './model.ts';
import { findByIdempotencyKey, insertPayment, nextPaymentSeq, type Payment, paymentIdOf } from './repository.ts';
import { parsePaymentRequest } from './request.ts';
import {
  checkLimits,
  type RuleViolation,
  returnDailyAllowance,
  takeDailyAllowance,
  VIOLATION_MESSAGE,
} from './rules.ts';

/**
 * POST /v2/payments up to the point where funds are held: validation, destination, idempotency, quote or rate,
 * rules, hold, and the payment row with its rail reference, all in one short transaction. The rail is called
 * afterwards by dispatch.ts, outside any transaction.
 */

export type CreateOutcome =
  | { kind: 'created'; payment: Payment }
  | { kind: 'replayed'; payment: Payment }
  | { kind: 'rejected'; payment: Payment; message: string }
  | { kind: 'error'; status: 400 | 404 | 409 | 503; message: string };

export interface CreateDeps {
  db: Db;
  clock: Clock;
  config: Pick<Config, 'rails' | 'serviceLimits'>;
  rates: RateService;
  quotes: QuoteService;
  beneficiaries: Pick<BeneficiaryDomain, 'resolveForPayment'>;
}

const fail = (status: 400 | 404 | 409 | 503, message: string): CreateOutcome => ({ kind: 'error', status, message });

/** The identifier the bank sees: unique by construction (the sequence), unguessable, within bank charset limits. */
export function railReferenceFor(seq: bigint): string {
  return `DSP${seq.toString(36).toUpperCase().padStart(10, '0')}${randomBytes(4).toString('hex').toUpperCase()}`;
}

class DuplicateKey extends Error {}
class QuoteTaken extends Error {}
class BeneficiaryArchived extends Error {}

interface Decision {
  state: PaymentState;
  subStatus: SubStatus;
  failureCode: string | null;
  violation: RuleViolation | null;
}

export async function createPayment(
  deps: CreateDeps,
  auth: AuthContext,
  idempotencyKey: string,
  body: Record<string, unknown>,
): Promise<CreateOutcome> {
  const parsed = parsePaymentRequest(body);
  if (!parsed.ok) return fail(400, parsed.error);
  const request = parsed.request;

  let destination: StoredDestination;
  let beneficiaryId: string | null = null;
  let beneficiaryActive = true;
  if (request.way === 'beneficiary') {
    const found = await deps.beneficiaries.resolveForPayment(deps.db, auth.clientId, request.beneficiaryId);
    if (found.kind === 'not_found') return fail(404, 'beneficiary not found');
    destination = found.destination;
    beneficiaryId = found.beneficiaryId;
    beneficiaryActive = found.active;
  } else {
    destination = request.destination;
  }

  const fingerprint = paymentFingerprint({ amountMinor: request.amountMinor, destination, quoteId: request.quoteId });
  const replay = await replayOf(deps, auth.clientId, idempotencyKey, fingerprint);
  if (replay !== null) return replay;
  if (!beneficiaryActive) return fail(404, 'beneficiary not found: it is archived');

  // The source side: what leaves the client's balance, in its own currency.
  let sourceAmountMinor = request.amountMinor;
  let rateId: string | null = null;
  let quoteExpired = false;
  if (request.quoteId !== null) {
    const quote = await deps.quotes.peek(deps.db, request.quoteId, auth.clientId);
    if (quote === null) return fail(404, 'quote not found');
    if (quote.targetAmountMinor !== request.amountMinor) {
      return fail(400, `amountMinor must equal the quote's targetAmountMinor (${quote.targetAmountMinor})`);
    }
    if (quote.usedByPaymentId !== null) return fail(409, 'quote already used');
    sourceAmountMinor = quote.sourceAmountMinor;
    rateId = quote.rateId;
    quoteExpired = quote.expiresAt.getTime() <= deps.clock.now().getTime();
  } else if (auth.clientCurrency !== 'VES') {
    const rate = await deps.rates.inForce(auth.clientId, auth.clientCurrency);
    if (rate === null) return fail(503, noRateMessage(auth.clientCurrency));
    sourceAmountMinor = sourceForPayment({
      targetMinor: request.amountMinor,
      clientCurrency: auth.clientCurrency,
      rate,
    });
    rateId = rate.rateId;
  }

  try {
    const payment = await deps.db.tx(async (q) => {
      const now = deps.clock.now();
      const seq = await nextPaymentSeq(q);
      const paymentId = paymentIdOf(seq);
      if (beneficiaryId !== null) {
        // Again inside the transaction, share-locked: an archive racing this payment waits for it to commit.
        const locked = await deps.beneficiaries.resolveForPayment(q, auth.clientId, beneficiaryId);
        if (locked.kind !== 'ok' || !locked.active) throw new BeneficiaryArchived();
      }

      const decision = await decide();

      async function decide(): Promise<Decision> {
        const rejectedByUs = (failureCode: string): Decision => ({
          state: 'failed',
          subStatus: 'rejected_by_us',
          failureCode,
          violation: null,
        });
        const violated = (v: RuleViolation): Decision => ({
          state: 'failed',
          subStatus: null,
          failureCode: v,
          violation: v,
        });
        if (!deps.config.rails.includes(destination.rail)) return rejectedByUs('rail_not_enabled');
        if (destination.bankCode === null || destination.docType === null || destination.docNumber === null) {
          return rejectedByUs('beneficiary_incomplete');
        }
        if (destination.rail === 'CCE' && destination.beneficiaryName === null)
          return rejectedByUs('beneficiary_incomplete');
        const limits = await checkLimits(q, {
          keyId: auth.keyId,
          rail: destination.rail,
          amountMinor: request.amountMinor,
          serviceLimits: deps.config.serviceLimits,
        });
        if (limits.violation !== null) return violated(limits.violation);
        if (quoteExpired) return violated('quote_expired');
        const held = await placeHold(q, {
          clientId: auth.clientId,
          currency: auth.clientCurrency,
          paymentId,
          amountMinor: sourceAmountMinor,
        });
        if (held === 'insufficient') return violated('insufficient_balance');
        const allowed = await takeDailyAllowance(q, {
          keyId: auth.keyId,
          rail: destination.rail,
          at: now,
          amountMinor: request.amountMinor,
          dailyMaxMinor: limits.dailyMaxMinor,
        });
        if (!allowed) {
          await releaseHold(q, paymentId);
          return violated('daily_limit_exceeded');
        }
        // Last: only a payment that goes to its rail uses up the quote.
        if (request.quoteId !== null) {
          const consumed = await deps.quotes.consume(q, {
            quoteId: request.quoteId,
            clientId: auth.clientId,
            paymentId,
            at: now,
          });
          if (consumed.kind === 'expired') {
            await releaseHold(q, paymentId);
            await returnDailyAllowance(q, {
              keyId: auth.keyId,
              rail: destination.rail,
              madeAt: now,
              amountMinor: request.amountMinor,
            });
            return violated('quote_expired');
          }
          if (consumed.kind !== 'ok') throw new QuoteTaken(consumed.message);
        }
        return { state: 'processing', subStatus: 'reserved', failureCode: null, violation: null };
      }

      const inserted = await insertPayment(q, {
        seq,
        clientId: auth.clientId,
        keyId: auth.keyId,
        idempotencyKey,
        fingerprint,
        state: decision.state,
        subStatus: decision.subStatus,
        failureCode: decision.failureCode,
        amountMinor: request.amountMinor,
        rail: destination.rail,
        account: destination.account,
        bankCode: destination.bankCode,
        docType: destination.docType,
        docNumber: destination.docNumber,
        beneficiaryName: destination.rail === 'CCE' ? destination.beneficiaryName : null,
        beneficiaryId,
        sourceCurrency: auth.clientCurrency,
        sourceAmountMinor,
        quoteId: request.quoteId,
        rateId,
        railReference: railReferenceFor(seq),
        dispatchedAt: decision.state === 'processing' ? now : null,
        now,
      });
      if (inserted === null) throw new DuplicateKey();
      if (inserted.state === 'failed') await recordPaymentEvent(q, deps.clock, inserted, null);
      return { payment: inserted, violation: decision.violation };
    });
    if (payment.violation !== null) {
      return { kind: 'rejected', payment: payment.payment, message: VIOLATION_MESSAGE[payment.violation] };
    }
    return { kind: 'created', payment: payment.payment };
  } catch (err) {
    if (err instanceof BeneficiaryArchived) return fail(404, 'beneficiary not found: it is archived');
    if (err instanceof QuoteTaken || err instanceof DuplicateKey) {
      // A concurrent request with the same key may have committed first: answer as its replay (or conflict).
      const again = await replayOf(deps, auth.clientId, idempotencyKey, fingerprint);
      if (again !== null) return again;
      if (err instanceof QuoteTaken) return fail(409, 'quote already used');
    }
    throw err;
  }
}

async function replayOf(
  deps: CreateDeps,
  clientId: string,
  idempotencyKey: string,
  fingerprint: string,
): Promise<CreateOutcome | null> {
  const existing = await findByIdempotencyKey(deps.db, clientId, idempotencyKey);
  if (existing === null) return null;
  if (existing.fingerprint !== fingerprint) {
    return fail(409, 'idempotency-key already used with different content');
  }
  return { kind: 'replayed', payment: existing };
}
