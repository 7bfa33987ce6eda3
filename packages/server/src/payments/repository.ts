import { randomBytes } from 'node:crypto';
import type { RailCode } from '../config.ts';
import type { Queryable } from '../db/db.ts';
import { prepared } from '../db/prepared.ts';
import type { DocType } from '../rails/rail.ts';
import { isoTime, minorFromDb } from '../shared/money.ts';
import type { PaymentState, PublicPayment, SubStatus } from './model.ts';
import { publicPaymentOf } from './public-view.ts';

/** The payments table: the only SQL over it lives here. */

export interface Payment {
  id: string;
  seq: bigint;
  clientId: string;
  keyId: string;
  idempotencyKey: string;
  fingerprint: string;
  state: PaymentState;
  subStatus: SubStatus;
  failureCode: string | null;
  amountMinor: bigint;
  currency: 'VES';
  rail: RailCode;
  account: string;
  bankCode: string | null;
  docType: DocType | null;
  docNumber: string | null;
  beneficiaryName: string | null;
  beneficiaryId: string | null;
  sourceCurrency: string;
  sourceAmountMinor: bigint;
  quoteId: string | null;
  rateId: string | null;
  railReference: string;
  dispatchedAt: Date | null;
  unknownSince: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

interface Row {
  id: string;
  seq: string;
  client_id: string;
  key_id: string;
  idempotency_key: string;
  fingerprint: string;
  state: PaymentState;
  sub_status: SubStatus;
  failure_code: string | null;
  amount_minor: string;
  currency: string;
  rail: RailCode;
  account: string;
  bank_code: string | null;
  doc_type: DocType | null;
  doc_number: string | null;
  beneficiary_name: string | null;
  beneficiary_id: string | null;
  source_currency: string;
  source_amount_minor: string;
  quote_id: string | null;
  rate_id: string | null;
  rail_reference: string;
  dispatched_at: Date | null;
  unknown_since: Date | null;
  created_at: Date;
  updated_at: Date;
}

export const PAYMENT_COLUMNS = `id, seq, client_id, key_id, idempotency_key, fingerprint, state, sub_status, failure_code,
  amount_minor, currency, rail, account, bank_code, doc_type, doc_number, beneficiary_name, beneficiary_id,
  source_currency, source_amount_minor, quote_id, rate_id, rail_reference, dispatched_at, unknown_since, created_at,
  updated_at`;

export function paymentFromRow(r: Row): Payment {
  return {
    id: r.id,
    seq: BigInt(r.seq),
    clientId: r.client_id,
    keyId: r.key_id,
    idempotencyKey: r.idempotency_key,
    fingerprint: r.fingerprint,
    state: r.state,
    subStatus: r.sub_status,
    failureCode: r.failure_code,
    amountMinor: minorFromDb(r.amount_minor),
    currency: 'VES',
    rail: r.rail,
    account: r.account,
    bankCode: r.bank_code,
    docType: r.doc_type,
    docNumber: r.doc_number,
    beneficiaryName: r.beneficiary_name,
    beneficiaryId: r.beneficiary_id,
    sourceCurrency: r.source_currency.trim(),
    sourceAmountMinor: minorFromDb(r.source_amount_minor),
    quoteId: r.quote_id,
    rateId: r.rate_id,
    railReference: r.rail_reference,
    dispatchedAt: r.dispatched_at,
    unknownSince: r.unknown_since,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
}

/** Public ids carry the sequence, zero-padded, so that ordering ids as text orders payments by creation. */
export const PAYMENT_ID = /^pay_([0-9]{16})$/;
export const paymentIdOf = (seq: bigint): string => `pay_${seq.toString().padStart(16, '0')}`;

export function seqOfPaymentId(id: string): bigint | null {
  const m = PAYMENT_ID.exec(id);
  return m ? BigInt(m[1]!) : null;
}

export function toPublicPayment(p: Payment): PublicPayment {
  return publicPaymentOf({
    id: p.id,
    state: p.state,
    subStatus: p.subStatus,
    amountMinor: p.amountMinor.toString(),
    rail: p.rail,
    account: p.account,
    createdAt: isoTime(p.createdAt),
    updatedAt: isoTime(p.updatedAt),
    failureCode: p.failureCode,
    beneficiaryId: p.beneficiaryId,
    sourceCurrency: p.sourceCurrency,
    sourceAmountMinor: p.sourceAmountMinor.toString(),
    quoteId: p.quoteId,
  });
}

/**
 * The identifier the bank sees: DSP, the sequence in base 36 over 10 digits, and 8 random hex digits; unique by
 * the sequence, unguessable by the suffix, within bank charset limits. The reserve SQL (payment_rail_reference
 * in migration 0013) builds the same shape for the payments it creates.
 */
export function railReferenceFor(seq: bigint): string {
  return `DSP${seq.toString(36).toUpperCase().padStart(10, '0')}${randomBytes(4).toString('hex').toUpperCase()}`;
}

export async function nextPaymentSeq(q: Queryable): Promise<bigint> {
  const { rows } = await q.query<{ seq: string }>("SELECT nextval('payment_seq')::text AS seq");
  return BigInt(rows[0]!.seq);
}

export interface NewPayment {
  seq: bigint;
  clientId: string;
  keyId: string;
  idempotencyKey: string;
  fingerprint: string;
  state: PaymentState;
  subStatus: SubStatus;
  failureCode: string | null;
  amountMinor: bigint;
  rail: RailCode;
  account: string;
  bankCode: string | null;
  docType: DocType | null;
  docNumber: string | null;
  beneficiaryName: string | null;
  beneficiaryId: string | null;
  sourceCurrency: string;
  sourceAmountMinor: bigint;
  quoteId: string | null;
  rateId: string | null;
  railReference: string;
  /** Set when the payment goes straight to its rail (state processing): from then on it is never submitted again. */
  dispatchedAt: Date | null;
  now: Date;
}

/** Inserts unless the client already used the idempotency key; null then (the caller reads the existing one). */
export async function insertPayment(q: Queryable, p: NewPayment): Promise<Payment | null> {
  const { rows } = await q.query<Row>(
    `INSERT INTO payments (id, seq, client_id, key_id, idempotency_key, fingerprint, state, sub_status, failure_code,
       amount_minor, currency, rail, account, bank_code, doc_type, doc_number, beneficiary_name, beneficiary_id,
       source_currency, source_amount_minor, quote_id, rate_id, rail_reference, dispatched_at, created_at, updated_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, 'VES', $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21,
       $22, $24, $23, $23)
     ON CONFLICT ((client_id || ' ' || idempotency_key)) DO NOTHING
     RETURNING ${PAYMENT_COLUMNS}`,
    [
      paymentIdOf(p.seq),
      p.seq.toString(),
      p.clientId,
      p.keyId,
      p.idempotencyKey,
      p.fingerprint,
      p.state,
      p.subStatus,
      p.failureCode,
      p.amountMinor.toString(),
      p.rail,
      p.account,
      p.bankCode,
      p.docType,
      p.docNumber,
      p.beneficiaryName,
      p.beneficiaryId,
      p.sourceCurrency,
      p.sourceAmountMinor.toString(),
      p.quoteId,
      p.rateId,
      p.railReference,
      p.now,
      p.dispatchedAt,
    ],
  );
  return rows[0] ? paymentFromRow(rows[0]) : null;
}

export async function findPayment(
  q: Queryable,
  id: string,
  options: { clientId?: string; forUpdate?: boolean } = {},
): Promise<Payment | null> {
  const params: unknown[] = [id];
  let where = 'id = $1';
  if (options.clientId !== undefined) {
    params.push(options.clientId);
    where += ' AND client_id = $2';
  }
  const { rows } = await q.query<Row>(
    `SELECT ${PAYMENT_COLUMNS} FROM payments WHERE ${where}${options.forUpdate ? ' FOR UPDATE' : ''}`,
    params,
  );
  return rows[0] ? paymentFromRow(rows[0]) : null;
}

// The hot read (signed GETs, replays) as one JSON text per row (payments_json, migration 0028). Both drivers decode a
// result column by column in JavaScript, and on the embedded database that decoding was the largest single cost of a
// signed GET; JSON.parse is native. 64-bit numbers travel as text; timestamps as ISO 8601.
const PAYMENTS_BY_IDS_SQL = prepared('SELECT payments_json AS payment FROM payments_json($1::text[])');

type JsonRow = Omit<Row, 'dispatched_at' | 'unknown_since' | 'created_at' | 'updated_at'> & {
  dispatched_at: string | null;
  unknown_since: string | null;
  created_at: string;
  updated_at: string;
};

/** A payment from the JSON text payments_json (migration 0028) renders of its row. */
export function paymentFromJson(text: string): Payment {
  const r = JSON.parse(text) as JsonRow;
  const time = (t: string | null): Date | null => (t === null ? null : new Date(t));
  return paymentFromRow({
    ...r,
    dispatched_at: time(r.dispatched_at),
    unknown_since: time(r.unknown_since),
    created_at: new Date(r.created_at),
    updated_at: new Date(r.updated_at),
  });
}

/** Several payments by id in one query (a batch); ids not found are absent from the map. */
export async function findPaymentsByIds(q: Queryable, ids: readonly string[]): Promise<Map<string, Payment>> {
  const out = new Map<string, Payment>();
  if (ids.length === 0) return out;
  const { rows } = await q.query<{ payment: string }>(PAYMENTS_BY_IDS_SQL, [ids]);
  for (const row of rows) {
    const payment = paymentFromJson(row.payment);
    out.set(payment.id, payment);
  }
  return out;
}

export async function findByRailReference(q: Queryable, railReference: string): Promise<Payment | null> {
  const { rows } = await q.query<Row>(`SELECT ${PAYMENT_COLUMNS} FROM payments WHERE rail_reference = $1`, [
    railReference,
  ]);
  return rows[0] ? paymentFromRow(rows[0]) : null;
}

export async function updateStatus(
  q: Queryable,
  id: string,
  to: { state: PaymentState; subStatus: SubStatus; failureCode: string | null; unknownSince: Date | null; now: Date },
): Promise<Payment> {
  const { rows } = await q.query<Row>(
    `UPDATE payments SET state = $2, sub_status = $3, failure_code = $4, unknown_since = $5, updated_at = $6
     WHERE id = $1 RETURNING ${PAYMENT_COLUMNS}`,
    [id, to.state, to.subStatus, to.failureCode, to.unknownSince, to.now],
  );
  return paymentFromRow(rows[0]!);
}

export interface ListFilter {
  clientId?: string;
  state?: PaymentState;
  subStatus?: string;
  beforeSeq?: bigint;
  limit: number;
}

/** Keyset page, newest first. Fetches one extra row to know whether more follow. */
export async function listPayments(q: Queryable, f: ListFilter): Promise<{ items: Payment[]; hasMore: boolean }> {
  const where: string[] = [];
  const params: unknown[] = [];
  const add = (sql: string, value: unknown) => {
    params.push(value);
    where.push(sql.replace('?', `$${params.length}`));
  };
  if (f.clientId !== undefined) add('client_id = ?', f.clientId);
  if (f.state !== undefined) add('state = ?', f.state);
  if (f.subStatus !== undefined) add('sub_status = ?', f.subStatus);
  if (f.beforeSeq !== undefined) add('seq < ?', f.beforeSeq.toString());
  params.push(f.limit + 1);
  const { rows } = await q.query<Row>(
    `SELECT ${PAYMENT_COLUMNS} FROM payments ${where.length ? `WHERE ${where.join(' AND ')}` : ''}
     ORDER BY seq DESC LIMIT $${params.length}`,
    params,
  );
  const items = rows.slice(0, f.limit).map(paymentFromRow);
  return { items, hasMore: rows.length > f.limit };
}
