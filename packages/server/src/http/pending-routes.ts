import type { FastifyInstance } from 'fastify';
import { httpError } from './errors.ts';
import { errorResponses, signedHeaders } from './schema-helpers.ts';

/**
 * Routes of the contract whose domain is not built yet: declared (so they are authenticated and appear in the
 * OpenAPI document) and answering 501. Each entry disappears when its domain registers the real route.
 */
export interface PendingRoute {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  url: string;
  summary: string;
  body?: boolean;
  idempotency?: boolean;
}

export function registerPendingRoutes(app: FastifyInstance, routes: readonly PendingRoute[]): void {
  for (const r of routes) {
    app.route({
      method: r.method,
      url: r.url,
      config: { auth: 'signed', bodyRoute: r.body === true, idempotencySlot: r.idempotency === true },
      schema: {
        summary: `${r.summary} (not available in this release)`,
        headers: signedHeaders({ body: r.body, idempotency: r.idempotency }),
        response: errorResponses(501),
      },
      handler: async () => {
        throw httpError(501, 'not implemented in this release');
      },
    });
  }
}
