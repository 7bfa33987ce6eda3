import type { AppContext } from '../context.ts';
import type { Domain } from '../domain.ts';
import type { WebhookView } from '../identity/routes.ts';

/** Webhook configuration, signing keys (JWKS), delivery worker and their routes. */
export interface WebhookDomain extends Domain {
  webhookViewOf(clientId: string): Promise<WebhookView>;
}

export async function createWebhookDomain(_ctx: AppContext): Promise<WebhookDomain> {
  return {
    async webhookViewOf() {
      return { url: null, pendingChange: null };
    },
  };
}
