import { type Db, type Queryable, statementRetrying } from '../db/db.ts';
import { prepared } from '../db/prepared.ts';
import type { BatchResult } from '../shared/batcher.ts';
import type { Clock } from '../shared/clock.ts';
import { BOOK_SQL, type BookBatch, type BookCall, type Booked, type BookRow, bookAnswers, bookCall } from './book.ts';
import type { CreateResult, ReserveItem } from './create.ts';
import { type ReserveCall, reserveAnswers, reserveCall, type VerdictRow } from './reserve.ts';

/**
 * The payment path's database step: the booking of the rail's answers for one batch and the reserve of the next
 * batch's payments in one call of advance_payments (migration 0034), so one round trip and one commit where each
 * phase had its own. Either side may be empty; a step of one side calls that side's function alone. An answer that
 * fails its payment is never booked here (the function refuses it: giving the hold back would lock a balance out of
 * order); the pipeline books those alone. A step that fails (its transaction rolled back) fails every request of
 * both sides.
 */

const ADVANCE_SQL = prepared(
  `SELECT kind, idx, verdict, payment_id, detail, out_seq, out_rail_reference, out_state, out_sub_status,
     out_source_amount_minor, out_rate_id, moved
   FROM advance_payments($1::jsonb, $2::timestamptz, $3::jsonb, $4::timestamptz)`,
);

const RESERVE_SQL = prepared(
  `SELECT idx, verdict, payment_id, detail, out_seq::text, out_rail_reference, out_state, out_sub_status,
     out_source_amount_minor::text, out_rate_id
   FROM reserve_payments($1::jsonb, $2::timestamptz)`,
);

type AdvanceRow = VerdictRow & { kind: 'reserve' | 'book'; moved: boolean | null };

export interface Advanced {
  reserved: BatchResult<CreateResult>[];
  booked: BatchResult<Booked>[];
}

export async function advanceBatch(
  db: Db,
  /** Where the step's statement goes: the lane's held connection on PostgreSQL (db/held-connection.ts). */
  step: Queryable,
  clock: Clock,
  reserve: readonly ReserveItem[],
  book: BookBatch,
): Promise<Advanced> {
  const r = reserveCall(clock, reserve);
  const b = bookCall(clock, book);
  const { reserveRows, bookRows } = await stepRows(step, r, b, reserve.length, book.length);
  // The commit is behind us: what one side fails to read back fails that side's requests only.
  const [reserved, booked] = await Promise.allSettled([
    reserveAnswers(db, reserve, r, reserveRows),
    bookAnswers(db, book, b, bookRows),
  ]);
  return {
    reserved: reserved.status === 'fulfilled' ? reserved.value : reserve.map(() => failed(reserved.reason)),
    booked:
      booked.status === 'fulfilled'
        ? booked.value.map((value) => ({ ok: true, value }))
        : book.map(() => failed(booked.reason)),
  };
}

/** A step with one side only is that side's own function: the same statement, without the joint call around it. */
async function stepRows(
  db: Queryable,
  r: ReserveCall,
  b: BookCall,
  reserves: number,
  bookings: number,
): Promise<{ reserveRows: VerdictRow[]; bookRows: BookRow[] }> {
  if (bookings === 0) {
    const { rows } = await statementRetrying<VerdictRow>(db, RESERVE_SQL, [r.json, r.at]);
    return { reserveRows: rows, bookRows: [] };
  }
  if (reserves === 0) {
    const { rows } = await statementRetrying<BookRow>(db, BOOK_SQL, [b.json, b.at]);
    return { reserveRows: [], bookRows: rows };
  }
  const { rows } = await statementRetrying<AdvanceRow>(db, ADVANCE_SQL, [r.json, r.at, b.json, b.at]);
  return {
    reserveRows: rows.filter((row) => row.kind === 'reserve'),
    bookRows: rows.flatMap((row) =>
      row.kind === 'book' ? [{ payment_id: row.payment_id!, moved: row.moved === true }] : [],
    ),
  };
}

function failed(error: unknown): { ok: false; error: unknown } {
  return { ok: false, error };
}
