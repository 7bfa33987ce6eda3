import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ledgerViolations } from '../../src/ledger/invariants.ts';
import { compactBankDeltas } from '../../src/reconciliation/balance.ts';
import { createTestDb, type TestDb, usingPostgres } from '../support/test-db.ts';

/**
 * The bank account's balance as the reconciliation's balance check reads it (migration 0038): every statement that
 * writes postings leaves one row of its total per bank account it touched, and the check folds the rows into one
 * before it reads them, so the read stays a few rows however long the ledger grows, and always equals the sum of the
 * account's postings.
 */

let t: TestDb;
let n = 0;

beforeAll(async () => {
  t = await createTestDb();
  await t.db.query(
    `INSERT INTO ledger_accounts (id, kind, client_id, currency)
     VALUES ('bank:USD', 'bank', NULL, 'USD'), ('fx:USD', 'fx_position', NULL, 'USD')
     ON CONFLICT (id) DO NOTHING`,
  );
});
afterAll(() => t.close());

/** One statement writing one balanced entry per amount: the amount into the bank account, out of the fx position. */
async function post(amounts: bigint[], currency = 'VES'): Promise<void> {
  const entries: string[] = [];
  for (const _ of amounts) {
    const { rows } = await t.db.query<{ id: string }>(
      `INSERT INTO journal_entries (kind, entry_ref) VALUES ('test', $1) RETURNING id::text`,
      [`bank-totals-${++n}`],
    );
    entries.push(rows[0]!.id);
  }
  await t.db.query(
    `INSERT INTO postings (entry_id, account_id, currency, amount_minor)
     SELECT e, a, $3, CASE WHEN a LIKE 'bank:%' THEN m ELSE -m END
     FROM unnest($1::bigint[], $2::bigint[]) AS x(e, m) CROSS JOIN (VALUES ('bank:' || $3), ('fx:' || $3)) AS y(a)`,
    [entries, amounts.map(String), currency],
  );
}

async function totals(currency = 'VES'): Promise<{ rows: number; kept: bigint; postings: bigint }> {
  const { rows } = await t.db.query<{ rows: string; kept: string; postings: string }>(
    `SELECT (SELECT count(*) FROM bank_balance_deltas WHERE account_id = $1)::text AS rows,
            (SELECT coalesce(sum(amount_minor), 0) FROM bank_balance_deltas WHERE account_id = $1)::text AS kept,
            (SELECT coalesce(sum(amount_minor), 0) FROM postings WHERE account_id = $1)::text AS postings`,
    [`bank:${currency}`],
  );
  const r = rows[0]!;
  return { rows: Number(r.rows), kept: BigInt(r.kept), postings: BigInt(r.postings) };
}

describe("the bank account's rows of totals", () => {
  it("gain one row per statement, of that statement's total, and always sum to the postings", async () => {
    await compactBankDeltas(t.db, 'VES');
    const before = await totals();
    await post([100n, 250n, 7n]);
    await post([40n]);
    await post([1n, 2n]);
    const after = await totals();
    expect(after.rows - before.rows).toBe(3);
    expect(after.kept - before.kept).toBe(400n);
    expect(after.kept).toBe(after.postings);
    // Only bank accounts keep totals: the fx position's postings of the same statements add no row.
    const { rows } = await t.db.query<{ n: string }>(
      `SELECT count(*)::text AS n FROM bank_balance_deltas WHERE account_id NOT LIKE 'bank:%'`,
    );
    expect(rows[0]!.n).toBe('0');
  });

  it('are folded into one row by the check, per currency, keeping the sum; later statements add rows again', async () => {
    await post([5n, 6n]);
    await post([9n], 'USD');
    await post([11n], 'USD');
    const ves = await totals();
    expect(ves.rows).toBeGreaterThan(1);
    await compactBankDeltas(t.db, 'VES');
    expect(await totals()).toEqual({ rows: 1, kept: ves.kept, postings: ves.postings });
    // The other currency's rows are left as they were.
    expect((await totals('USD')).rows).toBe(2);
    await compactBankDeltas(t.db, 'USD');
    expect(await totals('USD')).toEqual({ rows: 1, kept: 20n, postings: 20n });
    // Folding a single row, or folding again, changes nothing.
    await compactBankDeltas(t.db, 'USD');
    expect(await totals('USD')).toEqual({ rows: 1, kept: 20n, postings: 20n });
    await post([3n]);
    expect(await totals()).toEqual({ rows: 2, kept: ves.kept + 3n, postings: ves.postings + 3n });
    expect(await ledgerViolations(t.db)).toEqual([]);
  });

  it('that drift from the postings are reported by the ledger invariants', async () => {
    await t.db.query(`INSERT INTO bank_balance_deltas (account_id, amount_minor) VALUES ('bank:VES', 1)`);
    const { postings } = await totals();
    expect(await ledgerViolations(t.db)).toContain(
      `bank account bank:VES keeps a total of ${postings + 1n} but its postings sum to ${postings}`,
    );
    await t.db.query(`INSERT INTO bank_balance_deltas (account_id, amount_minor) VALUES ('bank:VES', -1)`);
    expect(await ledgerViolations(t.db)).toEqual([]);
  });

  it.runIf(usingPostgres())(
    'lose and double nothing when statements commit, and another process folds, while a check folds',
    async () => {
      await post([10n]);
      let release!: () => void;
      const held = new Promise<void>((resolve) => {
        release = resolve;
      });
      let folded!: () => void;
      const deleted = new Promise<void>((resolve) => {
        folded = resolve;
      });
      // A check folds and keeps its transaction open (the rows it deleted stay locked until it commits).
      const first = t.db.tx(async (q) => {
        await compactBankDeltas(q, 'VES');
        folded();
        await held;
      });
      await deleted;
      // Meanwhile a payment's postings commit, and a second check folds: it waits for the first one's deletes.
      await post([20n, 30n]);
      const second = t.db.tx((q) => compactBankDeltas(q, 'VES'));
      await new Promise((resolve) => setTimeout(resolve, 100));
      release();
      await Promise.all([first, second]);
      const after = await totals();
      expect(after.kept).toBe(after.postings);
      expect(after.rows).toBeLessThanOrEqual(2);
      await compactBankDeltas(t.db, 'VES');
      expect(await totals()).toEqual({ rows: 1, kept: after.postings, postings: after.postings });
    },
  );
});
