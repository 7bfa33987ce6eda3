import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { registerClientAdminRoutes } from './admin/clients-routes.ts';
import { createApiKeyService } from './auth/api-keys.ts';
import { createAuthenticator } from './auth/authenticate.ts';
import { settleDeferredNonce } from './auth/deferred-nonce.ts';
import { createNonceStore } from './auth/nonce-store.ts';
import { type BeneficiaryDomain, createBeneficiaryDomain } from './beneficiaries/domain.ts';
import type { Config } from './config.ts';
import { registerConsoleRoutes } from './console/routes.ts';
import type { AppContext } from './context.ts';
import type { Db } from './db/db.ts';
import { createEmbeddedMaintenance } from './db/maintenance.ts';
import type { Domain } from './domain.ts';
import { createFxDomain, type FxDomain } from './fx/domain.ts';
import { createReadiness, type Readiness } from './health/readiness.ts';
import { registerReadinessRoute } from './health/routes.ts';
import { createAdminApp } from './http/admin-app.ts';
import { type PendingRoute, registerPendingRoutes } from './http/pending-routes.ts';
import { createPublicApp } from './http/public-app.ts';
import { countRequestsInFlight } from './http/requests-in-flight.ts';
import { registerIdentityRoutes } from './identity/routes.ts';
import { registerMetaRoutes } from './meta/routes.ts';
import { registerDatabaseGauges, registerPoolGauges } from './metrics/database-gauges.ts';
import { requestObserver } from './metrics/http-metrics.ts';
import { createMetrics, type Metrics } from './metrics/metrics.ts';
import { registerMetricsRoute } from './metrics/routes.ts';
import { createPaymentDomain, type PaymentDomain } from './payments/domain.ts';
import { createReconciliationDomain, type ReconciliationDomain } from './reconciliation/domain.ts';
import type { SeedHooks } from './sandbox/first-start.ts';
import { type Clock, systemClock } from './shared/clock.ts';
import { runWorker } from './shared/run-worker.ts';
import { registerStatementImportRoutes } from './statements/admin-routes.ts';
import { SERVICE_VERSION } from './version.ts';
import { createWebhookDomain, type WebhookDomain } from './webhooks/domain.ts';

/** The composition root: every service built once, in dependency order, and wired to the two listeners. */

export interface Composed {
  ctx: AppContext;
  /** The domains, for the CLI's worker command and for tests that drive services directly. */
  domains: {
    webhooks: WebhookDomain;
    fx: FxDomain;
    beneficiaries: BeneficiaryDomain;
    payments: PaymentDomain;
    reconciliation: ReconciliationDomain;
  };
  publicApp: FastifyInstance;
  adminApp: FastifyInstance;
  metrics: Metrics;
  /** GET /readyz; stop() turns it to not ready first. */
  readiness: Readiness;
  /**
   * Background loops (delivery, settlement, reconciliation); started by main, stopped on shutdown. `only`
   * picks loops by name (default all): a test that runs reconciliation passes itself leaves those out.
   */
  startWorkers(only?: (name: string) => boolean): void;
  /** What sandbox first start needs from the domains (funding, rates). */
  seedHooks: SeedHooks;
  stop(): Promise<void>;
}

/** Every route of the contract; those no domain registers answer 501 (and still appear in the OpenAPI document). */
const CONTRACT_ROUTES: PendingRoute[] = [
  { method: 'GET', url: '/v2/rate', summary: 'Published rate' },
  { method: 'POST', url: '/v2/quotes', summary: 'Freeze a price', body: true, idempotency: true },
  { method: 'POST', url: '/v2/payments', summary: 'Issue a payment', body: true, idempotency: true },
  { method: 'GET', url: '/v2/payments/:id', summary: 'Read a payment' },
  { method: 'GET', url: '/v2/payments', summary: 'List payments' },
  { method: 'GET', url: '/v2/balance', summary: 'Available balance' },
  { method: 'POST', url: '/v2/beneficiaries', summary: 'Create beneficiary', body: true },
  { method: 'GET', url: '/v2/beneficiaries', summary: 'List beneficiaries' },
  { method: 'GET', url: '/v2/beneficiaries/:id', summary: 'Read beneficiary' },
  { method: 'PATCH', url: '/v2/beneficiaries/:id', summary: 'Edit alias', body: true },
  { method: 'DELETE', url: '/v2/beneficiaries/:id', summary: 'Archive beneficiary' },
  { method: 'GET', url: '/v2/webhook', summary: 'Read webhook config' },
  { method: 'PUT', url: '/v2/webhook', summary: 'Set webhook URL', body: true },
  { method: 'POST', url: '/v2/webhook/test', summary: 'Send a test event' },
];

export async function compose(options: {
  config: Config & { adminToken: string };
  db: Db;
  logger: Logger;
  clock?: Clock;
  /** Default: a fresh registry of this service's own. */
  metrics?: Metrics;
}): Promise<Composed> {
  const { config, db, logger } = options;
  const clock = options.clock ?? systemClock;
  const metrics = options.metrics ?? createMetrics();
  registerDatabaseGauges({ db, clock, registry: metrics.registry });
  registerPoolGauges(db, metrics.registry);
  const readiness = createReadiness({ db });
  const keys = createApiKeyService({ db });
  const nonces = createNonceStore({
    db,
    onBatch: (size) => metrics.observeNonceBatch(size),
    onRun: (seconds) => metrics.observeBatchRun('nonce', seconds),
  });
  metrics.setBatchLanes('nonce', nonces.lanes);
  const ctx: AppContext = { config, db, clock, logger, version: SERVICE_VERSION, keys, metrics };

  const webhooks = await createWebhookDomain(ctx);
  const fx = createFxDomain(ctx);
  const beneficiaries = createBeneficiaryDomain(ctx);
  const payments = await createPaymentDomain(ctx, { fx, beneficiaries });
  ctx.balances = payments.balances;
  const reconciliation = createReconciliationDomain(ctx, { rails: payments.rails });
  const maintenance = createEmbeddedMaintenance({
    db,
    clock,
    intervalMs: config.embeddedVacuumMinutes * 60_000,
    logger,
  });
  // The database's own upkeep runs beside the domains' loops (embedded only: a server has autovacuum).
  const upkeep: Domain = { workers: maintenance === null ? [] : [maintenance] };
  const domains: Domain[] = [webhooks, fx, beneficiaries, payments, reconciliation, upkeep];

  const authenticate = createAuthenticator({ environment: config.env, keys, nonces });
  const publicApp = await createPublicApp({
    logger,
    authenticate,
    settleNonce: (deferred) => settleDeferredNonce(nonces, deferred),
    version: SERVICE_VERSION,
    onResponse: requestObserver(metrics, 'public'),
    routes: (app) => {
      registerReadinessRoute(app, readiness);
      registerMetaRoutes(app, { ...ctx, railIsSimulated: () => payments.railIsSimulated() });
      registerIdentityRoutes(app, { ...ctx, webhookViewOf: (clientId) => webhooks.webhookViewOf(clientId) });
      for (const d of domains) d.registerPublicRoutes?.(app);
      registerPendingRoutes(
        app,
        CONTRACT_ROUTES.filter((r) => !app.hasRoute({ method: r.method, url: r.url })),
      );
    },
  });

  const adminApp = await createAdminApp({
    logger,
    token: config.adminToken,
    metricsToken: config.metricsToken,
    onResponse: requestObserver(metrics, 'admin'),
    routes: (app) => {
      registerReadinessRoute(app, readiness);
      registerMetricsRoute(app, metrics);
      registerConsoleRoutes(app);
      registerClientAdminRoutes(app, ctx);
      registerStatementImportRoutes(app, {
        db,
        clock,
        onMoved: (p) => metrics.paymentTransition(p),
      });
      for (const d of domains) d.registerAdminRoutes?.(app);
    },
  });

  // A loop that rests for the requests' sake (reconciliation on the embedded database) rests only while there are some.
  const requestsInFlight = countRequestsInFlight(publicApp.server, adminApp.server);
  const restWhile = () => requestsInFlight() > 0;
  const abort = new AbortController();
  const loops: Promise<void>[] = [];
  return {
    ctx,
    domains: { webhooks, fx, beneficiaries, payments, reconciliation },
    publicApp,
    adminApp,
    metrics,
    readiness,
    seedHooks: {
      fund: (clientId, amountMinor, reference) => payments.fundForSeed(clientId, amountMinor, reference),
      ensureRate: (base) => fx.ensureRate(base),
    },
    startWorkers(only = () => true) {
      for (const d of domains) {
        for (const w of (d.workers ?? []).filter((w) => only(w.name))) {
          const options = { idleMs: w.idleMs, busyShare: w.busyShare, restWhile, signal: abort.signal, logger };
          loops.push(runWorker(w.name, w.processNext, options));
        }
        d.start?.(abort.signal);
      }
    },
    async stop() {
      readiness.markStopping();
      // The listeners drain their requests while the loops finish their current item; then the domains stop.
      abort.abort();
      await Promise.allSettled([publicApp.close(), adminApp.close(), ...loops]);
      await Promise.allSettled(domains.map((d) => d.stop?.()));
    },
  };
}
