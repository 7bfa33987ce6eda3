import type { Queryable } from '../../db/db.ts';
import { minorFromDb } from '../../shared/money.ts';
import type { BankStatementLine } from '../rail.ts';

/** How a line came onto the simulated statement. */
export type LineOrigin = 'payout' | 'return' | 'funding' | 'manual' | 'duplicate';

/** A line of the simulated statement as the operator sees it, including lines not yet visible. */
export interface SandboxBankLine extends BankStatementLine {
  origin: LineOrigin;
  /** The payment whose payout (or return) booked it; null for fundings and operator lines. */
  paymentId: string | null;
  /** For a duplicate: the bank line id it copies. */
  duplicateOf: string | null;
  createdAt: Date;
  visibleAt: Date;
  /** Whether the line shows on the statement at the clock's current time. */
  visible: boolean;
}

export interface NewLine {
  direction: 'debit' | 'credit';
  amountMinor: bigint;
  currency: string;
  reference: string;
  origin: LineOrigin;
  paymentId: string | null;
  createdAt: Date;
  visibleAt: Date;
}

/** YYYY-MM-DD of an instant, in UTC (the simulated bank books in UTC). */
export function valueDateOf(at: Date): string {
  return at.toISOString().slice(0, 10);
}

/**
 * The deterministic text of a line, without its bank id: a `;`-separated record. The reference goes
 * last so that a `;` inside it cannot shift the other fields.
 */
export function renderRaw(line: {
  valueDate: string;
  direction: 'debit' | 'credit';
  amountMinor: bigint;
  currency: string;
  reference: string;
}): string {
  const dc = line.direction === 'debit' ? 'D' : 'C';
  return `${line.valueDate};${dc};${line.amountMinor.toString(10)};${line.currency};${line.reference}`;
}

export const LINE_COLUMNS = `bank_line_id, direction, amount_minor, currency, to_char(value_date, 'YYYY-MM-DD') AS value_date,
  reference, raw, origin, payment_id, duplicate_of, created_at, visible_at`;

export interface LineRow {
  bank_line_id: string;
  direction: 'debit' | 'credit';
  amount_minor: string;
  currency: string;
  value_date: string;
  reference: string;
  raw: string;
  origin: LineOrigin;
  payment_id: string | null;
  duplicate_of: string | null;
  created_at: Date | string;
  visible_at: Date | string;
}

export function toStatementLine(row: LineRow): BankStatementLine {
  return {
    bankLineId: row.bank_line_id,
    direction: row.direction,
    amountMinor: minorFromDb(row.amount_minor),
    currency: row.currency,
    valueDate: row.value_date,
    reference: row.reference,
    raw: row.raw,
  };
}

export function toSandboxLine(row: LineRow, now: Date): SandboxBankLine {
  const visibleAt = new Date(row.visible_at);
  return {
    ...toStatementLine(row),
    origin: row.origin,
    paymentId: row.payment_id,
    duplicateOf: row.duplicate_of,
    createdAt: new Date(row.created_at),
    visibleAt,
    visible: visibleAt.getTime() <= now.getTime(),
  };
}

/** Books a line; its value date is the day it becomes visible. */
export async function insertLine(q: Queryable, line: NewLine): Promise<SandboxBankLine> {
  const valueDate = valueDateOf(line.visibleAt);
  const raw = renderRaw({ ...line, valueDate });
  const { rows } = await q.query<LineRow>(
    `INSERT INTO sandbox_bank_lines
       (direction, amount_minor, currency, value_date, reference, raw, origin, payment_id, created_at, visible_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
     RETURNING ${LINE_COLUMNS}`,
    [
      line.direction,
      line.amountMinor.toString(10),
      line.currency,
      valueDate,
      line.reference,
      raw,
      line.origin,
      line.paymentId,
      line.createdAt,
      line.visibleAt,
    ],
  );
  return toSandboxLine(one(rows), line.createdAt);
}

export function one<T>(rows: T[]): T {
  const row = rows[0];
  if (row === undefined) throw new Error('expected one row, got none');
  return row;
}
