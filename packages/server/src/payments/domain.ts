import type { BeneficiaryDomain } from '../beneficiaries/domain.ts';
import type { AppContext } from '../context.ts';
import type { Queryable } from '../db/db.ts';
import type { Domain } from '../domain.ts';
import type { FxDomain } from '../fx/domain.ts';

export interface PaymentDomain extends Domain {
  balances: { available(q: Queryable, clientId: string, currency: string): Promise<bigint> };
  railIsSimulated(): boolean;
  fundForSeed(clientId: string, amountMinor: bigint, reference: string): Promise<void>;
}

export async function createPaymentDomain(
  ctx: AppContext,
  _deps: { fx: FxDomain; beneficiaries: BeneficiaryDomain },
): Promise<PaymentDomain> {
  return {
    balances: { available: async () => 0n },
    railIsSimulated: () => ctx.config.env === 'sandbox' || ctx.config.bankGateway === null,
    async fundForSeed() {},
  };
}
