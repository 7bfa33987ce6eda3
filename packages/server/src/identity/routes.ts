import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../context.ts';
import { enveloped } from '../http/envelope.ts';
import { envelopeOf, errorResponses, signedHeaders } from '../http/schema-helpers.ts';
import { effectiveLimits, limitsConfigured, limitToPublic } from '../limits/service.ts';

const LimitValues = Type.Object({ perPaymentMaxMinor: Type.String(), dailyMaxMinor: Type.String() });

const Identity = Type.Object({
  keyType: Type.Literal('secret'),
  environment: Type.Union([Type.Literal('sandbox'), Type.Literal('production')]),
  publicKeyFingerprint: Type.String({ description: 'SHA256: + unpadded base64 of the SHA-256 of the SPKI DER.' }),
  webhook: Type.Object({
    url: Type.Union([Type.String(), Type.Null()]),
    pendingChange: Type.Union([Type.Object({}, { additionalProperties: true }), Type.Null()]),
  }),
  limits: Type.Array(
    Type.Object({
      rail: Type.String(),
      perPaymentMaxMinor: Type.String({ description: "Effective: the lower of the client's and the service's." }),
      dailyMaxMinor: Type.String(),
      client: LimitValues,
      service: Type.Union([LimitValues, Type.Null()]),
    }),
  ),
  limitsConfigured: Type.Boolean({ description: 'false until every enabled rail has a limit entry.' }),
});

export interface WebhookView {
  url: string | null;
  pendingChange: Record<string, unknown> | null;
}

/** GET /v2/me: who is calling, never a secret. */
export function registerIdentityRoutes(
  app: FastifyInstance,
  ctx: AppContext & { webhookViewOf: (clientId: string) => Promise<WebhookView> },
): void {
  app.get(
    '/v2/me',
    {
      config: { auth: 'signed' },
      schema: {
        summary: 'Identity of the calling key',
        tags: ['identity'],
        headers: signedHeaders(),
        response: { 200: envelopeOf(Identity), ...errorResponses() },
      },
    },
    async (request, reply) => {
      const auth = request.auth!;
      const limits = await effectiveLimits(ctx.db, auth.keyId, ctx.config.serviceLimits);
      return enveloped(request, reply, {
        keyType: 'secret',
        environment: auth.environment,
        publicKeyFingerprint: auth.fingerprint,
        webhook: await ctx.webhookViewOf(auth.clientId),
        limits: limits.map(limitToPublic),
        limitsConfigured: limitsConfigured(limits, ctx.config.rails),
      });
    },
  );
}
