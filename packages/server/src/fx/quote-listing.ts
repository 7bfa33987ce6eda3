import type { FastifyInstance } from 'fastify';
import { getClient } from '../clients/service.ts';
import type { Queryable } from '../db/db.ts';
import { enveloped } from '../http/envelope.ts';
import { httpError } from '../http/errors.ts';
import { pageLimit } from '../http/pagination.ts';
import { isoTime } from '../shared/money.ts';
import { formatRate } from './arithmetic.ts';
import { QUOTE_COLUMNS, type QuoteRow, quoteFromRow } from './quotes.ts';

/** Operator view of recent quotes (the console's rates and quotes page): newest first, optionally of one client. */
export function registerQuoteListingRoute(app: FastifyInstance, deps: { db: Queryable }): void {
  app.get<{ Querystring: { clientId?: string; limit?: string } }>('/admin/v1/quotes', async (request, reply) => {
    const clientId = request.query.clientId || null;
    const limit = pageLimit(request.query.limit);
    if (clientId !== null && (await getClient(deps.db, clientId)) === null) {
      throw httpError(404, `unknown client ${clientId}`);
    }
    const { rows } = await deps.db.query<QuoteRow>(
      `SELECT ${QUOTE_COLUMNS} FROM quotes WHERE ($1::text IS NULL OR client_id = $1)
        ORDER BY created_at DESC, quote_id DESC LIMIT $2`,
      [clientId, limit],
    );
    return enveloped(request, reply, {
      data: rows.map(quoteFromRow).map((q) => ({
        quoteId: q.quoteId,
        clientId: q.clientId,
        amountType: q.amountType,
        sourceCurrency: q.sourceCurrency,
        sourceAmountMinor: q.sourceAmountMinor.toString(),
        targetCurrency: q.targetCurrency,
        targetAmountMinor: q.targetAmountMinor.toString(),
        rateId: q.rateId,
        rate: formatRate(q.rateScaled),
        createdAt: isoTime(q.createdAt),
        expiresAt: isoTime(q.expiresAt),
        usedByPaymentId: q.usedByPaymentId,
      })),
    });
  });
}
