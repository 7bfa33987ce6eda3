import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { NONCE_FAILURE } from '../auth/deferred-nonce.ts';
import { noRateMessage } from '../fx/rates.ts';
import { enveloped } from '../http/envelope.ts';
import { httpError } from '../http/errors.ts';
import { pageCursor, pageLimit, pageOfItems } from '../http/pagination.ts';
import { envelopeOf, errorResponses, PageQuery, pageOf, signedHeaders } from '../http/schema-helpers.ts';
import type { Refusal } from './create.ts';
import type { PaymentState } from './model.ts';
import { seqOfPaymentId, toPublicPayment } from './repository.ts';
import { VIOLATION_MESSAGE } from './rules.ts';
import { BalanceSchema, PAYMENT_STATES, PaymentBody, PaymentSchema } from './schemas.ts';
import type { PaymentService } from './service.ts';

/** Thin: schema in, service call, envelope out. */
export function registerPaymentRoutes(app: FastifyInstance, payments: PaymentService): void {
  app.post(
    '/v2/payments',
    {
      // The nonce commits with the payment, in the reserve transaction (auth/deferred-nonce.ts).
      config: { auth: 'signed', bodyRoute: true, idempotencySlot: true, deferNonce: 'transaction' },
      schema: {
        summary: 'Issue a payment',
        description:
          'The only endpoint that moves money. 201 new payment; 200 replay of the same idempotency-key and content; ' +
          '422 business rule (a failed payment is created; a replay returns it with 200). A failed or unknown payment ' +
          'inside a 2xx is not an HTTP error.',
        tags: ['payments'],
        headers: signedHeaders({ body: true, idempotency: true }),
        body: PaymentBody,
        response: {
          200: envelopeOf(PaymentSchema),
          201: envelopeOf(PaymentSchema),
          ...errorResponses(404, 409, 415, 422, 503),
        },
      },
    },
    async (request, reply) => {
      const key = request.headers['idempotency-key'];
      if (typeof key !== 'string' || key === '') throw httpError(400, 'idempotency-key header is required');
      const result = await payments.create(request.auth!, key, request.body as Record<string, unknown>);
      switch (result.kind) {
        case 'created':
          return enveloped(request, reply, toPublicPayment(result.payment), { code: 201 });
        case 'replayed':
          return enveloped(request, reply, toPublicPayment(result.payment));
        case 'rejected':
          throw httpError(422, VIOLATION_MESSAGE[result.violation]);
        case 'refused':
          throw refusal(result);
      }
    },
  );

  app.get<{ Params: { id: string } }>(
    '/v2/payments/:id',
    {
      // The nonce commits with the read, in one statement per batch (payments/signed-read.ts).
      config: { auth: 'signed', deferNonce: 'transaction' },
      schema: {
        summary: 'Read a payment (poll this for unknown payments)',
        tags: ['payments'],
        headers: signedHeaders(),
        params: Type.Object({ id: Type.String() }),
        response: { 200: envelopeOf(PaymentSchema), ...errorResponses(404) },
      },
    },
    async (request, reply) => {
      const read = await payments.get(request.auth!, request.params.id);
      switch (read.kind) {
        case 'found':
          return enveloped(request, reply, read.payment);
        case 'not_found':
          throw httpError(404, 'payment not found');
        case 'refused':
          throw httpError(401, NONCE_FAILURE[read.verdict]);
      }
    },
  );

  app.get<{ Querystring: { cursor?: string; limit?: string; status?: string } }>(
    '/v2/payments',
    {
      config: { auth: 'signed' },
      schema: {
        summary: 'List payments, newest first (keyset pagination)',
        tags: ['payments'],
        headers: signedHeaders(),
        querystring: Type.Object({
          ...PageQuery,
          status: Type.Optional(
            Type.Unsafe<PaymentState>({
              type: 'string',
              enum: [...PAYMENT_STATES],
              description: 'Only payments in this state.',
            }),
          ),
        }),
        response: { 200: envelopeOf(pageOf(PaymentSchema)), ...errorResponses() },
      },
    },
    async (request, reply) => {
      const { status } = request.query;
      const limit = pageLimit(request.query.limit);
      const beforeSeq = pageCursor(request.query.cursor, seqOfPaymentId);
      const page = await payments.list({
        clientId: request.auth!.clientId,
        state: status as PaymentState | undefined,
        beforeSeq,
        limit,
      });
      return enveloped(
        request,
        reply,
        pageOfItems(page.items, page.hasMore, toPublicPayment, (p) => p.id),
      );
    },
  );

  app.get(
    '/v2/balance',
    {
      config: { auth: 'signed' },
      schema: {
        summary: 'Available balance (balance minus funds held by payments in flight)',
        tags: ['balance'],
        headers: signedHeaders(),
        response: { 200: envelopeOf(BalanceSchema), ...errorResponses() },
      },
    },
    async (request, reply) => {
      const auth = request.auth!;
      const available = await payments.available(auth.clientId, auth.clientCurrency);
      return enveloped(request, reply, { currency: auth.clientCurrency, availableMinor: available.toString() });
    },
  );
}

/** The status and text of each refusal (spec, POST /v2/payments: errors). */
function refusal(r: Refusal): Error {
  switch (r.reason) {
    case 'invalid':
      return httpError(400, r.message);
    case 'beneficiary_not_found':
      return httpError(404, 'beneficiary not found');
    case 'beneficiary_archived':
      return httpError(404, 'beneficiary not found: it is archived');
    case 'key_reused':
      return httpError(409, 'idempotency-key already used with different content');
    case 'quote_not_found':
      return httpError(404, 'quote not found');
    case 'quote_amount_mismatch':
      return httpError(400, `amountMinor must equal the quote's targetAmountMinor (${r.targetAmountMinor})`);
    case 'quote_used':
      return httpError(409, 'quote already used');
    case 'no_rate':
      return httpError(503, noRateMessage(r.currency));
    case 'nonce_replay':
      return httpError(401, NONCE_FAILURE.replay);
    case 'key_inactive':
      return httpError(401, NONCE_FAILURE.inactive);
  }
}
