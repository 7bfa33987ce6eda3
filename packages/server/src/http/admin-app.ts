import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import { buildFastify } from './build-fastify.ts';
import { httpError } from './errors.ts';
import { enforceInputRules } from './input-rules.ts';
import { hasBody, mediaType, parseJsonObjectBody } from './request-body.ts';

/** The operator listener (/admin/v1), separate from the public one, behind a bearer token. */
export async function createAdminApp(options: {
  logger: Logger;
  token: string;
  /** A read-only token that opens GET /metrics and nothing else (DISPERSA_METRICS_TOKEN); null: none. */
  metricsToken?: string | null;
  onResponse?: (request: FastifyRequest, reply: FastifyReply) => void;
  routes: (app: FastifyInstance) => void | Promise<void>;
}): Promise<FastifyInstance> {
  const app = buildFastify(options.logger, { bodyLimit: 32 * 1024 * 1024, onResponse: options.onResponse });
  // Compare digests so the comparison takes the same time whatever the presented length.
  const digestOf = (token: string) => createHash('sha256').update(token).digest();
  const expected = digestOf(options.token);
  const metricsExpected = options.metricsToken ? digestOf(options.metricsToken) : null;

  app.addHook('onRequest', async (request) => {
    const access = request.routeOptions.config?.operatorAccess;
    if (request.url === '/health' || access === 'open') return;
    const header = request.headers.authorization ?? '';
    const presented = header.startsWith('Bearer ') ? header.slice(7) : '';
    const digest = digestOf(presented);
    const allowed =
      presented !== '' &&
      (timingSafeEqual(digest, expected) ||
        (access === 'metrics' && metricsExpected !== null && timingSafeEqual(digest, metricsExpected)));
    if (!allowed) throw httpError(401, 'missing or invalid bearer token');
    if (hasBody(request) && mediaType(request) !== 'application/json') {
      throw httpError(415, 'body content-type must be application/json');
    }
  });

  app.addHook('preValidation', async (request) => {
    if (hasBody(request)) parseJsonObjectBody(request);
    else if (request.method === 'POST' || request.method === 'PUT') request.body = {};
    enforceInputRules(request);
  });

  app.get('/health', async () => ({ status: 'ok' }));
  await app.register(async (scoped) => {
    await options.routes(scoped);
  });
  return app;
}
