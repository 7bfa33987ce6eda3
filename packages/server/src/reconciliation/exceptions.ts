import type { Db, Queryable } from '../db/db.ts';
import type { Clock } from '../shared/clock.ts';
import { isoTime, minorFromDb } from '../shared/money.ts';
import type { ExceptionKind } from './model.ts';

/**
 * The exceptions a person handles: the only SQL over recon_exceptions. No exception touches a balance; a
 * person reads it, does what the evidence calls for outside the service (or not), and resolves it with a
 * note, which is kept with who and when.
 */

export type ExceptionStatus = 'open' | 'resolved';

export interface ReconException {
  id: string;
  seq: bigint;
  kind: ExceptionKind;
  status: ExceptionStatus;
  bankLineIds: string[];
  paymentId: string | null;
  currency: string | null;
  amountMinor: bigint | null;
  details: Record<string, unknown>;
  createdAt: Date;
  updatedAt: Date;
  resolvedAt: Date | null;
  resolvedBy: string | null;
  note: string | null;
}

interface Row {
  id: string;
  seq: string;
  kind: ExceptionKind;
  status: ExceptionStatus;
  bank_line_ids: string[];
  payment_id: string | null;
  currency: string | null;
  amount_minor: string | null;
  details: Record<string, unknown> | string;
  created_at: Date;
  updated_at: Date;
  resolved_at: Date | null;
  resolved_by: string | null;
  note: string | null;
}

const COLUMNS = `id, seq, kind, status, bank_line_ids, payment_id, currency, amount_minor, details, created_at,
  updated_at, resolved_at, resolved_by, note`;

function fromRow(r: Row): ReconException {
  return {
    id: r.id,
    seq: BigInt(r.seq),
    kind: r.kind,
    status: r.status,
    bankLineIds: r.bank_line_ids,
    paymentId: r.payment_id,
    currency: r.currency === null ? null : r.currency.trim(),
    amountMinor: r.amount_minor === null ? null : minorFromDb(r.amount_minor),
    details: typeof r.details === 'string' ? (JSON.parse(r.details) as Record<string, unknown>) : r.details,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
    resolvedAt: r.resolved_at,
    resolvedBy: r.resolved_by,
    note: r.note,
  };
}

export const EXCEPTION_ID = /^rex_([0-9]{16})$/;

export function seqOfExceptionId(id: string): bigint | null {
  const m = EXCEPTION_ID.exec(id);
  return m ? BigInt(m[1]!) : null;
}

/** An exception about one statement line (orphan_debit, unfunded_credit, double_debit). */
export interface NewLineException {
  kind: 'orphan_debit' | 'unfunded_credit' | 'double_debit';
  bankLineId: string;
  paymentId: string | null;
  currency: string;
  amountMinor: bigint;
  details: Record<string, unknown>;
}

export async function insertLineExceptions(q: Queryable, items: readonly NewLineException[], now: Date): Promise<void> {
  if (items.length === 0) return;
  await q.query(
    `INSERT INTO recon_exceptions (kind, bank_line_ids, payment_id, currency, amount_minor, details, created_at, updated_at)
     SELECT k, ARRAY[b], p, c, a, d::jsonb, $7, $7
       FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[], $6::text[]) AS t(k, b, p, c, a, d)`,
    [
      items.map((i) => i.kind),
      items.map((i) => i.bankLineId),
      items.map((i) => i.paymentId),
      items.map((i) => i.currency),
      items.map((i) => i.amountMinor.toString()),
      items.map((i) => JSON.stringify(i.details)),
      now,
    ],
  );
}

/** A completed payout with no real debit: flagged once per payment (a unique index keeps it once). */
export async function openMissingDebit(
  q: Queryable,
  input: { paymentId: string; currency: string; amountMinor: bigint; details: Record<string, unknown> },
  now: Date,
): Promise<void> {
  await q.query(
    `INSERT INTO recon_exceptions (kind, payment_id, currency, amount_minor, details, created_at, updated_at)
     VALUES ('missing_debit', $1, $2, $3, $4::jsonb, $5, $5)
     ON CONFLICT (payment_id) WHERE kind = 'missing_debit' DO NOTHING`,
    [input.paymentId, input.currency, input.amountMinor.toString(), JSON.stringify(input.details), now],
  );
}

/** Keeps the one open balance_mismatch of a currency up to date (opening it the first time). */
export async function upsertBalanceMismatch(
  q: Queryable,
  input: { currency: string; unexplainedMinor: bigint; details: Record<string, unknown> },
  now: Date,
): Promise<void> {
  await q.query(
    `INSERT INTO recon_exceptions (kind, currency, amount_minor, details, created_at, updated_at)
     VALUES ('balance_mismatch', $1, $2, $3::jsonb, $4, $4)
     ON CONFLICT (currency) WHERE kind = 'balance_mismatch' AND status = 'open'
     DO UPDATE SET amount_minor = EXCLUDED.amount_minor, details = EXCLUDED.details, updated_at = EXCLUDED.updated_at`,
    [input.currency, input.unexplainedMinor.toString(), JSON.stringify(input.details), now],
  );
}

/**
 * Closes open exceptions the evidence itself settled (a late debit for a missing_debit, a balance difference
 * that went away), recorded as resolved by `reconciliation` with the reason as the note.
 */
export async function autoResolve(
  q: Queryable,
  which: { kind: 'missing_debit'; paymentIds: readonly string[]; notes: readonly string[] },
  now: Date,
): Promise<void> {
  if (which.paymentIds.length === 0) return;
  await q.query(
    `UPDATE recon_exceptions e SET status = 'resolved', resolved_at = $3, resolved_by = 'reconciliation',
            note = t.n, updated_at = $3
       FROM unnest($1::text[], $2::text[]) AS t(p, n)
      WHERE e.kind = 'missing_debit' AND e.status = 'open' AND e.payment_id = t.p`,
    [which.paymentIds, which.notes, now],
  );
}

export async function resolveOpenBalanceMismatch(q: Queryable, currency: string, note: string, now: Date) {
  await q.query(
    `UPDATE recon_exceptions SET status = 'resolved', resolved_at = $2, resolved_by = 'reconciliation', note = $3,
            updated_at = $2
      WHERE kind = 'balance_mismatch' AND status = 'open' AND currency = $1`,
    [currency, now, note],
  );
}

export interface ExceptionFilter {
  status?: ExceptionStatus;
  kind?: ExceptionKind;
  beforeSeq?: bigint;
  limit: number;
}

/** Keyset page, newest first; one extra row tells whether more follow. */
export async function listExceptions(
  q: Queryable,
  f: ExceptionFilter,
): Promise<{ items: ReconException[]; hasMore: boolean }> {
  const where: string[] = [];
  const params: unknown[] = [];
  const add = (sql: string, value: unknown) => {
    params.push(value);
    where.push(sql.replace('?', `$${params.length}`));
  };
  if (f.status !== undefined) add('status = ?', f.status);
  if (f.kind !== undefined) add('kind = ?', f.kind);
  if (f.beforeSeq !== undefined) add('seq < ?', f.beforeSeq.toString());
  params.push(f.limit + 1);
  const { rows } = await q.query<Row>(
    `SELECT ${COLUMNS} FROM recon_exceptions ${where.length ? `WHERE ${where.join(' AND ')}` : ''}
     ORDER BY seq DESC LIMIT $${params.length}`,
    params,
  );
  return { items: rows.slice(0, f.limit).map(fromRow), hasMore: rows.length > f.limit };
}

export async function findException(
  q: Queryable,
  id: string,
  options: { forUpdate?: boolean } = {},
): Promise<ReconException | null> {
  const { rows } = await q.query<Row>(
    `SELECT ${COLUMNS} FROM recon_exceptions WHERE id = $1${options.forUpdate ? ' FOR UPDATE' : ''}`,
    [id],
  );
  return rows[0] ? fromRow(rows[0]) : null;
}

export type ResolveExceptionResult =
  | { kind: 'resolved'; exception: ReconException }
  | { kind: 'invalid'; message: string }
  | { kind: 'not_found' }
  | { kind: 'already_resolved'; exception: ReconException };

/**
 * A person closes an exception, with a note saying what was done. Resolving a balance_mismatch accepts the
 * difference it shows: the baseline moves by it, so the same difference is not raised again (a new one is).
 */
export async function resolveException(
  deps: { db: Db; clock: Clock },
  id: string,
  input: { note: unknown; resolvedBy?: unknown },
): Promise<ResolveExceptionResult> {
  if (typeof input.note !== 'string' || input.note.trim() === '' || input.note.length > 2000) {
    return { kind: 'invalid', message: 'note is required: a string of 1 to 2000 characters saying what was done' };
  }
  const resolvedBy = input.resolvedBy ?? 'operator';
  if (typeof resolvedBy !== 'string' || resolvedBy.trim() === '' || resolvedBy.length > 200) {
    return { kind: 'invalid', message: 'resolvedBy must be a string of 1 to 200 characters' };
  }
  const note = input.note;
  return deps.db.tx(async (q) => {
    const current = await findException(q, id, { forUpdate: true });
    if (current === null) return { kind: 'not_found' };
    if (current.status === 'resolved') return { kind: 'already_resolved', exception: current };
    const now = deps.clock.now();
    if (current.kind === 'balance_mismatch' && current.currency !== null && current.amountMinor !== null) {
      await q.query(
        `UPDATE recon_balance SET baseline_minor = baseline_minor + $2, mismatch_streak = 0 WHERE currency = $1`,
        [current.currency, current.amountMinor.toString()],
      );
    }
    const { rows } = await q.query<Row>(
      `UPDATE recon_exceptions SET status = 'resolved', resolved_at = $2, resolved_by = $3, note = $4, updated_at = $2
        WHERE id = $1 RETURNING ${COLUMNS}`,
      [id, now, resolvedBy, note],
    );
    return { kind: 'resolved', exception: fromRow(rows[0]!) };
  });
}

/** The operator's view of an exception; lines and payment are attached by the caller. */
export function exceptionView(e: ReconException) {
  return {
    id: e.id,
    kind: e.kind,
    status: e.status,
    paymentId: e.paymentId,
    currency: e.currency,
    amountMinor: e.amountMinor === null ? null : e.amountMinor.toString(),
    details: e.details,
    createdAt: isoTime(e.createdAt),
    updatedAt: isoTime(e.updatedAt),
    resolvedAt: e.resolvedAt === null ? null : isoTime(e.resolvedAt),
    resolvedBy: e.resolvedBy,
    note: e.note,
  };
}
