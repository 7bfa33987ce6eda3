import { type TSchema, Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { enveloped } from '../http/envelope.ts';
import { httpError } from '../http/errors.ts';
import { envelopeOf, errorResponses, signedHeaders, Timestamp } from '../http/schema-helpers.ts';
import type { Jwks } from './jws.ts';
import type { ChangeResult, UrlChangeService } from './url-change.ts';

/** GET/PUT /v2/webhook, POST /v2/webhook/test and the public JWKS (spec, Endpoints; operator contract 7). */

const Nullable = <T extends TSchema>(t: T) => Type.Union([t, Type.Null()]);

export const PendingChangeSchema = Type.Object(
  {
    webhookUrl: Type.String({ description: 'The URL waiting for proof of control.' }),
    requestedAt: Timestamp,
    status: Type.Literal('verifying'),
    attempts: Type.Integer({ description: 'Verification attempts made so far.' }),
    nextAttemptAt: Timestamp,
    expiresAt: { ...Timestamp, description: 'Verification stops here and the request is recorded as expired.' },
    lastError: Nullable(Type.String({ description: 'Why the last attempt did not prove control.' })),
  },
  { description: 'A URL change waiting for its receiver to prove control; see docs/webhooks.md.' },
);

const WebhookConfig = Type.Object({
  webhookUrl: Nullable(Type.String({ description: 'Active URL: where events are delivered.' })),
  pendingChange: Nullable(PendingChangeSchema),
  changed: Type.Boolean({ description: 'true when this request applied a new URL.' }),
});

const TestResult = Type.Object({
  webhookUrl: Nullable(Type.String()),
  sent: Type.Boolean({ description: 'true when a test event was queued for the active URL.' }),
});

const JwkSchema = Type.Object({
  kty: Type.Literal('RSA'),
  use: Type.Literal('sig'),
  alg: Type.Literal('RS256'),
  kid: Type.String(),
  n: Type.String(),
  e: Type.String(),
});

const JwksSchema = Type.Object({ keys: Type.Array(JwkSchema) }, { description: 'Bare JWKS, no envelope.' });

export interface WebhookPublicDeps {
  changes: UrlChangeService;
  jwks(): Promise<Jwks>;
  sendTest(clientId: string): Promise<{ webhookUrl: string | null; sent: boolean }>;
}

/** Receivers refetch on an unknown kid, so a cached set never blocks a rotation. */
export const JWKS_CACHE_CONTROL = 'public, max-age=300';

const STATUS_OF: Record<Exclude<ChangeResult, { ok: true }>['error'], number> = {
  invalid_url: 400,
  unresolvable: 422,
  proof_failed: 422,
};

export function registerWebhookPublicRoutes(app: FastifyInstance, deps: WebhookPublicDeps): void {
  app.get(
    '/v2/webhook',
    {
      config: { auth: 'signed' },
      schema: {
        summary: 'Read webhook config',
        tags: ['webhook'],
        headers: signedHeaders(),
        response: { 200: envelopeOf(WebhookConfig), ...errorResponses() },
      },
    },
    async (request, reply) => {
      const state = await deps.changes.state(request.auth!.clientId);
      return enveloped(request, reply, { ...state, changed: false });
    },
  );

  app.put<{ Body: { webhookUrl: string } }>(
    '/v2/webhook',
    {
      config: { auth: 'signed', bodyRoute: true },
      schema: {
        summary: 'Set webhook URL (with proof of control)',
        tags: ['webhook'],
        headers: signedHeaders({ body: true }),
        body: Type.Object({
          webhookUrl: Type.String({
            minLength: 1,
            maxLength: 2048,
            errorMessage: 'must be an https:// URL of at most 2048 characters',
            description: 'HTTPS URL of the receiver; it must echo the challenge of the verification event.',
          }),
        }),
        response: { 200: envelopeOf(WebhookConfig), ...errorResponses(422) },
      },
    },
    async (request, reply) => {
      const result = await deps.changes.requestChange(request.auth!.clientId, request.body.webhookUrl);
      if (!result.ok) throw httpError(STATUS_OF[result.error], result.message);
      return enveloped(request, reply, {
        webhookUrl: result.state.webhookUrl,
        changed: result.changed,
        pendingChange: result.state.pendingChange,
      });
    },
  );

  app.post(
    '/v2/webhook/test',
    {
      config: { auth: 'signed' },
      schema: {
        summary: 'Send a test event',
        tags: ['webhook'],
        headers: signedHeaders(),
        response: { 200: envelopeOf(TestResult), ...errorResponses() },
      },
    },
    async (request, reply) => enveloped(request, reply, await deps.sendTest(request.auth!.clientId)),
  );

  // Public: JOSE libraries fetch the set directly, so no signature is required and signed headers, when
  // sent anyway, are ignored.
  app.get(
    '/v2/webhook/keys',
    {
      schema: {
        summary: 'Webhook signing keys (JWKS)',
        tags: ['webhook'],
        response: { 200: JwksSchema },
      },
    },
    async (_request, reply) => {
      void reply.header('cache-control', JWKS_CACHE_CONTROL);
      return deps.jwks();
    },
  );
}
