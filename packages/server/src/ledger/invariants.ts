import type { Queryable } from '../db/db.ts';

/**
 * The references of the money path's rows that no foreign key declares (migration 0037): each is a child table, its
 * column, and the parent table and column it names.
 */
const UNDECLARED_REFERENCES = [
  ['payments', 'client_id', 'clients', 'id'],
  ['payments', 'key_id', 'api_keys', 'id'],
  ['holds', 'account_id', 'ledger_accounts', 'id'],
  ['postings', 'entry_id', 'journal_entries', 'id'],
  ['postings', 'account_id', 'ledger_accounts', 'id'],
  ['events', 'client_id', 'clients', 'id'],
  ['key_daily_usage', 'key_id', 'api_keys', 'id'],
] as const;

/**
 * The ledger's invariants, checked from the journal itself: every entry balances per currency, every client's
 * cached available balance equals −(sum of its postings) − (its open holds), every bank account's rows of totals
 * (migration 0038) sum to its postings, no client's available balance is negative, and every payment, hold,
 * posting, event and daily usage names a parent that exists. Returns the violations (empty when the ledger is sound).
 */
export async function ledgerViolations(q: Queryable): Promise<string[]> {
  const out: string[] = [];
  for (const [child, column, parent, key] of UNDECLARED_REFERENCES) {
    const dangling = await q.query<{ ref: string; n: string }>(
      `SELECT c.${column}::text AS ref, count(*)::text AS n FROM ${child} c
       WHERE NOT EXISTS (SELECT 1 FROM ${parent} p WHERE p.${key} = c.${column}) GROUP BY c.${column}`,
    );
    for (const r of dangling.rows) out.push(`${r.n} ${child} row(s) name ${column} ${r.ref}, which ${parent} lacks`);
  }
  const unbalanced = await q.query<{ entry_id: string; currency: string; total: string }>(
    `SELECT entry_id::text, currency, sum(amount_minor)::text AS total FROM postings
     GROUP BY entry_id, currency HAVING sum(amount_minor) <> 0`,
  );
  for (const r of unbalanced.rows) out.push(`entry ${r.entry_id} off by ${r.total} ${r.currency}`);
  const perCurrency = await q.query<{ currency: string; total: string }>(
    'SELECT currency, sum(amount_minor)::text AS total FROM postings GROUP BY currency HAVING sum(amount_minor) <> 0',
  );
  for (const r of perCurrency.rows) out.push(`journal off by ${r.total} ${r.currency}`);
  const cached = await q.query<{ id: string; cached: string; actual: string }>(
    `SELECT a.id, a.available_minor::text AS cached, (-coalesce(p.total, 0) - coalesce(h.total, 0))::text AS actual
     FROM ledger_accounts a
     LEFT JOIN (SELECT account_id, sum(amount_minor) AS total FROM postings GROUP BY account_id) p ON p.account_id = a.id
     LEFT JOIN (SELECT account_id, sum(amount_minor) AS total FROM holds WHERE status = 'held' GROUP BY account_id) h
       ON h.account_id = a.id
     WHERE a.kind = 'client_balance' AND a.available_minor <> -coalesce(p.total, 0) - coalesce(h.total, 0)`,
  );
  for (const r of cached.rows) {
    out.push(`account ${r.id} caches ${r.cached} available but its postings and open holds leave ${r.actual}`);
  }
  // The bank accounts' rows of totals (migration 0038) against their postings.
  const bankTotals = await q.query<{ id: string; kept: string; actual: string }>(
    `SELECT a.id, coalesce(d.total, 0)::text AS kept, coalesce(p.total, 0)::text AS actual
     FROM ledger_accounts a
     LEFT JOIN (SELECT account_id, sum(amount_minor) AS total FROM bank_balance_deltas GROUP BY account_id) d
       ON d.account_id = a.id
     LEFT JOIN (SELECT account_id, sum(amount_minor) AS total FROM postings GROUP BY account_id) p ON p.account_id = a.id
     WHERE a.kind = 'bank' AND coalesce(d.total, 0) <> coalesce(p.total, 0)`,
  );
  for (const r of bankTotals.rows) {
    out.push(`bank account ${r.id} keeps a total of ${r.kept} but its postings sum to ${r.actual}`);
  }
  const orphanTotals = await q.query<{ id: string }>(
    `SELECT DISTINCT account_id AS id FROM bank_balance_deltas d
     WHERE NOT EXISTS (SELECT 1 FROM ledger_accounts a WHERE a.id = d.account_id AND a.kind = 'bank')`,
  );
  for (const r of orphanTotals.rows) out.push(`bank_balance_deltas names ${r.id}, which is no bank account`);
  const negative = await q.query<{ id: string }>(
    `SELECT id FROM ledger_accounts WHERE kind = 'client_balance' AND available_minor < 0`,
  );
  for (const r of negative.rows) out.push(`account ${r.id} has a negative available balance`);
  return out;
}
