import type { AppContext } from '../context.ts';
import type { Domain } from '../domain.ts';
import type { RailSetup } from '../rails/registry.ts';
import type { WorkerStep } from '../shared/run-worker.ts';
import { registerReconciliationAdminRoutes } from './admin-routes.ts';
import { type BalanceCheckResult, createBalanceCheck, type StatementPosition } from './balance.ts';
import { batchLinesFor, type IngestResult, type IngestSummary, ingestNextPage } from './ingest.ts';
import { createReconciliationMetrics, type ReconciliationMetrics } from './metrics.ts';
import { createRequery } from './requery.ts';
import { createWatch } from './watch.ts';

/**
 * Reconciliation (issue 7): the service's view of the real bank, kept honest every
 * DISPERSA_RECONCILE_INTERVAL_MS by three loops over the database, each safe with any number of processes:
 * - statement: ingest and match the bank statement, a batch of pages per transaction; when caught up, the balance check;
 * - re-query: ask the rail about unknown payments; under_review when the waiting budget runs out;
 * - watch: completed payouts with no real debit, and debits of failed payments with no return, past the grace
 *   period (DISPERSA_UNKNOWN_BUDGET_SECONDS) become exceptions.
 * See docs/reconciliation.md.
 */
export interface ReconciliationDomain extends Domain {
  metrics: ReconciliationMetrics;
  /**
   * One full pass, for tests and `worker --once`: the statement to its end, every due re-query, the watch,
   * the balance check. Bounded.
   */
  reconcileOnce(): Promise<ReconcilePass>;
}

export interface ReconcilePass {
  pages: number;
  requeried: number;
  watched: number;
  balances: BalanceCheckResult[];
}

const MAX_PASS_STEPS = 10_000;

/**
 * On the embedded database each batch's two transactions hold every request (ingest.ts, EMBEDDED_BATCH_LINES), and
 * a pass through an interval's lines ran its batches back to back: a payment of that moment met one at each of its
 * three phases. Under the payment bench the slowest 1 % took 117-208 ms with the loop as it was and 63-81 ms with
 * it off. Resting as long as each batch took lets the payments caught behind one batch finish before the next: p99
 * 87-121 ms, 21 % less on the means of six alternated pairs (docs/performance-log.md, fifteenth session). Ingestion
 * keeps half its speed under load, still about three times the pace of the payments that make the lines, and all of
 * it with no request in flight (compose.ts passes the loop that condition). On PostgreSQL the batches run beside
 * the requests but share their cores, and the same rest with smaller batches spreads a pass out there too
 * (ingest.ts, POSTGRES_SERVING_BATCH_LINES).
 */
const BUSY_SHARE = 0.5;

export function createReconciliationDomain(
  ctx: AppContext,
  deps: { rails: Pick<RailSetup, 'rail' | 'statements'> },
): ReconciliationDomain {
  const { db, clock, config, logger } = ctx;
  const intervalMs = config.reconcileIntervalMs;
  const budgetMs = config.unknownBudgetSeconds * 1000;
  const metrics = createReconciliationMetrics(ctx.metrics.registry);
  const source = deps.rails.statements;

  // A source that stays down (or a production deployment with no gateway) would log the same warning every
  // interval: say it once, then again only once a minute while it lasts.
  const lastWarned = new Map<string, number>();
  const quietLogger = {
    warn(obj: object, msg: string) {
      const now = Date.now();
      if (now - (lastWarned.get(msg) ?? 0) < 60_000) return;
      lastWarned.set(msg, now);
      logger.warn(obj, msg);
    },
    error: (obj: object, msg: string) => logger.error(obj, msg),
  };
  const onIngested = (s: IngestSummary) => {
    metrics.linesIngested.inc({ source: source.name }, s.fresh);
    for (const [kind, n] of Object.entries(s.exceptionsByKind)) metrics.exceptionsOpened.inc({ kind }, n);
    for (const a of s.actions) metrics.paymentsDecided.inc({ outcome: a.kind });
    for (const p of s.moved) ctx.metrics.paymentTransition(p);
  };
  // `serving`: whether requests are in flight (run-worker.ts), which makes a PostgreSQL batch smaller (ingest.ts).
  const ingest = (serving: boolean): Promise<IngestResult> =>
    ingestNextPage({
      db,
      clock,
      source,
      logger: quietLogger,
      onIngested,
      maxBatchLines: batchLinesFor(db.kind, serving),
    });
  const balance = createBalanceCheck({
    db,
    clock,
    source,
    intervalMs,
    logger: quietLogger,
  });
  const requery = createRequery({
    db,
    clock,
    rail: deps.rails.rail,
    intervalMs,
    budgetMs,
    logger,
    onMoved: (p) => ctx.metrics.paymentTransition(p),
  });
  const watch = createWatch({ db, clock, graceMs: budgetMs });

  /** Ingests what is new; the statement's position when there was nothing (the balance check's condition). */
  async function caughtUpAt(serving: boolean): Promise<StatementPosition | null> {
    const r = await ingest(serving);
    return r.kind === 'caught_up' ? { cursor: r.cursor } : null;
  }

  /**
   * A backlog is read batch after batch; once a batch reaches the statement's end the loop waits for the next
   * interval, as it does when there was nothing new. Coming back at once for what arrived meanwhile made, under
   * steady payments, a pass every few tens of milliseconds for a few dozen lines, each its dozen statements and
   * commit, and its lines so fresh that it locked payments the payment path was booking that moment (which then
   * waited for it) and completed some of them itself, one transition at a time (docs/performance-log.md).
   */
  async function statementNext(step: WorkerStep = { serving: true }): Promise<string | undefined> {
    const result = await ingest(step.serving);
    if (result.kind === 'raced' || (result.kind === 'ingested' && !result.atEnd)) return result.kind;
    if (result.kind === 'unavailable') return undefined;
    await balance.checkDue(() => caughtUpAt(step.serving));
    return undefined;
  }

  return {
    metrics,
    registerAdminRoutes(app) {
      registerReconciliationAdminRoutes(app, { db, clock });
    },
    workers: [
      {
        name: 'reconciliation.statement',
        processNext: statementNext,
        idleMs: intervalMs,
        busyShare: BUSY_SHARE,
      },
      { name: 'reconciliation.requery', processNext: requery.requeryNext, idleMs: intervalMs },
      { name: 'reconciliation.watch', processNext: watch.checkNext, idleMs: intervalMs },
    ],
    async reconcileOnce() {
      // An operator's request: the API may be serving others meanwhile, so its batches are the serving size.
      const pass: ReconcilePass = { pages: 0, requeried: 0, watched: 0, balances: [] };
      for (let i = 0; i < MAX_PASS_STEPS; i++) {
        const r = await ingest(true);
        if (r.kind !== 'ingested' && r.kind !== 'raced') break;
        pass.pages++;
      }
      for (let i = 0; i < MAX_PASS_STEPS && (await requery.requeryNext()) !== undefined; i++) pass.requeried++;
      // Re-queries may have completed payments whose debits are already stored, or shown new lines: read again.
      for (let i = 0; i < MAX_PASS_STEPS; i++) {
        const r = await ingest(true);
        if (r.kind !== 'ingested' && r.kind !== 'raced') break;
        pass.pages++;
      }
      for (let i = 0; i < MAX_PASS_STEPS && (await watch.checkNext()) !== undefined; i++) pass.watched++;
      pass.balances = await balance.checkDue(() => caughtUpAt(true));
      return pass;
    },
  };
}
