import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../context.ts';
import type { Domain } from '../domain.ts';
import { registerFxAdminRoutes } from './admin-routes.ts';
import { QUOTE_CURRENCY } from './model.ts';
import { registerFxPublicRoutes } from './public-routes.ts';
import { createQuoteService, type QuoteService, quoteConfigFrom } from './quotes.ts';
import { keepingRateInForce } from './rate-keeper.ts';
import { createSandboxRatePublisher, type RateSource } from './rate-publisher.ts';
import { createRateService, type RateService } from './rates.ts';

/** Rates, quotes, the sandbox rate publisher and their routes. */
export interface FxDomain extends Domain {
  rates: RateService;
  quotes: QuoteService;
  /** Sandbox first start: make sure a rate for base/VES is in force. */
  ensureRate(base: string): Promise<void>;
}

/** The sandbox demo pair and how its rate moves: a 10-minute life, republished once half of it is gone. */
export const SANDBOX_RATE = {
  base: 'USD',
  start: '36.5',
  lifetimeMs: 10 * 60_000,
  driftBps: 25,
  /** How often the publisher looks; far below half the lifetime, so the rate in force is always fresh. */
  tickMs: 5_000,
} as const;

/**
 * On a sandbox the publisher keeps SANDBOX_RATE.base in force. In production there is no publisher: rates
 * come from the operator (POST /admin/v1/rates). A market feed would be another RateSource, started here the
 * same way and publishing through RateService.publish.
 */
export function createFxDomain(ctx: AppContext): FxDomain {
  const { db, clock, logger } = ctx;
  const published = createRateService({ db, clock });
  const reportError = (err: unknown): void => logger.error({ err }, 'sandbox rate publisher failed');
  const publisher: RateSource | null =
    ctx.config.env === 'sandbox'
      ? createSandboxRatePublisher({
          rates: published,
          clock,
          base: SANDBOX_RATE.base,
          start: SANDBOX_RATE.start,
          lifetimeMs: SANDBOX_RATE.lifetimeMs,
          driftBps: SANDBOX_RATE.driftBps,
          onError: reportError,
        })
      : null;
  const rates =
    publisher === null ? published : keepingRateInForce(published, publisher, SANDBOX_RATE.base, reportError);
  const quotes = createQuoteService({ db, clock, rates, config: quoteConfigFrom(ctx.config) });

  return {
    rates,
    quotes,

    async ensureRate(base: string) {
      if (base === QUOTE_CURRENCY) return;
      if (publisher !== null && base === SANDBOX_RATE.base) {
        await publisher.tick();
        return;
      }
      if ((await published.inForce(null, base)) !== null) return;
      throw new Error(
        `no rate in force for ${base}/${QUOTE_CURRENCY} and nothing publishes one here: publish it with POST /admin/v1/rates`,
      );
    },

    registerPublicRoutes(app: FastifyInstance) {
      registerFxPublicRoutes(app, { rates, quotes });
    },

    registerAdminRoutes(app: FastifyInstance) {
      registerFxAdminRoutes(app, { db, rates: published });
    },

    start(signal: AbortSignal) {
      if (publisher === null || signal.aborted) return;
      publisher.start(SANDBOX_RATE.tickMs);
      signal.addEventListener('abort', () => void publisher.stop(), { once: true });
    },

    async stop() {
      await publisher?.stop();
    },
  };
}
