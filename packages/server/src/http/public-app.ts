import swagger from '@fastify/swagger';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import type { Authenticator } from '../auth/authenticate.ts';
import { buildFastify } from './build-fastify.ts';
import { httpError } from './errors.ts';
import { enforceInputRules } from './input-rules.ts';
import { hasBody, mediaType, parseJsonObjectBody, rawBodyOf } from './request-body.ts';

export interface PublicAppOptions {
  logger: Logger;
  authenticate: Authenticator;
  version: string;
  onResponse?: (request: FastifyRequest, reply: FastifyReply) => void;
  /** Registers the domain routes; each domain owns its own plugin. */
  routes: (app: FastifyInstance) => void | Promise<void>;
}

/** The public listener: /health and /v2. Order of checks per request: content-type → authentication → body. */
export async function createPublicApp(options: PublicAppOptions): Promise<FastifyInstance> {
  const app = buildFastify(options.logger, { onResponse: options.onResponse });

  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'dispersa API',
        version: options.version,
        description:
          'Payouts in bolivares (VES) over PM and CCE, with conversion from other balances. Every signed route takes ' +
          'x-api-key, x-nonce and x-signature; see docs/integration.md for the envelope.',
      },
    },
  });

  app.addHook('onRequest', async (request) => {
    const config = request.routeOptions.config;
    if (config?.auth !== 'signed' || !hasBody(request)) return;
    const type = mediaType(request);
    if (type === 'application/json') return;
    if (config.bodyRoute && type === 'text/plain') throw httpError(400, 'body must be object');
    throw httpError(415, 'body content-type must be application/json');
  });

  app.addHook('preValidation', async (request) => {
    const config = request.routeOptions.config;
    if (config?.auth !== 'signed') return;
    const result = await options.authenticate({
      method: request.method,
      target: request.raw.url ?? request.url,
      headers: request.headers,
      body: rawBodyOf(request),
      idempotencySlot: config.idempotencySlot === true,
    });
    if (!result.ok) throw httpError(result.status, result.error);
    request.auth = result.context;
    if (config.bodyRoute) parseJsonObjectBody(request);
  });
  // After authentication (a stranger learns nothing about ids) and before schema validation and the handler.
  app.addHook('preValidation', async (request) => enforceInputRules(request));

  await app.register(async (scoped) => {
    await options.routes(scoped);
  });

  app.get('/v2/openapi.json', { schema: { hide: true } }, async () => app.swagger());
  return app;
}
