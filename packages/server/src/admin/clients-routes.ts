import type { FastifyInstance } from 'fastify';
import { parsePublicKeyPem } from '../auth/public-key.ts';
import { createClient, getClient, listClients } from '../clients/service.ts';
import type { AppContext } from '../context.ts';
import { enveloped } from '../http/envelope.ts';
import { httpError } from '../http/errors.ts';
import { pageLimit } from '../http/pagination.ts';
import { effectiveLimits, limitsConfigured, limitToPublic, parseLimits, setKeyLimits } from '../limits/service.ts';
import { isoTime } from '../shared/money.ts';

type Body = Record<string, unknown>;
type IdParams = { clientId: string };
type KeyParams = { keyId: string };

/** Operator API: clients, their keys, key deactivation and per-key limits (operator contract, section 4). */
export function registerClientAdminRoutes(app: FastifyInstance, ctx: AppContext): void {
  app.post('/admin/v1/clients', async (request, reply) => {
    const body = request.body as Body;
    const result = await createClient(ctx.db, { name: body['name'], currency: body['currency'] });
    if (!result.ok) throw httpError(400, result.error);
    const c = result.client;
    return enveloped(
      request,
      reply,
      { clientId: c.clientId, name: c.name, currency: c.currency, createdAt: isoTime(c.createdAt) },
      { code: 201 },
    );
  });

  app.get<{ Querystring: { cursor?: string; limit?: string } }>('/admin/v1/clients', async (request, reply) => {
    const { cursor } = request.query;
    if (cursor !== undefined && (await getClient(ctx.db, cursor)) === null) {
      throw httpError(400, 'cursor must be an id from a previous page');
    }
    const page = await listClients(ctx.db, { before: cursor, limit: pageLimit(request.query.limit) });
    const data = [];
    for (const c of page.items) {
      const balance = ctx.balances ? await ctx.balances.available(ctx.db, c.clientId, c.currency) : null;
      data.push({
        clientId: c.clientId,
        name: c.name,
        currency: c.currency,
        createdAt: isoTime(c.createdAt),
        balance: balance === null ? null : { currency: c.currency, availableMinor: balance.toString() },
      });
    }
    return enveloped(request, reply, {
      data,
      hasMore: page.hasMore,
      nextCursor: page.items.at(-1)?.clientId ?? null,
    });
  });

  app.get<{ Params: IdParams }>('/admin/v1/clients/:clientId', async (request, reply) => {
    const client = await getClient(ctx.db, request.params.clientId);
    if (client === null) throw httpError(404, 'client not found');
    const keys = await ctx.keys.listForClient(ctx.db, client.clientId);
    const balance = ctx.balances ? await ctx.balances.available(ctx.db, client.clientId, client.currency) : null;
    const keyViews = [];
    for (const k of keys) {
      const limits = await effectiveLimits(ctx.db, k.keyId, ctx.config.serviceLimits);
      keyViews.push({
        keyId: k.keyId,
        environment: k.environment,
        active: k.active,
        publicKeyFingerprint: k.fingerprint,
        limits: limits.map(limitToPublic),
        limitsConfigured: limitsConfigured(limits, ctx.config.rails),
        createdAt: isoTime(k.createdAt),
      });
    }
    return enveloped(request, reply, {
      clientId: client.clientId,
      name: client.name,
      currency: client.currency,
      createdAt: isoTime(client.createdAt),
      balance: balance === null ? null : { currency: client.currency, availableMinor: balance.toString() },
      keys: keyViews,
    });
  });

  app.post<{ Params: IdParams }>('/admin/v1/clients/:clientId/keys', async (request, reply) => {
    const client = await getClient(ctx.db, request.params.clientId);
    if (client === null) throw httpError(404, 'client not found');
    const parsed = parsePublicKeyPem((request.body as Body)['publicKeyPem']);
    if (!parsed.ok) throw httpError(400, parsed.error);
    const created = await ctx.keys.create(ctx.db, {
      clientId: client.clientId,
      environment: ctx.config.env,
      publicKey: parsed.key,
    });
    return enveloped(
      request,
      reply,
      {
        keyId: created.keyId,
        apiKey: created.apiKey,
        environment: ctx.config.env,
        publicKeyFingerprint: parsed.key.fingerprint,
        limitsConfigured: false,
        createdAt: isoTime(created.createdAt),
      },
      { code: 201 },
    );
  });

  app.post<{ Params: KeyParams }>('/admin/v1/keys/:keyId/deactivate', async (request, reply) => {
    const found = await ctx.keys.deactivate(request.params.keyId);
    if (!found) throw httpError(404, 'key not found');
    return enveloped(request, reply, { keyId: request.params.keyId, active: false });
  });

  app.put<{ Params: KeyParams }>('/admin/v1/keys/:keyId/limits', async (request, reply) => {
    const parsed = parseLimits((request.body as Body)['limits']);
    if (!parsed.ok) throw httpError(400, parsed.error);
    const key = await ctx.keys.getById(ctx.db, request.params.keyId);
    if (key === null) throw httpError(404, 'key not found');
    await ctx.db.tx((q) => setKeyLimits(q, key.keyId, parsed.limits));
    const limits = await effectiveLimits(ctx.db, key.keyId, ctx.config.serviceLimits);
    return enveloped(request, reply, {
      keyId: key.keyId,
      limits: limits.map(limitToPublic),
      limitsConfigured: limitsConfigured(limits, ctx.config.rails),
    });
  });
}
