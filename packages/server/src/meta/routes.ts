import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../context.ts';
import { enveloped } from '../http/envelope.ts';
import { envelopeOf } from '../http/schema-helpers.ts';

const Version = Type.Object({
  version: Type.String({ description: 'Running release.' }),
  apiVersion: Type.Literal('v2'),
  environment: Type.Union([Type.Literal('sandbox'), Type.Literal('production')]),
  rails: Type.Array(Type.Union([Type.Literal('PM'), Type.Literal('CCE')]), {
    description: 'Rails this environment can dispatch.',
  }),
  simulado: Type.Boolean({
    description: 'true when the environment fabricates payment results and moves no real money.',
  }),
  links: Type.Object({ openapi: Type.String(), jwks: Type.String() }),
});

/** Public discovery: liveness and version. No key, no signature. */
export function registerMetaRoutes(app: FastifyInstance, ctx: AppContext & { railIsSimulated: () => boolean }): void {
  app.get(
    '/health',
    { schema: { summary: 'Liveness', tags: ['meta'], response: { 200: Type.Object({ status: Type.Literal('ok') }) } } },
    async () => ({ status: 'ok' as const }),
  );

  app.get(
    '/v2/version',
    {
      schema: {
        summary: 'Discovery: version, environment, rails, contract links',
        tags: ['meta'],
        response: { 200: envelopeOf(Version) },
      },
    },
    async (request, reply) =>
      enveloped(request, reply, {
        version: ctx.version,
        apiVersion: 'v2',
        environment: ctx.config.env,
        rails: ctx.config.rails,
        simulado: ctx.railIsSimulated(),
        links: { openapi: '/v2/openapi.json', jwks: '/v2/webhook/keys' },
      }),
  );
}
