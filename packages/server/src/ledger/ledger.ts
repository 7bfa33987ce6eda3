import type { Queryable } from '../db/db.ts';
import { randomId } from '../shared/ids.ts';
import { minorFromDb } from '../shared/money.ts';
import { bankAccountId, clientAccountId, ensureAccount, fxAccountId } from './accounts.ts';

/**
 * The only code that writes postings and holds (besides the batch functions of migration 0013, which follow the
 * same rules). Every function takes the caller's transaction, so a payment's row, its postings and its event
 * commit together. Postings are signed (+ debit, − credit) and each entry sums to zero per currency (also
 * enforced by a deferred trigger). A client's balance row caches what it can spend,
 * available = −(sum of its postings) − (its open holds), kept ≥ 0 by a CHECK: a hold takes from it, a release
 * gives back, a posting to it (funding, reversal) moves it, and a payout settled from its hold leaves it as it is.
 * Accounts are locked in id order to avoid deadlocks.
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

/**
 * Books an entry; false when an entry with that ref exists already (nothing written). `fromHold`: the client's
 * side of the entry was already taken from its available balance by a hold (a payout), so the cache stays.
 */
export async function postEntry(
  q: Queryable,
  entry: EntryInput,
  options: { fromHold?: boolean } = {},
): Promise<boolean> {
  assertBalanced(entry.postings);
  const inserted = await q.query<{ id: string }>(
    `INSERT INTO journal_entries (kind, payment_id, funding_id, entry_ref) VALUES ($1, $2, $3, $4)
     ON CONFLICT (entry_ref) DO NOTHING RETURNING id`,
    [entry.kind, entry.paymentId ?? null, entry.fundingId ?? null, entry.entryRef],
  );
  const entryId = inserted.rows[0]?.id;
  if (entryId === undefined) return false;
  // Only client balances cache a total (the CHECK on the available balance needs it). The service's own
  // accounts (bank, FX position) are one row each for every payment of every client: updating them here would
  // serialise all bookings behind one row lock, so their balance is the sum of their postings (the balance check
  // reads it so: reconciliation/balance.ts).
  const byAccount = new Map<string, bigint>();
  for (const p of entry.postings) {
    if (isClientAccount(p.accountId)) byAccount.set(p.accountId, (byAccount.get(p.accountId) ?? 0n) + p.amountMinor);
  }
  if (!options.fromHold) {
    for (const accountId of [...byAccount.keys()].sort()) {
      // A credit (negative posting) to a client makes more available; a debit, less.
      await q.query('UPDATE ledger_accounts SET available_minor = available_minor - $2 WHERE id = $1', [
        accountId,
        byAccount.get(accountId)!.toString(),
      ]);
    }
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

const isClientAccount = (accountId: string): boolean => accountId.startsWith('client:');

export async function ensureClientAccount(q: Queryable, clientId: string, currency: string): Promise<string> {
  return ensureAccount(q, { kind: 'client_balance', clientId, currency });
}

/** Funds moved from the client's available balance into a hold; 'insufficient' when the balance does not cover it. */
export async function placeHold(
  q: Queryable,
  input: { clientId: string; currency: string; paymentId: string; amountMinor: bigint },
): Promise<'ok' | 'insufficient'> {
  // No account row yet means nothing was ever funded: the UPDATE matches nothing and the answer is insufficient.
  const accountId = clientAccountId(input.clientId, input.currency);
  const { rowCount } = await q.query(
    `UPDATE ledger_accounts SET available_minor = available_minor - $2
     WHERE id = $1 AND available_minor >= $2`,
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
  await q.query('UPDATE ledger_accounts SET available_minor = available_minor + $2 WHERE id = $1', [
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
  const postings: Posting[] = [];
  if (input.sourceCurrency === 'VES') {
    postings.push({ accountId: client, currency: 'VES', amountMinor: source });
  } else {
    postings.push(
      { accountId: client, currency: input.sourceCurrency, amountMinor: source },
      { accountId: fxAccountId(input.sourceCurrency), currency: input.sourceCurrency, amountMinor: -source },
      { accountId: fxAccountId('VES'), currency: 'VES', amountMinor: input.targetMinor },
    );
  }
  postings.push({ accountId: bankAccountId('VES'), currency: 'VES', amountMinor: -input.targetMinor });
  const booked = await postEntry(
    q,
    { kind: 'payout', entryRef: `payout:${input.paymentId}`, paymentId: input.paymentId, postings },
    { fromHold: true },
  );
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
  // The accounts a payout from this currency passes through exist before any payout needs them.
  await ensureAccount(q, { kind: 'fx_position', currency: input.currency });
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
  const { rows } = await q.query<{ available_minor: string }>(
    'SELECT available_minor FROM ledger_accounts WHERE id = $1',
    [clientAccountId(clientId, currency)],
  );
  const row = rows[0];
  return row ? minorFromDb(row.available_minor) : 0n;
}

/**
 * Added for reconciliation (issue 7), used only by `reverseCompletedPayment` in payments/lifecycle.ts: the bank
 * returned the money of a completed payout (a clearing-house return), so the payout entry is undone by its
 * mirror image. The client is credited back exactly the source amount it paid (read from the posted hold, so a
 * conversion is undone at the rate it was made), the bank account receives the VES back, and a conversion
 * passes back through the FX position of each currency. Idempotent (one reversal per payment); false when the
 * payment has no booked payout or was reversed already.
 */
export async function reversePayout(
  q: Queryable,
  input: { paymentId: string; clientId: string; sourceCurrency: string; targetMinor: bigint },
): Promise<boolean> {
  const { rows } = await q.query<{ amount_minor: string }>(
    `SELECT h.amount_minor FROM holds h
     WHERE h.payment_id = $1 AND h.status = 'posted'
       AND EXISTS (SELECT 1 FROM journal_entries e WHERE e.entry_ref = $2)`,
    [input.paymentId, `payout:${input.paymentId}`],
  );
  const row = rows[0];
  if (row === undefined) return false;
  const source = minorFromDb(row.amount_minor);
  const client = clientAccountId(input.clientId, input.sourceCurrency);
  const postings: Posting[] = [];
  if (input.sourceCurrency === 'VES') {
    postings.push({ accountId: client, currency: 'VES', amountMinor: -source });
  } else {
    postings.push(
      { accountId: client, currency: input.sourceCurrency, amountMinor: -source },
      { accountId: fxAccountId(input.sourceCurrency), currency: input.sourceCurrency, amountMinor: source },
      { accountId: fxAccountId('VES'), currency: 'VES', amountMinor: -input.targetMinor },
    );
  }
  postings.push({ accountId: bankAccountId('VES'), currency: 'VES', amountMinor: input.targetMinor });
  return postEntry(q, {
    kind: 'payout_reversal',
    entryRef: `reversal:${input.paymentId}`,
    paymentId: input.paymentId,
    postings,
  });
}
