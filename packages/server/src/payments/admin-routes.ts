import type { FastifyInstance } from 'fastify';
import type { Db } from '../db/db.ts';
import { enveloped } from '../http/envelope.ts';
import { httpError } from '../http/errors.ts';
import { pageCursor, pageLimit, pageOfItems } from '../http/pagination.ts';
import type { Clock } from '../shared/clock.ts';
import type { PaymentState } from './model.ts';
import { listPayments, type Payment, seqOfPaymentId, toPublicPayment } from './repository.ts';
import { resolvePayment } from './resolve.ts';

const STATES: readonly PaymentState[] = ['pending', 'processing', 'completed', 'failed', 'unknown'];

type ListQuery = { state?: string; subStatus?: string; clientId?: string; cursor?: string; limit?: string };

/** Operator view of payments across clients, and the resolution of unknown ones by a person. */
export function registerPaymentAdminRoutes(
  app: FastifyInstance,
  deps: { db: Db; clock: Clock; onMoved?: (payment: Payment) => void },
): void {
  app.get<{ Querystring: ListQuery }>('/admin/v1/payments', async (request, reply) => {
    const { state, subStatus, clientId } = request.query;
    if (state !== undefined && state !== '' && !STATES.includes(state as PaymentState)) {
      throw httpError(400, `state must be one of ${STATES.join(', ')}`);
    }
    const page = await listPayments(deps.db, {
      state: state ? (state as PaymentState) : undefined,
      subStatus: subStatus || undefined,
      clientId: clientId || undefined,
      beforeSeq: pageCursor(request.query.cursor, seqOfPaymentId),
      limit: pageLimit(request.query.limit),
    });
    return enveloped(
      request,
      reply,
      pageOfItems(
        page.items,
        page.hasMore,
        (p) => ({ ...toPublicPayment(p), clientId: p.clientId, railReference: p.railReference }),
        (p) => p.id,
      ),
    );
  });

  app.post<{ Params: { id: string } }>('/admin/v1/payments/:id/resolve', async (request, reply) => {
    const body = request.body as Record<string, unknown>;
    const result = await resolvePayment(deps, request.params.id, { outcome: body['outcome'], note: body['note'] });
    switch (result.kind) {
      case 'invalid':
        throw httpError(400, result.message);
      case 'not_found':
        throw httpError(404, 'payment not found');
      case 'not_unknown':
        throw httpError(409, `only a payment in state unknown can be resolved (this one is ${result.state})`);
      case 'resolved':
        return enveloped(request, reply, { ...toPublicPayment(result.payment), clientId: result.payment.clientId });
    }
  });
}
