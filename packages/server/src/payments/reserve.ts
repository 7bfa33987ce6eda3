import type { RailCode } from '../config.ts';
import type { Queryable } from '../db/db.ts';
import type { DocType } from '../rails/rail.ts';
import { type BatchResult, resultsAt } from '../shared/batcher.ts';
import type { Clock } from '../shared/clock.ts';
import { renderEvent } from '../webhooks/outbox.ts';
import type { CreateResult, ReserveItem } from './create.ts';
import { paymentEvent } from './events.ts';
import type { PaymentState, SubStatus } from './model.ts';
import { findPaymentsByIds, type Payment } from './repository.ts';
import type { RuleViolation } from './rules.ts';

/**
 * The reserve phase of a batch: reserve_payments (migrations 0013, 0025) consumes the nonces, decides every item in
 * arrival order under locks taken in one fixed order, creates the payments with their holds, allowance and quote
 * use, and writes the event of each payment that failed at once. It runs inside advance_payments (advance.ts), one
 * statement and one commit with the booking of an earlier batch.
 *
 * The event of a payment that fails at once is rendered here before the call, from the request, with a
 * placeholder for each value only the function decides (FAILED_EVENT_SLOTS); the function fills them in.
 */

/**
 * Placeholders in a failed payment's event body, as JSON strings. Each holds U+0001, which JSON renders escaped
 * and which no accepted request value can hold (http/input-rules.ts refuses control characters), so a placeholder
 * can never be met inside a value of the request. reserve_payments (migration 0025) replaces each with the JSON
 * of its value.
 */
const SLOT = {
  id: '\u0001id',
  subStatus: '\u0001subStatus',
  failureCode: '\u0001failureCode',
  sourceAmountMinor: '\u0001sourceAmountMinor',
} as const;

/** A row of reserve_payments (migration 0025), as advance_payments (0034) passes it on. */
export interface VerdictRow {
  idx: number;
  verdict:
    | 'replay'
    | 'beneficiary_archived'
    | 'quote_not_found'
    | 'quote_amount_mismatch'
    | 'quote_used'
    | 'no_rate'
    | 'nonce_replay'
    | 'key_inactive'
    | 'created';
  payment_id: string | null;
  detail: string | null;
  out_seq: string | null;
  out_rail_reference: string | null;
  out_state: PaymentState | null;
  out_sub_status: SubStatus | null;
  out_source_amount_minor: string | null;
  out_rate_id: string | null;
}

/** What the database call of a reserve batch takes: the items as JSON, with their failed events, and the time. */
export interface ReserveCall {
  json: string;
  at: Date;
}

export function reserveCall(clock: Clock, items: readonly ReserveItem[]): ReserveCall {
  const at = clock.now();
  return {
    json: JSON.stringify(items.map((item, i) => ({ i, ...item, failedEvent: failedEventTemplate(item, at) }))),
    at,
  };
}

/** Each item's result from the rows reserve_payments answered for the call (advance.ts makes the call). */
export async function reserveAnswers(
  q: Queryable,
  items: readonly ReserveItem[],
  call: ReserveCall,
  rows: readonly VerdictRow[],
): Promise<BatchResult<CreateResult>[]> {
  // New payments are known from the request and what the function decided; only replays are read (committed
  // before this batch: their keys were taken).
  const payments = await findPaymentsByIds(
    q,
    rows.flatMap((r) => (r.verdict === 'replay' && r.payment_id !== null ? [r.payment_id] : [])),
  );
  for (const r of rows) {
    if (r.verdict === 'created') payments.set(r.payment_id!, createdPayment(r, items[r.idx]!, call.at));
  }
  return resultsAt(
    items.length,
    rows.map((row) => {
      const payment = row.payment_id === null ? undefined : payments.get(row.payment_id);
      return [row.idx, resultOf(row, items[row.idx]!, payment)] as const;
    }),
    'reserve_payments gave no verdict',
  );
}

/** The event of the item's payment should it fail at once, with the function's values left as placeholders. */
function failedEventTemplate(item: ReserveItem, at: Date): { id: string; body: string } {
  const decided: VerdictRow = {
    idx: 0,
    verdict: 'created',
    payment_id: SLOT.id,
    detail: null,
    out_seq: '0',
    out_rail_reference: '',
    out_state: 'failed',
    out_sub_status: SLOT.subStatus as SubStatus,
    out_source_amount_minor: '0',
    out_rate_id: null,
  };
  const event = paymentEvent({ ...createdPayment(decided, item, at), failureCode: SLOT.failureCode }, null, at);
  const payment = event.data.payment;
  if (payment.sourceAmountMinor !== undefined) payment.sourceAmountMinor = SLOT.sourceAmountMinor;
  return renderEvent(event);
}

/** The row reserve_payments wrote, from the request and the function's answer (as paymentFromRow would read it). */
function createdPayment(r: VerdictRow, item: ReserveItem, at: Date): Payment {
  const state = r.out_state!;
  return {
    id: r.payment_id!,
    seq: BigInt(r.out_seq!),
    clientId: item.client,
    keyId: item.key,
    idempotencyKey: item.idem,
    fingerprint: item.fingerprint,
    state,
    subStatus: r.out_sub_status,
    // A rule's code comes back as detail; a refusal by us is the code the request carried.
    failureCode: state === 'failed' ? (r.detail ?? item.refused) : null,
    amountMinor: BigInt(item.amountMinor),
    currency: 'VES',
    rail: item.rail as RailCode,
    account: item.account,
    bankCode: item.bankCode,
    docType: item.docType as DocType | null,
    docNumber: item.docNumber,
    beneficiaryName: item.beneficiaryName,
    beneficiaryId: item.beneficiaryId,
    sourceCurrency: item.sourceCurrency,
    sourceAmountMinor: BigInt(r.out_source_amount_minor!),
    quoteId: item.quoteId,
    rateId: r.out_rate_id,
    railReference: r.out_rail_reference!,
    dispatchedAt: state === 'processing' ? at : null,
    unknownSince: null,
    createdAt: at,
    updatedAt: at,
  };
}

function resultOf(row: VerdictRow, item: ReserveItem, payment: Payment | undefined): CreateResult {
  switch (row.verdict) {
    case 'replay':
      if (payment!.fingerprint !== item.fingerprint) return { kind: 'refused', reason: 'key_reused' };
      return { kind: 'replayed', payment: payment! };
    case 'beneficiary_archived':
      return { kind: 'refused', reason: 'beneficiary_archived' };
    case 'quote_not_found':
      return { kind: 'refused', reason: 'quote_not_found' };
    case 'quote_amount_mismatch':
      return { kind: 'refused', reason: 'quote_amount_mismatch', targetAmountMinor: BigInt(row.detail!) };
    case 'quote_used':
      return { kind: 'refused', reason: 'quote_used' };
    case 'no_rate':
      return { kind: 'refused', reason: 'no_rate', currency: item.sourceCurrency };
    case 'nonce_replay':
      return { kind: 'refused', reason: 'nonce_replay' };
    case 'key_inactive':
      return { kind: 'refused', reason: 'key_inactive' };
    case 'created':
      if (row.detail !== null) return { kind: 'rejected', payment: payment!, violation: row.detail as RuleViolation };
      return { kind: 'created', payment: payment! };
  }
}
