import type { FastifyInstance } from 'fastify';
import type { Readiness } from './readiness.ts';

/** GET /readyz on either listener, without a token (load balancers and orchestrators probe it). */
export function registerReadinessRoute(app: FastifyInstance, readiness: Readiness): void {
  app.get('/readyz', { config: { operatorAccess: 'open' }, schema: { hide: true } }, async (_request, reply) => {
    const verdict = await readiness.check();
    if (verdict.ready) return reply.code(200).send({ status: 'ready' });
    return reply.code(503).send({ error: `not ready: ${verdict.reason}` });
  });
}
