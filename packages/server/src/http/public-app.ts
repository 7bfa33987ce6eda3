import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import type { Authenticator } from '../auth/authenticate.ts';
import type { DeferredNonce } from '../auth/deferred-nonce.ts';
import { buildFastify } from './build-fastify.ts';
import { httpError } from './errors.ts';
import { enforceInputRules } from './input-rules.ts';
import { finishOpenApiDocument } from './openapi.ts';
import { hasBody, mediaType, parseJsonObjectBody, rawBodyOf } from './request-body.ts';

/** Where the service serves its browsable API reference (Swagger UI over GET /v2/openapi.json's document). */
export const REFERENCE_PATH = '/docs';

export interface PublicAppOptions {
  logger: Logger;
  authenticate: Authenticator;
  /** Consumes a deferred nonce no transaction applied; the 401 text that replaces the answer, or null. */
  settleNonce: (deferred: DeferredNonce) => Promise<string | null>;
  version: string;
  onResponse?: (request: FastifyRequest, reply: FastifyReply) => void;
  /** Registers the domain routes; each domain owns its own plugin. */
  routes: (app: FastifyInstance) => void | Promise<void>;
}

/** The public listener: /health and /v2. Order of checks per request: content-type → authentication → body. */
export async function createPublicApp(options: PublicAppOptions): Promise<FastifyInstance> {
  const app = buildFastify(options.logger, { onResponse: options.onResponse });

  await app.register(swagger, {
    // The route schemas make the document; openapi.ts finishes it for generators and linters.
    transformObject: (generated) => finishOpenApiDocument('openapiObject' in generated ? generated.openapiObject : {}),
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'dispersa API',
        version: options.version,
        description:
          'Payouts in bolivares (VES) over PM and CCE, with conversion from other balances. Signed routes take ' +
          'x-api-key, x-nonce and x-signature (the security schemes describe the envelope); docs/integration.md ' +
          'walks through a first signed call. Send the writes of one key one at a time.',
      },
    },
  });

  // The browsable API reference: Swagger UI's own files, served from the package (no CDN), reading the document
  // above. "Try it out" is off: a browser holds no private key to sign with.
  await app.register(swaggerUi, {
    routePrefix: REFERENCE_PATH,
    staticCSP: true,
    theme: { title: 'dispersa API reference' },
    uiConfig: { deepLinking: true, docExpansion: 'list', supportedSubmitMethods: [], validatorUrl: null },
    // The page names the address it was read from as the server, before the sandbox default.
    transformSpecification: (spec, request) => ({
      ...spec,
      servers: [
        { url: `${request.protocol}://${request.host}`, description: 'This service.' },
        ...(spec['servers'] ?? []),
      ],
    }),
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
      // A signed GET reads while its nonce is flushed (auth/deferred-nonce.ts): reads change nothing.
      deferNonce: config.deferNonce ?? (request.method === 'GET' ? 'overlap' : undefined),
    });
    if (!result.ok) throw httpError(result.status, result.error);
    request.auth = result.context;
    if (config.bodyRoute) parseJsonObjectBody(request);
  });
  // A deferred nonce the route's transaction did not consume is consumed before any answer leaves; a replay then
  // answers 401, as it would have before the body was looked at (auth/deferred-nonce.ts).
  app.addHook('onSend', async (request, reply, payload) => {
    const deferred = request.auth?.deferredNonce;
    if (deferred === undefined || deferred.settled) return payload;
    let failure: string | null;
    try {
      failure = await options.settleNonce(deferred);
    } catch (err) {
      request.log.error({ err }, 'could not consume the nonce of the request');
      void reply.code(500);
      return JSON.stringify({ error: 'internal error' });
    }
    if (failure === null) return payload;
    void reply.code(401).removeHeader('location').type('application/json; charset=utf-8');
    return JSON.stringify({ error: failure });
  });
  // After authentication (a stranger learns nothing about ids) and before schema validation and the handler.
  app.addHook('preValidation', async (request) => enforceInputRules(request));

  await app.register(async (scoped) => {
    await options.routes(scoped);
  });

  app.get(
    '/v2/openapi.json',
    {
      schema: {
        summary: 'This document: the machine-readable contract (OpenAPI 3.1)',
        tags: ['meta'],
        response: { 200: Type.Object({}, { additionalProperties: true, description: 'OpenAPI 3.1 document.' }) },
      },
    },
    async (_request, reply) => reply.header('cache-control', 'no-cache').send(app.swagger()),
  );
  return app;
}
