import type { FastifyInstance } from 'fastify';
import type { Db } from '../../db/db.ts';
import { enveloped } from '../../http/envelope.ts';
import { httpError } from '../../http/errors.ts';
import { isoTime, MAX_FUNDING_MINOR, parsePositiveMinor } from '../../shared/money.ts';
import type { SandboxBank } from './bank.ts';
import type { SandboxBankLine } from './lines.ts';

/**
 * Sandbox-only operator controls (operator contract, section 4) to provoke what reconciliation must find.
 * Registered only on sandbox deployments, so production answers 404.
 */
function lineView(l: SandboxBankLine) {
  return {
    bankLineId: l.bankLineId,
    direction: l.direction,
    amountMinor: l.amountMinor.toString(),
    currency: l.currency,
    valueDate: l.valueDate,
    reference: l.reference,
    raw: l.raw,
    origin: l.origin,
    paymentId: l.paymentId,
    duplicateOf: l.duplicateOf,
    visible: l.visible,
    visibleAt: isoTime(l.visibleAt),
    createdAt: isoTime(l.createdAt),
  };
}

export function registerSandboxBankAdminRoutes(app: FastifyInstance, deps: { bank: SandboxBank; db: Db }): void {
  app.post('/admin/v1/sandbox/bank/lines', async (request, reply) => {
    const body = request.body as Record<string, unknown>;
    const duplicateOf = body['duplicateOf'];
    let result: Awaited<ReturnType<SandboxBank['addLine']>>;
    if (duplicateOf !== undefined) {
      if (typeof duplicateOf !== 'string' || duplicateOf === '')
        throw httpError(400, 'duplicateOf must be a bank line id');
      result = await deps.bank.addLine({ duplicateOf });
    } else {
      const direction = body['direction'];
      if (direction !== 'debit' && direction !== 'credit') throw httpError(400, 'direction must be debit or credit');
      const amountMinor = parsePositiveMinor(body['amountMinor']);
      if (amountMinor === null)
        throw httpError(400, 'amountMinor must be a string holding a positive integer of minor units');
      // A simulated bank line is bounded like a funding: the bigint column is not the bound.
      if (amountMinor > MAX_FUNDING_MINOR)
        throw httpError(400, `amountMinor must be at most ${MAX_FUNDING_MINOR} minor units`);
      const reference = body['reference'];
      if (typeof reference !== 'string' || reference === '') throw httpError(400, 'reference is required');
      const currency = body['currency'] ?? 'VES';
      if (typeof currency !== 'string' || !/^[A-Z]{3}$/.test(currency))
        throw httpError(400, 'currency must be a 3-letter code');
      result = await deps.bank.addLine({ direction, amountMinor, reference, currency });
    }
    if (!result.ok) {
      if (result.error === 'unknown_line') throw httpError(404, 'duplicateOf names no bank line');
      throw httpError(400, `invalid line (${result.error})`);
    }
    return enveloped(request, reply, lineView(result.line), { code: 201 });
  });

  app.post('/admin/v1/sandbox/bank/suppress-debit', async (request, reply) => {
    const paymentId = (request.body as Record<string, unknown>)['paymentId'];
    if (typeof paymentId !== 'string' || paymentId === '') throw httpError(400, 'paymentId is required');
    const result = await deps.bank.suppressDebit(paymentId);
    return enveloped(request, reply, result);
  });

  app.get('/admin/v1/sandbox/bank/lines', async (request, reply) => {
    const lines = await deps.bank.listLines();
    return enveloped(request, reply, { data: lines.map(lineView) });
  });
}
