import type { BeneficiaryDomain } from '../beneficiaries/domain.ts';
import type { AppContext } from '../context.ts';
import type { Queryable } from '../db/db.ts';
import type { Domain } from '../domain.ts';
import { registerFundingAdminRoutes } from '../fundings/routes.ts';
import type { FundingDeps } from '../fundings/service.ts';
import { createFunding } from '../fundings/service.ts';
import type { FxDomain } from '../fx/domain.ts';
import { availableBalance } from '../ledger/ledger.ts';
import { createRails, type RailSetup } from '../rails/registry.ts';
import { registerSandboxBankAdminRoutes } from '../rails/sandbox/admin-routes.ts';
import { registerPaymentAdminRoutes } from './admin-routes.ts';
import { createFollowUp } from './follow-up.ts';
import { registerPaymentRoutes } from './routes.ts';
import { createPaymentService, type PaymentService } from './service.ts';

/** Money in (fundings), money out (payments), balances, and the rail behind them. */
export interface PaymentDomain extends Domain {
  service: PaymentService;
  rails: RailSetup;
  balances: { available(q: Queryable, clientId: string, currency: string): Promise<bigint> };
  railIsSimulated(): boolean;
  fundForSeed(clientId: string, amountMinor: bigint, reference: string): Promise<void>;
}

export async function createPaymentDomain(
  ctx: AppContext,
  deps: { fx: FxDomain; beneficiaries: BeneficiaryDomain },
): Promise<PaymentDomain> {
  const rails = createRails(ctx);
  const service = createPaymentService({
    db: ctx.db,
    clock: ctx.clock,
    config: ctx.config,
    rates: deps.fx.rates,
    beneficiaries: deps.beneficiaries,
    rail: rails.rail,
    logger: ctx.logger,
    metrics: ctx.metrics,
    lanes: ctx.config.paymentLanes,
    maxBatch: ctx.config.paymentMaxBatch,
  });
  const bank = rails.sandboxBank;
  const fundingDeps: FundingDeps = {
    db: ctx.db,
    clock: ctx.clock,
    onFunded: bank
      ? async (q, f) => {
          await bank.bookCredit({ amountMinor: f.amountMinor, currency: f.currency, reference: f.reference }, q);
        }
      : undefined,
  };
  const followUp = createFollowUp({
    db: ctx.db,
    clock: ctx.clock,
    rail: rails.rail,
    requeryAfterMs: ctx.config.reconcileIntervalMs,
    // Never shorter than twice a gateway call: a slow answer must not be mistaken for a dead process.
    dispatchTimeoutMs: Math.max(ctx.config.dispatchTimeoutMs, 2 * (ctx.config.bankGateway?.timeoutMs ?? 0)),
    logger: ctx.logger,
    onMoved: (p) => ctx.metrics.paymentTransition(p),
  });
  const idleMs = Math.max(50, Math.min(1000, Math.floor(ctx.config.reconcileIntervalMs / 2)));

  return {
    service,
    rails,
    balances: { available: availableBalance },
    railIsSimulated: () => rails.simulated,
    async fundForSeed(clientId, amountMinor, reference) {
      const result = await createFunding(fundingDeps, clientId, { amountMinor: amountMinor.toString(), reference });
      if (result.kind !== 'created') throw new Error(`demo funding failed: ${result.kind}`);
    },
    registerPublicRoutes(app) {
      registerPaymentRoutes(app, service);
    },
    registerAdminRoutes(app) {
      registerFundingAdminRoutes(app, fundingDeps);
      registerPaymentAdminRoutes(app, {
        db: ctx.db,
        clock: ctx.clock,
        onMoved: (p) => ctx.metrics.paymentTransition(p),
      });
      if (bank) registerSandboxBankAdminRoutes(app, { bank, db: ctx.db });
    },
    workers: [
      { name: 'payments.settle-pending', processNext: followUp.settlePendingNext, idleMs },
      { name: 'payments.recover-interrupted', processNext: followUp.recoverInterruptedNext, idleMs },
    ],
  };
}
