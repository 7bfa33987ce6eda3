import type { FastifyInstance } from 'fastify';
import type { Db } from '../../src/db/db.ts';
import { createAdminApp } from '../../src/http/admin-app.ts';
import { ledgerViolations } from '../../src/ledger/invariants.ts';
import { createMetrics } from '../../src/metrics/metrics.ts';
import type { StatementSource } from '../../src/rails/rail.ts';
import { createReconciliationDomain, type ReconciliationDomain } from '../../src/reconciliation/domain.ts';
import type { Clock } from '../../src/shared/clock.ts';
import type { Answer } from '../support/signed-client.ts';
import { ADMIN_TOKEN, startTestServer, type TestServer } from '../support/test-server.ts';

/**
 * The real service (startTestServer) plus a reconciliation domain of the test's own over the same database
 * and clock, so a test can run one deterministic pass (reconcileOnce) after moving a manual clock. The
 * service's own reconciliation loops do not run, so every decision is the test's pass (the loops themselves
 * are tested in workers.test.ts); its other loops (delivery, settlement) do.
 * Operator routes: the service's when it registers them; otherwise a small admin app of the test's own.
 */
export interface ReconServer {
  server: TestServer;
  db: Db;
  recon: ReconciliationDomain;
  /** Base URL of the listener serving the reconciliation operator routes. */
  reconAdminUrl: string;
  /** The operator API, reconciliation routes included. */
  admin(method: string, target: string, body?: unknown): Promise<Answer>;
  stop(): Promise<void>;
}

const EXCEPTIONS_ROUTE = { method: 'GET' as const, url: '/admin/v1/reconciliation/exceptions' };

/**
 * A reconciliation domain of the test's own over the service's database, clock and rails, as another process's
 * would be; `statements` stands in for the rail's statement source, `db` for the database (a wrapped one).
 */
export function reconciliationOver(
  server: TestServer,
  options: { intervalMs?: number; statements?: StatementSource; db?: Db } = {},
): ReconciliationDomain {
  const { domains } = server.running;
  const ctx = { ...server.running.ctx, ...(options.db && { db: options.db }) };
  const config = { ...ctx.config, reconcileIntervalMs: options.intervalMs ?? 100 };
  // Its counters in a registry of its own: the service's already holds the service's reconciliation counters.
  const metrics = createMetrics({ processMetrics: false });
  const rails = { ...domains.payments.rails, ...(options.statements && { statements: options.statements }) };
  return createReconciliationDomain({ ...ctx, config, metrics }, { rails });
}

export async function startReconServer(options: {
  env?: Record<string, string>;
  clock?: Clock;
  /** DISPERSA_RECONCILE_INTERVAL_MS of the test's own passes. Default 100. */
  intervalMs?: number;
}): Promise<ReconServer> {
  const server = await startTestServer({
    // The payments domain's follow-up reads this interval too: an hour leaves unknown outcomes to the test's pass.
    env: { ...options.env, DISPERSA_RECONCILE_INTERVAL_MS: '3600000' },
    clock: options.clock,
    workers: (name) => !name.startsWith('reconciliation.'),
  });
  const recon = reconciliationOver(server, { intervalMs: options.intervalMs });
  let extra: FastifyInstance | null = null;
  let extraUrl = '';
  if (!server.running.adminApp.hasRoute(EXCEPTIONS_ROUTE)) {
    extra = await createAdminApp({
      logger: server.running.ctx.logger,
      token: ADMIN_TOKEN,
      routes: (app) => recon.registerAdminRoutes?.(app),
    });
    await extra.listen({ host: '127.0.0.1', port: 0 });
    const address = extra.server.address();
    if (address === null || typeof address === 'string') throw new Error('no address');
    extraUrl = `http://127.0.0.1:${address.port}`;
  }

  async function admin(method: string, target: string, body?: unknown): Promise<Answer> {
    if (extra === null || !target.startsWith('/admin/v1/reconciliation/')) return server.admin(method, target, body);
    const headers: Record<string, string> = { authorization: `Bearer ${ADMIN_TOKEN}` };
    if (body !== undefined) headers['content-type'] = 'application/json';
    const res = await fetch(extraUrl + target, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, body: text === '' ? null : JSON.parse(text), headers: res.headers };
  }

  return {
    server,
    db: server.testDb.db,
    recon,
    reconAdminUrl: extra === null ? server.adminUrl : extraUrl,
    admin,
    async stop() {
      await extra?.close();
      await server.stop();
    },
  };
}

export async function ledgerProblems(db: Db): Promise<string[]> {
  return ledgerViolations(db);
}

/** Open exceptions, newest first (all pages). */
export async function allExceptions(r: ReconServer, query = ''): Promise<any[]> {
  const out: any[] = [];
  let cursor: string | null = null;
  for (let i = 0; i < 100; i++) {
    const sep = query === '' ? '?' : `?${query}&`;
    const res = await r.admin(
      'GET',
      `/admin/v1/reconciliation/exceptions${sep}limit=100${cursor ? `&cursor=${cursor}` : ''}`,
    );
    if (res.status !== 200) throw new Error(`exceptions: ${res.status} ${JSON.stringify(res.body)}`);
    out.push(...res.body.payload.data);
    if (!res.body.payload.hasMore) return out;
    cursor = res.body.payload.nextCursor;
  }
  throw new Error('too many pages');
}

/** The service's ledger: journal entries of a payment, by kind. */
export async function entriesOf(db: Db, paymentId: string): Promise<string[]> {
  const { rows } = await db.query<{ kind: string }>(
    'SELECT kind FROM journal_entries WHERE payment_id = $1 ORDER BY id',
    [paymentId],
  );
  return rows.map((r) => r.kind);
}

/** The stored statement lines of a payment, as direction/status/match. */
export async function reconLinesOf(db: Db, paymentId: string): Promise<string[]> {
  const { rows } = await db.query<{ direction: string; status: string; match_kind: string | null; booked: boolean }>(
    'SELECT direction, status, match_kind, booked FROM recon_lines WHERE payment_id = $1 ORDER BY id',
    [paymentId],
  );
  return rows.map((r) => `${r.direction}/${r.status}/${r.match_kind ?? '-'}/${r.booked ? 'booked' : 'unbooked'}`);
}

/** States the payment's events carried, in order. */
export async function eventStatesOf(db: Db, paymentId: string): Promise<string[]> {
  const { rows } = await db.query<{ state: string; sub: string | null }>(
    `SELECT body::json->'data'->'payment'->>'state' AS state, body::json->'data'->'payment'->>'subStatus' AS sub
       FROM events WHERE payment_id = $1 ORDER BY created_at, seq`,
    [paymentId],
  );
  return rows.map((r) => (r.sub ? `${r.state}/${r.sub}` : r.state));
}
