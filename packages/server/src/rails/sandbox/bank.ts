import type { Db, Queryable } from '../../db/db.ts';
import type { Clock } from '../../shared/clock.ts';
import { DEFAULT_STATEMENT_PAGE_LINES, type StatementSource } from '../rail.ts';
import { insertLine, LINE_COLUMNS, type LineRow, type SandboxBankLine, toSandboxLine } from './lines.ts';
import { lockPayment } from './locks.ts';
import { createSandboxStatementSource } from './statement-source.ts';

/** The float the simulated bank opens the service's VES account with: large enough never to run dry. */
export const DEFAULT_VES_OPENING_MINOR = 10n ** 15n;

export interface SandboxBankDeps {
  db: Db;
  clock: Clock;
  /** Delay before an asynchronous simulated outcome shows (DISPERSA_SANDBOX_SETTLE_MS). */
  settleMs: number;
  /** The simulated bank's own code: a CCE transfer to it settles at once. */
  ownBankCode?: string;
  /** Opening balance per currency; VES defaults to DEFAULT_VES_OPENING_MINOR, any other to 0. */
  openingBalances?: Readonly<Record<string, bigint>>;
  /** Most lines a statement page returns. */
  statementPageSize?: number;
}

export type AddLineInput =
  | {
      direction: 'debit' | 'credit';
      amountMinor: bigint;
      /** Default VES. */
      currency?: string;
      reference: string;
      duplicateOf?: undefined;
    }
  | {
      /** An existing bank line id: book a byte-identical copy of it under a new bank line id. */
      duplicateOf: string;
      /** Optional with duplicateOf; when given they must match the original. */
      direction?: 'debit' | 'credit';
      amountMinor?: bigint;
      currency?: string;
      reference?: string;
    };

/**
 * unknown_line: duplicateOf names no line. duplicate_mismatch: a field given with duplicateOf differs
 * from the original. invalid_line: amount not positive, currency not three capital letters, or an
 * empty reference.
 */
export type AddLineError = 'unknown_line' | 'duplicate_mismatch' | 'invalid_line';

export type AddLineResult = { ok: true; line: SandboxBankLine } | { ok: false; error: AddLineError };

export interface SuppressDebitResult {
  paymentId: string;
  /** Lines of the payment booked ahead and not yet visible, now removed from the statement. */
  removedLineIds: string[];
  /** Lines of the payment already visible: they stay, as a real bank cannot unbook what it showed. */
  remainingLineIds: string[];
}

export interface SandboxBank {
  readonly ownBankCode: string;
  readonly settleMs: number;
  /** Books an incoming credit, visible at once (an operator funding). q: to book inside a caller's transaction. */
  bookCredit(
    input: { amountMinor: bigint; currency: string; reference: string },
    q?: Queryable,
  ): Promise<SandboxBankLine>;
  /** Operator control: a manual line, or a byte-identical copy of an existing one. Visible at once. */
  addLine(input: AddLineInput): Promise<AddLineResult>;
  /**
   * Operator control: the bank will not book the debit of this payment. Applies to a payment not yet
   * submitted and to one whose debit is booked but not yet visible (the debit, and a clearing-house
   * return credit with it, are removed: money that never left cannot come back). A debit already
   * visible on the statement stays; the result says which lines were removed and which remain.
   * Idempotent.
   */
  suppressDebit(paymentId: string): Promise<SuppressDebitResult>;
  /** The whole statement in (visibleAt, booking) order, including lines not yet visible (visible: false). */
  listLines(): Promise<SandboxBankLine[]>;
  /** The statement as reconciliation reads it: only lines visible at the clock's time. */
  statementSource(): StatementSource;
}

const CURRENCY = /^[A-Z]{3}$/;

export function createSandboxBank(deps: SandboxBankDeps): SandboxBank {
  const { db, clock } = deps;
  const ownBankCode = deps.ownBankCode ?? '0102';
  const openingBalance = (currency: string): bigint =>
    deps.openingBalances?.[currency] ?? (currency === 'VES' ? DEFAULT_VES_OPENING_MINOR : 0n);
  const source = createSandboxStatementSource({
    db,
    clock,
    openingBalance,
    // Reconciliation stores what it reads in one transaction, a page at least: the service asks for pages no longer
    // than its batch (rails/registry.ts); alone, the default every statement source shares.
    pageSize: deps.statementPageSize ?? DEFAULT_STATEMENT_PAGE_LINES,
  });

  async function findLine(q: Queryable, bankLineId: string): Promise<LineRow | undefined> {
    const { rows } = await q.query<LineRow>(`SELECT ${LINE_COLUMNS} FROM sandbox_bank_lines WHERE bank_line_id = $1`, [
      bankLineId,
    ]);
    return rows[0];
  }

  async function addDuplicate(input: Extract<AddLineInput, { duplicateOf: string }>): Promise<AddLineResult> {
    const now = clock.now();
    const original = await findLine(db, input.duplicateOf);
    if (original === undefined) return { ok: false, error: 'unknown_line' };
    const mismatch =
      (input.direction !== undefined && input.direction !== original.direction) ||
      (input.amountMinor !== undefined && input.amountMinor.toString(10) !== original.amount_minor) ||
      (input.currency !== undefined && input.currency !== original.currency) ||
      (input.reference !== undefined && input.reference !== original.reference);
    if (mismatch) return { ok: false, error: 'duplicate_mismatch' };
    // Byte-identical: same value date and raw text; a copy of a line not yet visible shows with it.
    const { rows } = await db.query<LineRow>(
      `INSERT INTO sandbox_bank_lines
         (direction, amount_minor, currency, value_date, reference, raw, origin, duplicate_of, created_at, visible_at)
       SELECT direction, amount_minor, currency, value_date, reference, raw, 'duplicate', bank_line_id, $2,
              greatest($2::timestamptz, visible_at)
         FROM sandbox_bank_lines WHERE bank_line_id = $1
       RETURNING ${LINE_COLUMNS}`,
      [input.duplicateOf, now],
    );
    const row = rows[0];
    // The original vanished between the two statements (a suppression removed it).
    if (row === undefined) return { ok: false, error: 'unknown_line' };
    return { ok: true, line: toSandboxLine(row, now) };
  }

  return {
    ownBankCode,
    settleMs: deps.settleMs,

    async bookCredit(input, q = db) {
      const now = clock.now();
      return insertLine(q, {
        direction: 'credit',
        amountMinor: input.amountMinor,
        currency: input.currency,
        reference: input.reference,
        origin: 'funding',
        paymentId: null,
        createdAt: now,
        visibleAt: now,
      });
    },

    async addLine(input) {
      if (input.duplicateOf !== undefined) return addDuplicate(input);
      const currency = input.currency ?? 'VES';
      if (input.amountMinor <= 0n || !CURRENCY.test(currency) || input.reference.length === 0) {
        return { ok: false, error: 'invalid_line' };
      }
      const now = clock.now();
      const line = await insertLine(db, {
        direction: input.direction,
        amountMinor: input.amountMinor,
        currency,
        reference: input.reference,
        origin: 'manual',
        paymentId: null,
        createdAt: now,
        visibleAt: now,
      });
      return { ok: true, line };
    },

    async suppressDebit(paymentId) {
      const now = clock.now();
      return db.tx(async (q) => {
        await lockPayment(q, paymentId);
        await q.query(
          'INSERT INTO sandbox_bank_suppressions (payment_id, created_at) VALUES ($1, $2) ON CONFLICT DO NOTHING',
          [paymentId, now],
        );
        // release_seq IS NULL: a line a reader was already given stays, even if the clock went back.
        const removed = await q.query<{ bank_line_id: string }>(
          `DELETE FROM sandbox_bank_lines
            WHERE payment_id = $1 AND visible_at > $2 AND release_seq IS NULL
          RETURNING bank_line_id`,
          [paymentId, now],
        );
        const remaining = await q.query<{ bank_line_id: string }>(
          'SELECT bank_line_id FROM sandbox_bank_lines WHERE payment_id = $1 ORDER BY seq',
          [paymentId],
        );
        return {
          paymentId,
          removedLineIds: removed.rows.map((r) => r.bank_line_id).sort(),
          remainingLineIds: remaining.rows.map((r) => r.bank_line_id),
        };
      });
    },

    async listLines() {
      const now = clock.now();
      const { rows } = await db.query<LineRow>(
        `SELECT ${LINE_COLUMNS} FROM sandbox_bank_lines ORDER BY visible_at, seq`,
      );
      return rows.map((row) => toSandboxLine(row, now));
    },

    statementSource() {
      return source;
    },
  };
}
