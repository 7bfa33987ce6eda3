import type { FastifyReply, FastifyRequest } from 'fastify';
import type { HttpListener, Metrics } from './metrics.ts';

/**
 * Records each answered request. The route label is the route's template (`/v2/payments/:id`), never the raw URL,
 * so ids do not multiply the series; a request that matched no route counts under `unmatched`.
 */
export function requestObserver(metrics: Metrics, listener: HttpListener) {
  return (request: FastifyRequest, reply: FastifyReply): void => {
    metrics.observeRequest({
      listener,
      method: request.method,
      route: request.routeOptions.url ?? 'unmatched',
      status: reply.statusCode,
      seconds: reply.elapsedTime / 1000,
    });
  };
}
