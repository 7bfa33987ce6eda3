import { Counter, Gauge, Registry } from 'prom-client';

/**
 * Reconciliation's metrics, in a registry of its own: several services in one process (tests) must not
 * collide in prom-client's global one. Whoever exposes metrics later merges it (Registry.merge).
 * Gauge values are numbers; a difference beyond 2^53 minor units would lose precision there, never in the
 * exception, which keeps the exact amount.
 */
export interface ReconciliationMetrics {
  registry: Registry;
  linesIngested: Counter<'source'>;
  exceptionsOpened: Counter<'kind'>;
  paymentsDecided: Counter<'outcome'>;
  unexplainedDifference: Gauge<'currency'>;
}

export function createReconciliationMetrics(): ReconciliationMetrics {
  const registry = new Registry();
  return {
    registry,
    linesIngested: new Counter({
      name: 'dispersa_reconciliation_lines_ingested_total',
      help: 'Statement lines stored, per source',
      labelNames: ['source'],
      registers: [registry],
    }),
    exceptionsOpened: new Counter({
      name: 'dispersa_reconciliation_line_exceptions_total',
      help: 'Statement lines that became an exception at ingestion, per kind',
      labelNames: ['kind'],
      registers: [registry],
    }),
    paymentsDecided: new Counter({
      name: 'dispersa_reconciliation_payments_decided_total',
      help: 'Payments moved by the statement evidence, per move',
      labelNames: ['outcome'],
      registers: [registry],
    }),
    unexplainedDifference: new Gauge({
      name: 'dispersa_reconciliation_balance_unexplained_minor',
      help: 'Bank balance minus ledger, baseline and explained differences, in minor units, per currency',
      labelNames: ['currency'],
      registers: [registry],
    }),
  };
}
