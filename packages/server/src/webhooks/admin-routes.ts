import type { FastifyInstance } from 'fastify';
import { getClient } from '../clients/service.ts';
import type { Queryable } from '../db/db.ts';
import { enveloped } from '../http/envelope.ts';
import { httpError } from '../http/errors.ts';
import { pageLimit } from '../http/pagination.ts';
import { isoTime } from '../shared/money.ts';
import type { DeliveryLog, RedeliverResult } from './delivery-log.ts';
import type { RetireResult, SigningKeys } from './signing-keys.ts';
import type { UrlChangeService } from './url-change.ts';

/** Operator API of webhooks (operator contract section 4): deliveries, redelivery, signing keys, configs. */

export interface WebhookAdminDeps {
  db: Queryable;
  deliveries: DeliveryLog;
  keys: SigningKeys;
  changes: UrlChangeService;
}

const REDELIVER_ERRORS: Record<Exclude<RedeliverResult, { ok: true }>['error'], [number, string]> = {
  not_found: [404, 'event not found'],
  not_dead: [409, 'only a dead-lettered event can be redelivered'],
};

const RETIRE_ERRORS: Record<Exclude<RetireResult, { ok: true }>['error'], [number, string]> = {
  not_found: [404, 'signing key not found'],
  is_active: [409, 'the active signing key cannot be retired; rotate first'],
  already_retired: [409, 'signing key already retired'],
};

type DeliveriesQuery = { clientId?: string; limit?: string; cursor?: string };

export function registerWebhookAdminRoutes(app: FastifyInstance, deps: WebhookAdminDeps): void {
  app.get<{ Querystring: DeliveriesQuery }>('/admin/v1/webhooks/deliveries', async (request, reply) => {
    const { clientId, limit, cursor } = request.query;
    // The same paging rule as every other listing: limit=0 is a 400, not an empty page.
    const pageSize = pageLimit(limit);
    const result = await deps.deliveries.listAttempts({
      clientId: clientId === '' ? undefined : clientId,
      limit: pageSize,
      cursor,
    });
    if (!result.ok) throw httpError(400, 'cursor is not a cursor of this list');
    return enveloped(request, reply, {
      data: result.items.map((a) => ({
        id: a.id,
        eventId: a.eventId,
        clientId: a.clientId,
        url: a.url,
        attempt: a.attempt,
        statusCode: a.statusCode,
        error: a.error,
        durationMs: a.durationMs,
        attemptedAt: isoTime(a.attemptedAt),
      })),
      hasMore: result.nextCursor !== null,
      nextCursor: result.nextCursor,
    });
  });

  app.post<{ Params: { eventId: string } }>('/admin/v1/webhooks/events/:eventId/redeliver', async (request, reply) => {
    const result = await deps.deliveries.redeliver(request.params.eventId);
    if (!result.ok) throw httpError(...REDELIVER_ERRORS[result.error]);
    return enveloped(request, reply, { eventId: request.params.eventId, deliveryStatus: 'pending' });
  });

  app.get<{ Params: { eventId: string } }>('/admin/v1/webhooks/events/:eventId', async (request, reply) => {
    const e = await deps.deliveries.event(request.params.eventId);
    if (e === null) throw httpError(404, 'event not found');
    return enveloped(request, reply, {
      ...e,
      nextAttemptAt: e.nextAttemptAt === null ? null : isoTime(e.nextAttemptAt),
      createdAt: isoTime(e.createdAt),
      deliveredAt: e.deliveredAt === null ? null : isoTime(e.deliveredAt),
      attemptLog: e.attemptLog.map((a) => ({ ...a, attemptedAt: isoTime(a.attemptedAt) })),
      replays: e.replays.map((r) => ({ ...r, createdAt: isoTime(r.createdAt) })),
    });
  });

  app.post<{ Params: { eventId: string } }>('/admin/v1/webhooks/events/:eventId/replay', async (request, reply) => {
    const body = request.body as Record<string, unknown>;
    const result = await deps.deliveries.replay(request.params.eventId, {
      note: body['note'],
      requestedBy: body['requestedBy'],
    });
    if (!result.ok) {
      if (result.error === 'invalid') throw httpError(400, result.message ?? 'invalid body');
      if (result.error === 'not_found') throw httpError(404, 'event not found');
      throw httpError(409, 'the event is still pending: it is already on its way');
    }
    return enveloped(request, reply, {
      eventId: request.params.eventId,
      previousStatus: result.fromStatus,
      deliveryStatus: 'pending',
    });
  });

  app.get('/admin/v1/webhooks/keys', async (request, reply) => {
    const keys = await deps.keys.list();
    return enveloped(request, reply, {
      keys: keys.map((k) => ({
        kid: k.kid,
        status: k.status,
        environment: k.environment,
        createdAt: isoTime(k.createdAt),
        rotatedAt: k.rotatedAt === null ? null : isoTime(k.rotatedAt),
        retiredAt: k.retiredAt === null ? null : isoTime(k.retiredAt),
      })),
    });
  });

  app.post('/admin/v1/webhooks/keys/rotate', async (request, reply) => {
    const { kid, previousKid } = await deps.keys.rotate();
    return enveloped(request, reply, { kid, previousKid });
  });

  app.post<{ Params: { kid: string } }>('/admin/v1/webhooks/keys/:kid/retire', async (request, reply) => {
    const result = await deps.keys.retire(request.params.kid);
    if (!result.ok) throw httpError(...RETIRE_ERRORS[result.error]);
    return enveloped(request, reply, { kid: request.params.kid, status: 'retired' });
  });

  app.get<{ Params: { clientId: string } }>('/admin/v1/webhooks/clients/:clientId', async (request, reply) => {
    const client = await getClient(deps.db, request.params.clientId);
    if (client === null) throw httpError(404, 'client not found');
    const state = await deps.changes.state(client.clientId);
    return enveloped(request, reply, {
      clientId: client.clientId,
      webhookUrl: state.webhookUrl,
      pendingChange: state.pendingChange,
      changeRequests: await deps.changes.history(client.clientId, 50),
    });
  });
}
