import type { AppContext } from '../context.ts';
import type { Domain } from '../domain.ts';
import type { WebhookView } from '../identity/routes.ts';
import { sleep } from '../shared/run-worker.ts';
import { registerWebhookAdminRoutes } from './admin-routes.ts';
import { activeUrl } from './config-store.ts';
import { createDeliveryWorker, type DeliveryWorker } from './delivery-worker.ts';
import { resolveMasterKey } from './master-key.ts';
import { enqueueTestEvent } from './outbox.ts';
import { registerWebhookPublicRoutes } from './public-routes.ts';
import { createSafePost } from './safe-post.ts';
import { checkUrl, type Resolver } from './safe-target.ts';
import { createSigningKeys, type SigningKeys } from './signing-keys.ts';
import { createUrlChangeService, type UrlChangeService } from './url-change.ts';
import { createVerificationSender } from './verification-sender.ts';

/** Webhook configuration, signing keys (JWKS), delivery and verification workers, and their routes. */
export interface WebhookDomain extends Domain {
  webhookViewOf(clientId: string): Promise<WebhookView>;
  keys: SigningKeys;
  changes: UrlChangeService;
  delivery: DeliveryWorker;
}

export interface WebhookDomainOptions {
  /** Host name resolution for the address rules; tests use a fixed table so that no DNS query leaves. */
  resolve?: Resolver;
  /** The master key sealing the signing keys; default: the configured one (config.masterKey). */
  masterKey?: Buffer;
}

/** Operator contract section 7: no 2xx within 10 s is a failed attempt. */
export const DELIVERY_TIMEOUT_MS = 10_000;
/** PUT /v2/webhook waits for the first verification attempt, so it is bounded tighter. */
export const VERIFICATION_TIMEOUT_MS = 5_000;
/** Events claimed per delivery step, and posts in flight at once per process. */
export const DELIVERY_BATCH = 128;
export const DELIVERY_CONCURRENCY = 256;

export async function createWebhookDomain(ctx: AppContext, options: WebhookDomainOptions = {}): Promise<WebhookDomain> {
  const { config, db, clock, logger } = ctx;
  const allowInsecure = config.webhookAllowInsecure;
  const resolve = options.resolve;
  const master =
    options.masterKey !== undefined
      ? { key: options.masterKey, origin: 'the master key given' }
      : await resolveMasterKey(config.masterKey, config.dataDir);
  const keys = await createSigningKeys({
    db,
    clock,
    environment: config.env,
    masterKey: master.key,
    masterKeyOrigin: master.origin,
  });
  const userAgent = `dispersa-webhooks/${ctx.version}`;
  const deliveryPoster = createSafePost({ allowInsecure, resolve, userAgent, timeoutMs: DELIVERY_TIMEOUT_MS });
  const verificationPoster = createSafePost({
    allowInsecure,
    resolve,
    userAgent,
    timeoutMs: VERIFICATION_TIMEOUT_MS,
  });

  const changes = createUrlChangeService({
    db,
    clock,
    check: (url) => checkUrl(url, { allowInsecure, resolve }),
    verify: createVerificationSender({ clock, signer: keys, post: verificationPoster.post }),
    retryBaseMs: config.webhookRetryBaseMs,
  });
  const delivery = createDeliveryWorker({
    db,
    clock,
    signer: keys,
    post: deliveryPoster.post,
    config: {
      retryBaseMs: config.webhookRetryBaseMs,
      maxAttempts: config.webhookMaxAttempts,
      batchSize: DELIVERY_BATCH,
      concurrency: DELIVERY_CONCURRENCY,
    },
    onError: (err) => logger.error({ err }, 'recording a webhook delivery failed; it is retried after its lease'),
    onOutcome: (o) => ctx.metrics.webhookDelivery(o.status === 'pending' ? 'retrying' : o.status, o.durationMs / 1000),
  });
  // New events wait at most this long; small retry bases (tests) poll faster so retries are on time.
  const idleMs = Math.max(10, Math.min(100, config.webhookRetryBaseMs));

  async function sendTest(clientId: string) {
    const url = await activeUrl(db, clientId);
    if (url === null) return { webhookUrl: null, sent: false };
    await enqueueTestEvent(db, clientId, clock.now());
    return { webhookUrl: url, sent: true };
  }

  return {
    keys,
    changes,
    delivery,
    async webhookViewOf(clientId) {
      const state = await changes.state(clientId);
      return { url: state.webhookUrl, pendingChange: state.pendingChange as Record<string, unknown> | null };
    },
    registerPublicRoutes(app) {
      registerWebhookPublicRoutes(app, { changes, jwks: () => keys.jwks(), sendTest });
    },
    registerAdminRoutes(app) {
      registerWebhookAdminRoutes(app, { db, deliveries: delivery, keys, changes });
    },
    workers: [
      { name: 'webhook-delivery', processNext: delivery.processNext, idleMs },
      { name: 'webhook-verification', processNext: changes.processNextVerification, idleMs: Math.max(idleMs, 50) },
    ],
    async stop() {
      // Let posts in flight finish (bounded), then cut the rest: their attempts are recorded as failed.
      const stopped = new AbortController();
      await Promise.race([delivery.drain(), sleep(3000, stopped.signal)]);
      stopped.abort();
      await Promise.all([deliveryPoster.close(), verificationPoster.close()]);
      await delivery.drain();
    },
  };
}
