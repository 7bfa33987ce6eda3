import type { Queryable } from '../db/db.ts';
import { randomId } from '../shared/ids.ts';
import { minorFromDb } from '../shared/money.ts';
import { bankAccountId, clientAccountId, ensureAccount, fxAccountId } from './accounts.ts';

/**
 * The only code that writes postings and holds. Every function takes the caller's transaction, so a payment's
 * row, its postings and its event commit together. Postings are signed (+ debit, − credit) and each entry sums
 * to zero per currency (also enforced by a deferred trigger). Accounts are locked in id order to avoid deadlocks.
 */

export interface Posting {
  accountId: string;
  currency: string;
  amountMinor: bigint;
}

export interface EntryInput {
  kind: string;
  /** Idempotency of booking: an entry with the same ref is never booked twice. */
  entryRef: string;
  paymentId?: string;
  fundingId?: string;
  postings: Posting[];
}

function assertBalanced(postings: readonly Posting[]): void {
  const totals = new Map<string, bigint>();
  for (const p of postings) {
    if (p.amountMinor === 0n) throw new Error('a posting of zero');
    totals.set(p.currency, (totals.get(p.currency) ?? 0n) + p.amountMinor);
  }
  for (const [currency, total] of totals) {
    if (total !== 0n) throw new Error(`entry does not balance in ${currency}: ${total}`);
  }
}

/** Books an entry; false when an entry with that ref exists already (nothing written). */
export async function postEntry(q: Queryable, entry: EntryInput): Promise<boolean> {
  assertBalanced(entry.postings);
  const inserted = await q.query<{ id: string }>(
    `INSERT INTO journal_entries (kind, payment_id, funding_id, entry_ref) VALUES ($1, $2, $3, $4)
     ON CONFLICT (entry_ref) DO NOTHING RETURNING id`,
    [entry.kind, entry.paymentId ?? null, entry.fundingId ?? null, entry.entryRef],
  );
  const entryId = inserted.rows[0]?.id;
  if (entryId === undefined) return false;
  const byAccount = new Map<string, bigint>();
  for (const p of entry.postings) byAccount.set(p.accountId, (byAccount.get(p.accountId) ?? 0n) + p.amountMinor);
  for (const accountId of [...byAccount.keys()].sort()) {
    await q.query('UPDATE ledger_accounts SET posted_minor = posted_minor + $2 WHERE id = $1', [
      accountId,
      byAccount.get(accountId)!.toString(),
    ]);
  }
  await q.query(
    `INSERT INTO postings (entry_id, account_id, currency, amount_minor)
     SELECT $1, a, c, m FROM unnest($2::text[], $3::text[], $4::bigint[]) AS t(a, c, m)`,
    [
      entryId,
      entry.postings.map((p) => p.accountId),
      entry.postings.map((p) => p.currency),
      entry.postings.map((p) => p.amountMinor.toString()),
    ],
  );
  return true;
}

export async function ensureClientAccount(q: Queryable, clientId: string, currency: string): Promise<string> {
  return ensureAccount(q, { kind: 'client_balance', clientId, currency });
}

/** Funds moved from the client's available balance into a hold; 'insufficient' when the balance does not cover it. */
export async function placeHold(
  q: Queryable,
  input: { clientId: string; currency: string; paymentId: string; amountMinor: bigint },
): Promise<'ok' | 'insufficient'> {
  const accountId = await ensureClientAccount(q, input.clientId, input.currency);
  const { rowCount } = await q.query(
    `UPDATE ledger_accounts SET held_minor = held_minor + $2
     WHERE id = $1 AND -posted_minor - held_minor >= $2`,
    [accountId, input.amountMinor.toString()],
  );
  if (rowCount === 0) return 'insufficient';
  await q.query('INSERT INTO holds (id, account_id, payment_id, currency, amount_minor) VALUES ($1, $2, $3, $4, $5)', [
    randomId('hld'),
    accountId,
    input.paymentId,
    input.currency,
    input.amountMinor.toString(),
  ]);
  return 'ok';
}

interface OpenHold {
  account_id: string;
  currency: string;
  amount_minor: string;
}

async function closeHold(q: Queryable, paymentId: string, status: 'posted' | 'released'): Promise<OpenHold | null> {
  const { rows } = await q.query<OpenHold>(
    `UPDATE holds SET status = $2, closed_at = now() WHERE payment_id = $1 AND status = 'held'
     RETURNING account_id, currency, amount_minor`,
    [paymentId, status],
  );
  return rows[0] ?? null;
}

/** Releases the payment's open hold (failed payment): the money is available again. No-op without a hold. */
export async function releaseHold(q: Queryable, paymentId: string): Promise<boolean> {
  const hold = await closeHold(q, paymentId, 'released');
  if (hold === null) return false;
  await q.query('UPDATE ledger_accounts SET held_minor = held_minor - $2 WHERE id = $1', [
    hold.account_id,
    hold.amount_minor,
  ]);
  return true;
}

/**
 * Turns the payment's hold into the debit of a completed payout: the client pays `source` in its currency and the
 * service's bank pays `target` VES; a conversion passes through the FX position of each currency.
 */
export async function settlePayout(
  q: Queryable,
  input: { paymentId: string; clientId: string; sourceCurrency: string; targetMinor: bigint },
): Promise<boolean> {
  const hold = await closeHold(q, input.paymentId, 'posted');
  if (hold === null) return false;
  const source = minorFromDb(hold.amount_minor);
  const client = clientAccountId(input.clientId, input.sourceCurrency);
  // Release first, then post: each step leaves the available balance unchanged or higher, never below zero.
  await q.query('UPDATE ledger_accounts SET held_minor = held_minor - $2 WHERE id = $1', [client, source.toString()]);
  const postings: Posting[] = [];
  if (input.sourceCurrency === 'VES') {
    postings.push({ accountId: client, currency: 'VES', amountMinor: source });
  } else {
    await ensureAccount(q, { kind: 'fx_position', currency: input.sourceCurrency });
    await ensureAccount(q, { kind: 'fx_position', currency: 'VES' });
    postings.push(
      { accountId: client, currency: input.sourceCurrency, amountMinor: source },
      { accountId: fxAccountId(input.sourceCurrency), currency: input.sourceCurrency, amountMinor: -source },
      { accountId: fxAccountId('VES'), currency: 'VES', amountMinor: input.targetMinor },
    );
  }
  await ensureAccount(q, { kind: 'bank', currency: 'VES' });
  postings.push({ accountId: bankAccountId('VES'), currency: 'VES', amountMinor: -input.targetMinor });
  const booked = await postEntry(q, {
    kind: 'payout',
    entryRef: `payout:${input.paymentId}`,
    paymentId: input.paymentId,
    postings,
  });
  if (!booked) throw new Error(`payout of ${input.paymentId} booked twice`);
  return true;
}

/** A funding: the service's bank account receives the money, the client's balance owes it to the client. */
export async function bookFunding(
  q: Queryable,
  input: { fundingId: string; clientId: string; currency: string; amountMinor: bigint },
): Promise<void> {
  const client = await ensureClientAccount(q, input.clientId, input.currency);
  const bank = await ensureAccount(q, { kind: 'bank', currency: input.currency });
  await postEntry(q, {
    kind: 'funding',
    entryRef: `funding:${input.fundingId}`,
    fundingId: input.fundingId,
    postings: [
      { accountId: bank, currency: input.currency, amountMinor: input.amountMinor },
      { accountId: client, currency: input.currency, amountMinor: -input.amountMinor },
    ],
  });
}

/** What the client can spend now: balance minus open holds. */
export async function availableBalance(q: Queryable, clientId: string, currency: string): Promise<bigint> {
  const { rows } = await q.query<{ posted_minor: string; held_minor: string }>(
    'SELECT posted_minor, held_minor FROM ledger_accounts WHERE id = $1',
    [clientAccountId(clientId, currency)],
  );
  const row = rows[0];
  if (!row) return 0n;
  return -minorFromDb(row.posted_minor) - minorFromDb(row.held_minor);
}
