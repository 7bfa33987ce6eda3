import type { FastifyInstance } from 'fastify';
import type { Metrics } from './metrics.ts';

/**
 * GET /metrics on the operator listener, in the Prometheus text format. It takes the admin token, or the
 * read-only DISPERSA_METRICS_TOKEN (which opens this route and nothing else), as `authorization: Bearer`,
 * which is what Prometheus sends with `authorization: { credentials_file: ... }`.
 */
export function registerMetricsRoute(app: FastifyInstance, metrics: Metrics): void {
  app.get('/metrics', { config: { operatorAccess: 'metrics' } }, async (_request, reply) => {
    const text = await metrics.registry.metrics();
    return reply.type(metrics.registry.contentType).send(text);
  });
}
