import type { Db, Queryable } from '../db/db.ts';
import { bankAccountId } from '../ledger/accounts.ts';
import type { StatementSource } from '../rails/rail.ts';
import type { Clock } from '../shared/clock.ts';
import { minorFromDb } from '../shared/money.ts';
import { resolveOpenBalanceMismatch, upsertBalanceMismatch } from './exceptions.ts';
import { INGEST_LOCK, readCursor } from './ingest.ts';

/**
 * The balance check: the bank's reported balance against the ledger's bank account, per currency.
 *
 *   bank = baseline + ledger + explained + unexplained
 *
 * - baseline: what the bank holds that the ledger never saw (the account's opening balance), taken at the
 *   first check; a person resolving a mismatch accepts its difference into it.
 * - explained: the known timing and evidence differences: statement lines the ledger does not hold (lines in
 *   exceptions, a debit awaiting its return, a debit and return paired on a failed payment), completed payouts
 *   whose debit the bank has not shown yet (the debit watch, flagged or not), and fundings whose credit has
 *   not been seen (counted against).
 * - unexplained: the rest. Non-zero on `persistChecks` consecutive checks → one open balance_mismatch for
 *   the currency (kept up to date, never one per cycle) and the gauge; back to zero → closed by itself.
 *
 * Run only when ingestion has caught up, and against one position of the statement (checkDue): the bank's
 * balance and the ledger's figures then describe the same lines. A movement the ledger books with no line yet
 * (a payout, a funding) is explained by the debit watch or the fundings awaiting credit.
 */
export interface BalanceDeps {
  db: Db;
  clock: Clock;
  source: StatementSource;
  intervalMs: number;
  /** Consecutive checks with an unexplained difference before it is an exception. Default 3. */
  persistChecks?: number;
  logger: { warn(obj: object, msg: string): void };
}

export interface BalanceFigures {
  ledgerMinor: bigint;
  unbookedLinesMinor: bigint;
  payoutsAwaitingDebitMinor: bigint;
  fundingsAwaitingCreditMinor: bigint;
  explainedMinor: bigint;
}

/**
 * Folds the bank account's rows of totals (migration 0038: one row per statement that wrote its postings) into one,
 * so that reading its balance stays a read of a few rows however long the ledger grows. The rows deleted are the
 * rows summed into the new one, in one statement: a row a payment commits meanwhile is not seen, so not deleted,
 * and is folded by a later check; a second process folding at the same moment waits for this one's deletes and
 * then finds those rows gone.
 */
export async function compactBankDeltas(q: Queryable, currency: string): Promise<void> {
  await q.query(
    `WITH folded AS (DELETE FROM bank_balance_deltas WHERE account_id = $1 RETURNING amount_minor)
     INSERT INTO bank_balance_deltas (account_id, amount_minor)
     SELECT $1, sum(amount_minor) FROM folded HAVING count(*) > 0`,
    [bankAccountId(currency)],
  );
}

/**
 * The ledger's side and the explained part, read in one statement. Under READ COMMITTED each statement sees the
 * database as of its own start: read in two, a funding (or a payout) committing between them would count in the
 * ledger's balance and not among the fundings awaiting their credit (or the payouts awaiting their debit), and on
 * a currency's first check that false difference would become part of the baseline for good.
 */
export async function balanceFigures(q: Queryable, currency: string): Promise<BalanceFigures> {
  const { rows } = await q.query<{ ledger: string; unbooked: string; watched: string; fundings: string }>(
    `SELECT
       -- The bank account's balance: the sum of its postings, kept as a few rows of totals (migration 0038).
       coalesce((SELECT sum(amount_minor) FROM bank_balance_deltas WHERE account_id = $2), 0)::text AS ledger,
       coalesce((SELECT sum(CASE WHEN direction = 'credit' THEN amount_minor ELSE -amount_minor END)
                   FROM recon_lines WHERE NOT booked AND currency = $1), 0)::text AS unbooked,
       coalesce((SELECT sum(amount_minor) FROM recon_debit_watch WHERE currency = $1), 0)::text AS watched,
       coalesce((SELECT sum(f.amount_minor) FROM fundings f
                  WHERE f.currency = $1 AND NOT EXISTS (SELECT 1 FROM recon_lines l WHERE l.funding_id = f.id)), 0)::text
         AS fundings`,
    [currency, bankAccountId(currency)],
  );
  const r = rows[0]!;
  const unbooked = minorFromDb(r.unbooked);
  const watched = minorFromDb(r.watched);
  const fundings = minorFromDb(r.fundings);
  return {
    ledgerMinor: minorFromDb(r.ledger),
    unbookedLinesMinor: unbooked,
    payoutsAwaitingDebitMinor: watched,
    fundingsAwaitingCreditMinor: fundings,
    explainedMinor: unbooked + watched - fundings,
  };
}

/** The items behind the explained part, for the exception a person reads (at most `limit` of each). */
async function explanation(q: Queryable, currency: string, limit: number) {
  const lines = await q.query<{ bank_line_id: string; direction: string; amount_minor: string; status: string }>(
    `SELECT bank_line_id, direction, amount_minor, status FROM recon_lines
      WHERE NOT booked AND currency = $1 ORDER BY id DESC LIMIT $2`,
    [currency, limit],
  );
  const payouts = await q.query<{ payment_id: string; amount_minor: string; flagged: boolean }>(
    'SELECT payment_id, amount_minor, flagged FROM recon_debit_watch WHERE currency = $1 ORDER BY completed_at DESC LIMIT $2',
    [currency, limit],
  );
  const fundings = await q.query<{ id: string; amount_minor: string }>(
    `SELECT f.id, f.amount_minor FROM fundings f
      WHERE f.currency = $1 AND NOT EXISTS (SELECT 1 FROM recon_lines l WHERE l.funding_id = f.id)
      ORDER BY f.created_at DESC LIMIT $2`,
    [currency, limit],
  );
  return {
    linesNotInLedger: lines.rows.map((r) => ({
      bankLineId: r.bank_line_id,
      direction: r.direction,
      amountMinor: r.amount_minor,
      status: r.status,
    })),
    payoutsAwaitingDebit: payouts.rows.map((r) => ({
      paymentId: r.payment_id,
      amountMinor: r.amount_minor,
      flaggedMissing: r.flagged,
    })),
    fundingsAwaitingCredit: fundings.rows.map((r) => ({ fundingId: r.id, amountMinor: r.amount_minor })),
  };
}

/** The statement's cursor the bank's balances were read at (null: nothing ingested yet). */
export interface StatementPosition {
  cursor: string | null;
}

export interface BalanceCheckResult {
  currency: string;
  bankMinor: bigint;
  figures: BalanceFigures;
  baselineMinor: bigint;
  unexplainedMinor: bigint;
  streak: number;
}

export function createBalanceCheck(deps: BalanceDeps) {
  const persist = deps.persistChecks ?? 3;

  /** Currencies whose check is due: every bank account of the ledger and every currency seen on the statement. */
  async function dueCurrencies(): Promise<string[]> {
    const now = deps.clock.now();
    await deps.db.query(
      `INSERT INTO recon_balance (currency)
       SELECT currency FROM ledger_accounts WHERE kind = 'bank' ON CONFLICT (currency) DO NOTHING`,
    );
    const { rows } = await deps.db.query<{ currency: string }>(
      'SELECT currency FROM recon_balance WHERE checked_at IS NULL OR checked_at <= $1 ORDER BY currency',
      [new Date(now.getTime() - deps.intervalMs)],
    );
    return rows.map((r) => r.currency.trim());
  }

  async function readBank(currencies: readonly string[]): Promise<Map<string, bigint> | null> {
    const out = new Map<string, bigint>();
    try {
      for (const c of currencies) out.set(c, await deps.source.balance(c));
    } catch (err) {
      deps.logger.warn({ err, source: deps.source.name }, 'bank balance unavailable; retrying next cycle');
      return null;
    }
    return out;
  }

  /**
   * Compares one currency in one transaction. With `at`, the statement must still be at that position: the
   * shared ingestion lock keeps any ingestion from committing while the ledger is read, and a cursor that
   * moved since the bank was read skips the check (null) until the next pass.
   */
  async function compare(
    currency: string,
    bankMinor: bigint,
    at?: StatementPosition,
  ): Promise<BalanceCheckResult | null> {
    const result = await deps.db.tx(async (q) => {
      if (at !== undefined) {
        await q.query('SELECT pg_advisory_xact_lock_shared($1, 0)', [INGEST_LOCK]);
        if ((await readCursor(q, deps.source.name)) !== at.cursor) return null;
      }
      const now = deps.clock.now();
      const { rows } = await q.query<{
        baseline_minor: string | null;
        checked_at: Date | null;
        mismatch_streak: number;
      }>(
        'SELECT baseline_minor, checked_at, mismatch_streak FROM recon_balance WHERE currency = $1 FOR UPDATE SKIP LOCKED',
        [currency],
      );
      const row = rows[0];
      // Another process is checking it, or has just done so.
      if (row === undefined) return null;
      if (row.checked_at !== null && now.getTime() - row.checked_at.getTime() < deps.intervalMs / 2) return null;
      await compactBankDeltas(q, currency);
      const figures = await balanceFigures(q, currency);
      const difference = bankMinor - figures.ledgerMinor - figures.explainedMinor;
      const baseline = row.baseline_minor === null ? difference : minorFromDb(row.baseline_minor);
      const unexplained = difference - baseline;
      const streak = unexplained === 0n ? 0 : Number(row.mismatch_streak) + 1;
      await q.query(
        `UPDATE recon_balance SET baseline_minor = $2, checked_at = $3, bank_minor = $4, ledger_minor = $5,
                explained_minor = $6, unexplained_minor = $7, mismatch_streak = $8
          WHERE currency = $1`,
        [
          currency,
          baseline.toString(),
          now,
          bankMinor.toString(),
          figures.ledgerMinor.toString(),
          figures.explainedMinor.toString(),
          unexplained.toString(),
          streak,
        ],
      );
      if (unexplained === 0n) {
        await resolveOpenBalanceMismatch(q, currency, 'the difference went away: bank and ledger agree again', now);
      } else if (streak >= persist) {
        await upsertBalanceMismatch(
          q,
          {
            currency,
            unexplainedMinor: unexplained,
            details: {
              reason: 'unexplained_difference',
              bankMinor: bankMinor.toString(),
              ledgerMinor: figures.ledgerMinor.toString(),
              baselineMinor: baseline.toString(),
              explainedMinor: figures.explainedMinor.toString(),
              unexplainedMinor: unexplained.toString(),
              consecutiveChecks: streak,
              explainedBy: await explanation(q, currency, 20),
            },
          },
          now,
        );
      }
      return { currency, bankMinor, figures, baselineMinor: baseline, unexplainedMinor: unexplained, streak };
    });
    return result;
  }

  /**
   * Checks every due currency against one position of the statement. The cursor is read before the bank's
   * balances; `caughtUpAt` is asked after them (it ingests what is new and answers the cursor only when there
   * was nothing). The same cursor both times means the balances hold exactly the lines ingested up to it:
   * nothing new showed and no other process ingested meanwhile. Otherwise the check waits for the next pass,
   * for a line ingested between the bank's read and the ledger's would count in the ledger and not in the
   * bank's figure, and on a currency's first check become part of the baseline for good.
   */
  async function checkDue(caughtUpAt: () => Promise<StatementPosition | null>): Promise<BalanceCheckResult[]> {
    const currencies = await dueCurrencies();
    if (currencies.length === 0) return [];
    const before = await readCursor(deps.db, deps.source.name);
    const bank = await readBank(currencies);
    if (bank === null) return [];
    const after = await caughtUpAt();
    if (after === null || after.cursor !== before) return [];
    const out: BalanceCheckResult[] = [];
    for (const [currency, minor] of bank) {
      const r = await compare(currency, minor, after);
      if (r !== null) out.push(r);
    }
    return out;
  }

  return { checkDue, compare, dueCurrencies };
}
