import type { RailCode } from '../config.ts';
import type { Db } from '../db/db.ts';
import type { DocType } from '../rails/rail.ts';
import type { BatchResult } from '../shared/batcher.ts';
import type { Clock } from '../shared/clock.ts';
import type { CreateResult, ReserveItem } from './create.ts';
import { recordPaymentEvents } from './events.ts';
import type { PaymentState, SubStatus } from './model.ts';
import { findPaymentsByIds, type Payment } from './repository.ts';
import type { RuleViolation } from './rules.ts';

/**
 * The reserve phase of a batch: one call of reserve_payments (migration 0013) decides every item in arrival order
 * under locks taken in one fixed order, creates the payments with their holds, allowance and quote use, and the
 * events of those that failed at once are written in the same transaction: one commit for the batch.
 */

interface VerdictRow {
  idx: number;
  verdict:
    | 'replay'
    | 'beneficiary_archived'
    | 'quote_not_found'
    | 'quote_amount_mismatch'
    | 'quote_used'
    | 'no_rate'
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

export async function reserveBatch(
  db: Db,
  clock: Clock,
  items: readonly ReserveItem[],
): Promise<BatchResult<CreateResult>[]> {
  const at = clock.now();
  const json = JSON.stringify(items.map((item, i) => ({ i, ...item })));
  return db.tx(async (q) => {
    const { rows } = await q.query<VerdictRow>(
      `SELECT idx, verdict, payment_id, detail, out_seq::text, out_rail_reference, out_state, out_sub_status,
         out_source_amount_minor::text, out_rate_id
       FROM reserve_payments($1::jsonb, $2::timestamptz)`,
      [json, at],
    );
    // New payments are known from the request and what the function decided; only replays are read back.
    const payments = await findPaymentsByIds(
      q,
      rows.flatMap((r) => (r.verdict === 'replay' && r.payment_id !== null ? [r.payment_id] : [])),
    );
    for (const r of rows) {
      if (r.verdict === 'created') payments.set(r.payment_id!, createdPayment(r, items[r.idx]!, at));
    }
    const failedNow = rows.flatMap((r) => {
      const p = r.verdict === 'created' ? payments.get(r.payment_id!) : undefined;
      return p !== undefined && p.state === 'failed' ? [{ payment: p, previousState: null }] : [];
    });
    await recordPaymentEvents(q, clock, failedNow);

    const results: BatchResult<CreateResult>[] = items.map(() => ({
      ok: false,
      error: new Error('reserve_payments gave no verdict'),
    }));
    for (const row of rows) {
      const item = items[row.idx]!;
      const payment = row.payment_id === null ? undefined : payments.get(row.payment_id);
      results[row.idx] = { ok: true, value: resultOf(row, item, payment) };
    }
    return results;
  });
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
    case 'created':
      if (row.detail !== null) return { kind: 'rejected', payment: payment!, violation: row.detail as RuleViolation };
      return { kind: 'created', payment: payment! };
  }
}
