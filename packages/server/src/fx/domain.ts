import type { AppContext } from '../context.ts';
import type { Domain } from '../domain.ts';
import { createQuoteService, type QuoteService, quoteConfigFrom } from './quotes.ts';
import { createRateService, type RateService } from './rates.ts';

/** Rates, quotes, the sandbox rate publisher and their routes. */
export interface FxDomain extends Domain {
  rates: RateService;
  quotes: QuoteService;
  /** Sandbox first start: make sure a rate for base/VES is in force. */
  ensureRate(base: string): Promise<void>;
}

export function createFxDomain(ctx: AppContext): FxDomain {
  const rates = createRateService({ db: ctx.db, clock: ctx.clock });
  const quotes = createQuoteService({ db: ctx.db, clock: ctx.clock, rates, config: quoteConfigFrom(ctx.config) });
  return {
    rates,
    quotes,
    async ensureRate() {},
  };
}
