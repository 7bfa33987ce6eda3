import { Counter, Registry } from 'prom-client';

/**
 * Reconciliation's counters, in the registry of the service (GET /metrics), or one of their own when none is
 * given: several services in one process (tests) must not collide in prom-client's global one. The balance
 * and the open exceptions are gauges read from the database (metrics/database-gauges.ts), so that every process
 * reports them, not only the one whose loop made the last check.
 */
export interface ReconciliationMetrics {
  registry: Registry;
  linesIngested: Counter<'source'>;
  exceptionsOpened: Counter<'kind'>;
  paymentsDecided: Counter<'outcome'>;
}

/** A second reconciliation domain on one registry (tests run several) counts into the same counters. */
function counter<L extends string>(registry: Registry, config: { name: string; help: string; labelNames: L[] }) {
  const existing = registry.getSingleMetric(config.name);
  if (existing instanceof Counter) return existing as Counter<L>;
  return new Counter({ ...config, registers: [registry] });
}

export function createReconciliationMetrics(registry: Registry = new Registry()): ReconciliationMetrics {
  return {
    registry,
    linesIngested: counter(registry, {
      name: 'dispersa_reconciliation_lines_ingested_total',
      help: 'Statement lines stored, per source',
      labelNames: ['source'],
    }),
    exceptionsOpened: counter(registry, {
      name: 'dispersa_reconciliation_line_exceptions_total',
      help: 'Statement lines that became an exception at ingestion, per kind',
      labelNames: ['kind'],
    }),
    paymentsDecided: counter(registry, {
      name: 'dispersa_reconciliation_payments_decided_total',
      help: 'Payments moved by the statement evidence, per move',
      labelNames: ['outcome'],
    }),
  };
}
