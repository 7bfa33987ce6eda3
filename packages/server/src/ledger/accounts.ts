import type { Queryable } from '../db/db.ts';

/**
 * Ledger accounts. Ids are derived from what they are, so any code path can name an account without a lookup:
 * the client's balance (a liability, credit-normal), the service's bank account per currency (an asset,
 * debit-normal), and the FX position per currency through which conversions pass.
 */
export type AccountKind = 'client_balance' | 'bank' | 'fx_position';

export const clientAccountId = (clientId: string, currency: string): string => `client:${clientId}:${currency}`;
export const bankAccountId = (currency: string): string => `bank:${currency}`;
export const fxAccountId = (currency: string): string => `fx:${currency}`;

export async function ensureAccount(
  q: Queryable,
  account: { kind: AccountKind; currency: string; clientId?: string },
): Promise<string> {
  const id =
    account.kind === 'client_balance'
      ? clientAccountId(account.clientId!, account.currency)
      : account.kind === 'bank'
        ? bankAccountId(account.currency)
        : fxAccountId(account.currency);
  await q.query(
    `INSERT INTO ledger_accounts (id, kind, client_id, currency) VALUES ($1, $2, $3, $4) ON CONFLICT (id) DO NOTHING`,
    [id, account.kind, account.clientId ?? null, account.currency],
  );
  return id;
}
