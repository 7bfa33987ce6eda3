import type { FastifyInstance } from 'fastify';
import type { Db } from '../db/db.ts';
import { enveloped } from '../http/envelope.ts';
import { httpError } from '../http/errors.ts';
import type { Payment } from '../payments/repository.ts';
import type { Clock } from '../shared/clock.ts';
import { importStatement } from './import.ts';

/** `POST /admin/v1/reconciliation/statements` { format: camt053 | csv, content }: import a bank statement file. */
export function registerStatementImportRoutes(
  app: FastifyInstance,
  deps: { db: Db; clock: Clock; onMoved?: (payment: Payment) => void },
): void {
  app.post('/admin/v1/reconciliation/statements', async (request, reply) => {
    const body = request.body as Record<string, unknown>;
    const result = await importStatement(deps, { format: body['format'], content: body['content'] });
    if (result.kind === 'invalid') throw httpError(400, result.message);
    const s = result.summary;
    return enveloped(
      request,
      reply,
      {
        format: result.format,
        lines: s.lines,
        newLines: s.fresh,
        alreadyImported: s.lines - s.fresh,
        matched: s.matched,
        exceptions: s.exceptions,
        exceptionsByKind: s.exceptionsByKind,
      },
      { code: 201 },
    );
  });
}
