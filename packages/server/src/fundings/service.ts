import { getClient } from '../clients/service.ts';
import { type Db, isUniqueViolation, type Queryable } from '../db/db.ts';
import { bookFunding } from '../ledger/ledger.ts';
import type { Clock } from '../shared/clock.ts';
import { randomId } from '../shared/ids.ts';
import { MAX_BALANCE_MINOR, MAX_FUNDING_MINOR, minorFromDb, parsePositiveMinor } from '../shared/money.ts';

/**
 * Money in: an operator records a client's funding; the balance rises at once (the service's bank account against
 * the client's balance). The reference is what the bank's credit line carries, so reconciliation can match it.
 */
export interface Funding {
  fundingId: string;
  clientId: string;
  amountMinor: bigint;
  currency: string;
  reference: string;
  createdAt: Date;
}

export type CreateFundingResult =
  | { kind: 'created'; funding: Funding }
  | { kind: 'invalid'; message: string }
  | { kind: 'unknown_client' }
  | { kind: 'duplicate_reference' };

export interface FundingDeps {
  db: Db;
  clock: Clock;
  /** Sandbox: the simulated bank books the matching credit in the same transaction. */
  onFunded?: (q: Queryable, funding: Funding) => Promise<void>;
}

export async function createFunding(
  deps: FundingDeps,
  clientId: string,
  input: { amountMinor: unknown; reference: unknown },
): Promise<CreateFundingResult> {
  const amountMinor = parsePositiveMinor(input.amountMinor);
  if (amountMinor === null) {
    return { kind: 'invalid', message: 'amountMinor must be a string holding a positive integer of minor units' };
  }
  if (amountMinor > MAX_FUNDING_MINOR) {
    return { kind: 'invalid', message: `amountMinor must be at most ${MAX_FUNDING_MINOR} minor units per funding` };
  }
  const reference = input.reference;
  if (typeof reference !== 'string' || reference.trim() === '' || reference.length > 140) {
    return { kind: 'invalid', message: 'reference is required: a string of 1 to 140 characters' };
  }
  const client = await getClient(deps.db, clientId);
  if (client === null) return { kind: 'unknown_client' };
  try {
    const funding = await deps.db.tx(async (q) => {
      // The client's balance row, locked (NO KEY UPDATE, like every balance update): concurrent fundings of one
      // client see each other's amounts. Its balance is what it can spend plus what its open holds keep aside.
      const { rows } = await q.query<{ balance: string }>(
        `SELECT (a.available_minor + coalesce((SELECT sum(h.amount_minor) FROM holds h
                   WHERE h.account_id = a.id AND h.status = 'held'), 0))::text AS balance
           FROM ledger_accounts a
          WHERE a.kind = 'client_balance' AND a.client_id = $1 AND a.currency = $2 FOR NO KEY UPDATE OF a`,
        [clientId, client.currency],
      );
      const balance = rows[0] === undefined ? 0n : minorFromDb(rows[0].balance);
      if (balance + amountMinor > MAX_BALANCE_MINOR) return null;
      const funding: Funding = {
        fundingId: randomId('fnd'),
        clientId,
        amountMinor,
        currency: client.currency,
        reference,
        createdAt: deps.clock.now(),
      };
      await q.query(
        'INSERT INTO fundings (id, client_id, amount_minor, currency, reference, created_at) VALUES ($1, $2, $3, $4, $5, $6)',
        [funding.fundingId, clientId, amountMinor.toString(), client.currency, reference, funding.createdAt],
      );
      await bookFunding(q, { fundingId: funding.fundingId, clientId, currency: client.currency, amountMinor });
      await deps.onFunded?.(q, funding);
      return funding;
    });
    if (funding === null) {
      return {
        kind: 'invalid',
        message: `the balance would exceed ${MAX_BALANCE_MINOR} minor units, the most one balance holds`,
      };
    }
    return { kind: 'created', funding };
  } catch (err) {
    if (isUniqueViolation(err, 'fundings_reference_unique')) return { kind: 'duplicate_reference' };
    throw err;
  }
}
