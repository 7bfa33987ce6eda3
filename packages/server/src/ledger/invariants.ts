import type { Queryable } from '../db/db.ts';

/**
 * The ledger's invariants, checked from the journal itself: every entry balances per currency, every cached
 * client balance equals the sum of its postings (the service's own accounts are not cached), every cached hold total equals the sum of its open holds, and no
 * client's available balance is negative. Returns the violations (empty when the ledger is sound).
 */
export async function ledgerViolations(q: Queryable): Promise<string[]> {
  const out: string[] = [];
  const unbalanced = await q.query<{ entry_id: string; currency: string; total: string }>(
    `SELECT entry_id::text, currency, sum(amount_minor)::text AS total FROM postings
     GROUP BY entry_id, currency HAVING sum(amount_minor) <> 0`,
  );
  for (const r of unbalanced.rows) out.push(`entry ${r.entry_id} off by ${r.total} ${r.currency}`);
  const perCurrency = await q.query<{ currency: string; total: string }>(
    'SELECT currency, sum(amount_minor)::text AS total FROM postings GROUP BY currency HAVING sum(amount_minor) <> 0',
  );
  for (const r of perCurrency.rows) out.push(`journal off by ${r.total} ${r.currency}`);
  const cached = await q.query<{ id: string; posted: string; actual: string }>(
    `SELECT a.id, a.posted_minor::text AS posted, coalesce(sum(p.amount_minor), 0)::text AS actual
     FROM ledger_accounts a LEFT JOIN postings p ON p.account_id = a.id
     WHERE a.kind = 'client_balance'
     GROUP BY a.id, a.posted_minor HAVING a.posted_minor <> coalesce(sum(p.amount_minor), 0)`,
  );
  for (const r of cached.rows) out.push(`account ${r.id} caches ${r.posted} but postings sum to ${r.actual}`);
  const held = await q.query<{ id: string; held: string; actual: string }>(
    `SELECT a.id, a.held_minor::text AS held, coalesce(sum(h.amount_minor) FILTER (WHERE h.status = 'held'), 0)::text AS actual
     FROM ledger_accounts a LEFT JOIN holds h ON h.account_id = a.id
     GROUP BY a.id, a.held_minor HAVING a.held_minor <> coalesce(sum(h.amount_minor) FILTER (WHERE h.status = 'held'), 0)`,
  );
  for (const r of held.rows) out.push(`account ${r.id} caches holds ${r.held} but open holds sum to ${r.actual}`);
  const negative = await q.query<{ id: string }>(
    `SELECT id FROM ledger_accounts WHERE kind = 'client_balance' AND -posted_minor - held_minor < 0`,
  );
  for (const r of negative.rows) out.push(`account ${r.id} has a negative available balance`);
  return out;
}
