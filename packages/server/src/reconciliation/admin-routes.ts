import type { FastifyInstance } from 'fastify';
import type { Db, Queryable } from '../db/db.ts';
import { enveloped } from '../http/envelope.ts';
import { httpError } from '../http/errors.ts';
import { pageCursor, pageLimit, pageOfItems } from '../http/pagination.ts';
import { findPayment, type Payment } from '../payments/repository.ts';
import type { Clock } from '../shared/clock.ts';
import { isoTime, minorFromDb } from '../shared/money.ts';
import {
  type ExceptionStatus,
  exceptionView,
  findException,
  listExceptions,
  type ReconException,
  resolveException,
  seqOfExceptionId,
} from './exceptions.ts';
import { findLines, lineView, type StoredLine } from './lines.ts';
import { EXCEPTION_KINDS, type ExceptionKind } from './model.ts';

/** Operator API of reconciliation (operator contract, section 4): list, read and resolve exceptions; status. */

const STATUSES: readonly ExceptionStatus[] = ['open', 'resolved'];

type ListQuery = { status?: string; kind?: string; cursor?: string; limit?: string };

function paymentView(p: Payment) {
  return {
    id: p.id,
    clientId: p.clientId,
    state: p.state,
    subStatus: p.subStatus,
    failureCode: p.failureCode,
    amountMinor: p.amountMinor.toString(),
    currency: p.currency,
    rail: p.rail,
    railReference: p.railReference,
    createdAt: isoTime(p.createdAt),
    updatedAt: isoTime(p.updatedAt),
  };
}

/** Attaches the statement lines (the exception's own, then related ones) and the payment to each exception. */
async function views(q: Queryable, items: readonly ReconException[]) {
  const related = (e: ReconException): string[] => {
    const original = e.details['originalBankLineId'];
    return typeof original === 'string' ? [original] : [];
  };
  const lineIds = [...new Set(items.flatMap((e) => [...e.bankLineIds, ...related(e)]))];
  const lines = new Map<string, StoredLine>((await findLines(q, lineIds)).map((l) => [l.bankLineId, l]));
  const payments = new Map<string, Payment | null>();
  for (const id of new Set(items.map((e) => e.paymentId).filter((id) => id !== null))) {
    payments.set(id, await findPayment(q, id));
  }
  const linesOf = (ids: string[]) => ids.flatMap((id) => (lines.has(id) ? [lineView(lines.get(id)!)] : []));
  return items.map((e) => {
    const payment = e.paymentId === null ? null : (payments.get(e.paymentId) ?? null);
    return {
      ...exceptionView(e),
      bankLines: linesOf(e.bankLineIds),
      relatedBankLines: linesOf(related(e)),
      payment: payment === null ? null : paymentView(payment),
    };
  });
}

export function registerReconciliationAdminRoutes(app: FastifyInstance, deps: { db: Db; clock: Clock }): void {
  app.get<{ Querystring: ListQuery }>('/admin/v1/reconciliation/exceptions', async (request, reply) => {
    const { status, kind } = request.query;
    if (status !== undefined && status !== '' && !STATUSES.includes(status as ExceptionStatus)) {
      throw httpError(400, `status must be one of ${STATUSES.join(', ')}`);
    }
    if (kind !== undefined && kind !== '' && !EXCEPTION_KINDS.includes(kind as ExceptionKind)) {
      throw httpError(400, `kind must be one of ${EXCEPTION_KINDS.join(', ')}`);
    }
    const page = await listExceptions(deps.db, {
      status: status ? (status as ExceptionStatus) : undefined,
      kind: kind ? (kind as ExceptionKind) : undefined,
      beforeSeq: pageCursor(request.query.cursor, seqOfExceptionId),
      limit: pageLimit(request.query.limit),
    });
    const data = await views(deps.db, page.items);
    return enveloped(
      request,
      reply,
      pageOfItems(
        data,
        page.hasMore,
        (v) => v,
        (v) => v.id,
      ),
    );
  });

  app.get<{ Params: { id: string } }>('/admin/v1/reconciliation/exceptions/:id', async (request, reply) => {
    const found = await findException(deps.db, request.params.id);
    if (found === null) throw httpError(404, 'exception not found');
    const [view] = await views(deps.db, [found]);
    return enveloped(request, reply, view);
  });

  app.post<{ Params: { id: string } }>('/admin/v1/reconciliation/exceptions/:id/resolve', async (request, reply) => {
    const body = request.body as Record<string, unknown>;
    const result = await resolveException(deps, request.params.id, {
      note: body['note'],
      resolvedBy: body['resolvedBy'],
    });
    switch (result.kind) {
      case 'invalid':
        throw httpError(400, result.message);
      case 'not_found':
        throw httpError(404, 'exception not found');
      case 'already_resolved':
        throw httpError(409, 'exception already resolved');
      case 'resolved': {
        const [view] = await views(deps.db, [result.exception]);
        return enveloped(request, reply, view);
      }
    }
  });

  app.get('/admin/v1/reconciliation/status', async (request, reply) => {
    const sources = await deps.db.query<{
      name: string;
      cursor: string | null;
      lines_ingested: string;
      updated_at: Date;
    }>('SELECT name, cursor, lines_ingested, updated_at FROM recon_sources ORDER BY name');
    const balances = await deps.db.query<{
      currency: string;
      baseline_minor: string | null;
      checked_at: Date | null;
      bank_minor: string | null;
      ledger_minor: string | null;
      explained_minor: string | null;
      unexplained_minor: string | null;
    }>('SELECT * FROM recon_balance ORDER BY currency');
    const open = await deps.db.query<{ kind: string; n: string }>(
      "SELECT kind, count(*)::text AS n FROM recon_exceptions WHERE status = 'open' GROUP BY kind ORDER BY kind",
    );
    const text = (v: string | null) => (v === null ? null : minorFromDb(v).toString());
    return enveloped(request, reply, {
      sources: sources.rows.map((s) => ({
        name: s.name,
        cursor: s.cursor,
        linesIngested: s.lines_ingested,
        updatedAt: isoTime(s.updated_at),
      })),
      balances: balances.rows.map((b) => ({
        currency: b.currency.trim(),
        baselineMinor: text(b.baseline_minor),
        bankMinor: text(b.bank_minor),
        ledgerMinor: text(b.ledger_minor),
        explainedMinor: text(b.explained_minor),
        unexplainedMinor: text(b.unexplained_minor),
        checkedAt: b.checked_at === null ? null : isoTime(b.checked_at),
      })),
      openExceptions: Object.fromEntries(open.rows.map((r) => [r.kind, Number(r.n)])),
    });
  });
}
