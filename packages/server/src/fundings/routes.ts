import type { FastifyInstance } from 'fastify';
import { enveloped } from '../http/envelope.ts';
import { httpError } from '../http/errors.ts';
import { isoTime } from '../shared/money.ts';
import { createFunding, type FundingDeps } from './service.ts';

export function registerFundingAdminRoutes(app: FastifyInstance, deps: FundingDeps): void {
  app.post<{ Params: { clientId: string } }>('/admin/v1/clients/:clientId/fundings', async (request, reply) => {
    const body = request.body as Record<string, unknown>;
    const result = await createFunding(deps, request.params.clientId, {
      amountMinor: body['amountMinor'],
      reference: body['reference'],
    });
    switch (result.kind) {
      case 'invalid':
        throw httpError(400, result.message);
      case 'unknown_client':
        throw httpError(404, 'client not found');
      case 'duplicate_reference':
        throw httpError(409, 'a funding with this reference exists already');
      case 'created': {
        const f = result.funding;
        return enveloped(
          request,
          reply,
          {
            fundingId: f.fundingId,
            clientId: f.clientId,
            amountMinor: f.amountMinor.toString(),
            currency: f.currency,
            reference: f.reference,
            createdAt: isoTime(f.createdAt),
          },
          { code: 201 },
        );
      }
    }
  });
}
