import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';

/**
 * The service's Prometheus metrics, one registry per composed service (several services in one process, as in
 * tests, must not share prom-client's global registry). Counters and histograms here are per process and are
 * summed across processes by Prometheus; the gauges of shared state (payments awaiting a decision, the outbox,
 * reconciliation) are read from the database on scrape (database-gauges.ts), so every process reports the same
 * deployment-wide value. docs/operations.md lists every metric with example alert rules.
 */

/** A short, fixed name of the payment-path step a batch belongs to (a label: never an id). */
export type PaymentBatchPhase = 'reserve' | 'dispatch' | 'book';

/**
 * A batched path of the service (shared/batcher.ts): the payment path's database step (reserve and booking), its
 * hand-over to the rail, the booking of failed answers, the signed reads of a payment, the nonce store's flushes.
 */
export type BatchPath = 'payment_step' | 'payment_dispatch' | 'payment_book_failed' | 'payment_read' | 'nonce';

/** What the payment path (payments/, rails/, auth/nonce-store.ts) reports. */
export interface PaymentPathMetrics {
  /**
   * One committed payment transition (creation included: `state` is where the payment now is). Call it after the
   * transaction that made the move has committed, once per payment moved, never for an `unchanged` move.
   */
  paymentTransition(moved: { rail: string; state: string; subStatus: string | null }): void;
  /** Size of one batch of payment requests handled together by the payment path, per phase. */
  observePaymentBatch(phase: PaymentBatchPhase, size: number): void;
  /**
   * Time one payment request spent in a phase: waiting for the batch in flight before its own, then its own batch.
   * Where a payment's latency goes under load (the batch sizes alone do not tell).
   */
  observePaymentPhase(phase: PaymentBatchPhase, seconds: number): void;
  /** Size of one flush of the nonce store (requests whose nonce marks one statement applied). */
  observeNonceBatch(size: number): void;
  /**
   * How long one batch of a path ran (its statement, commit and answers), whatever its outcome: while it runs its
   * lane takes no other batch, so the sum over time divided by the path's lanes is how busy the path is.
   */
  observeBatchRun(path: BatchPath, seconds: number): void;
  /** How many lanes a path runs side by side (each runs one batch at a time). */
  setBatchLanes(path: BatchPath, lanes: number): void;
}

export type HttpListener = 'public' | 'admin';
export type DeliveryResult = 'delivered' | 'retrying' | 'dead';

export interface Metrics extends PaymentPathMetrics {
  registry: Registry;
  observeRequest(r: { listener: HttpListener; method: string; route: string; status: number; seconds: number }): void;
  webhookDelivery(result: DeliveryResult, seconds: number): void;
}

/** Powers of two up to the largest batch any coalescer here forms (512). */
const BATCH_BUCKETS = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512];
/** From a cached read (1 ms) to a gateway call near its timeout (10 s). */
const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

export function createMetrics(options: { processMetrics?: boolean } = {}): Metrics {
  const registry = new Registry();
  const registers = [registry];
  // CPU, memory, event loop lag, handles, GC: the standard names dashboards already know (no prefix).
  if (options.processMetrics !== false) collectDefaultMetrics({ register: registry });

  const requests = new Counter({
    name: 'dispersa_http_requests_total',
    help: 'HTTP requests answered, per listener, method, route template and status code',
    labelNames: ['listener', 'method', 'route', 'status'] as const,
    registers,
  });
  const requestSeconds = new Histogram({
    name: 'dispersa_http_request_duration_seconds',
    help: 'Time from the request arriving to the answer being sent, per listener, method and route template',
    labelNames: ['listener', 'method', 'route'] as const,
    buckets: LATENCY_BUCKETS,
    registers,
  });
  const transitions = new Counter({
    name: 'dispersa_payment_transitions_total',
    help: 'Committed payment transitions, per rail, target state and subStatus (empty when none)',
    labelNames: ['rail', 'state', 'sub_status'] as const,
    registers,
  });
  const paymentBatches = new Histogram({
    name: 'dispersa_payment_batch_size',
    help: 'Payment requests handled together in one batch, per phase of the payment path',
    labelNames: ['phase'] as const,
    buckets: BATCH_BUCKETS,
    registers,
  });
  const paymentPhaseSeconds = new Histogram({
    name: 'dispersa_payment_phase_seconds',
    help: 'Time a payment request spent in each phase of the payment path, its wait for a batch included',
    labelNames: ['phase'] as const,
    buckets: LATENCY_BUCKETS,
    registers,
  });
  const nonceBatches = new Histogram({
    name: 'dispersa_nonce_batch_size',
    help: 'Requests whose nonce marks one flush of the nonce store applied',
    buckets: BATCH_BUCKETS,
    registers,
  });
  const batchRunSeconds = new Histogram({
    name: 'dispersa_batch_run_seconds',
    help:
      'Time one batch of a batched path took to run (its statement, commit and answers), per path; ' +
      'rate of the sum divided by dispersa_batch_lanes is the share of the time the path was busy',
    labelNames: ['path'] as const,
    buckets: LATENCY_BUCKETS,
    registers,
  });
  const batchLanes = new Gauge({
    name: 'dispersa_batch_lanes',
    help: 'Lanes of a batched path, each running one batch at a time, per path',
    labelNames: ['path'] as const,
    registers,
  });
  const deliveries = new Counter({
    name: 'dispersa_webhook_deliveries_total',
    help: 'Webhook delivery attempts, per result: delivered, retrying (failed, another attempt is scheduled), dead',
    labelNames: ['result'] as const,
    registers,
  });
  const deliverySeconds = new Histogram({
    name: 'dispersa_webhook_delivery_duration_seconds',
    help: "Time of one delivery attempt, from the request to the receiver's answer or the failure",
    buckets: LATENCY_BUCKETS,
    registers,
  });
  // Every label value exists from the start, so rate() and increase() see the first event too.
  for (const result of ['delivered', 'retrying', 'dead'] as const) deliveries.inc({ result }, 0);
  const uptime = new Gauge({ name: 'dispersa_up', help: 'Always 1 while the process serves metrics', registers });
  uptime.set(1);

  return {
    registry,
    observeRequest(r) {
      requests.inc({ listener: r.listener, method: r.method, route: r.route, status: String(r.status) });
      requestSeconds.observe({ listener: r.listener, method: r.method, route: r.route }, r.seconds);
    },
    paymentTransition(moved) {
      transitions.inc({ rail: moved.rail, state: moved.state, sub_status: moved.subStatus ?? '' });
    },
    observePaymentBatch(phase, size) {
      paymentBatches.observe({ phase }, size);
    },
    observePaymentPhase(phase, seconds) {
      paymentPhaseSeconds.observe({ phase }, seconds);
    },
    observeNonceBatch(size) {
      nonceBatches.observe(size);
    },
    observeBatchRun(path, seconds) {
      batchRunSeconds.observe({ path }, seconds);
    },
    setBatchLanes(path, lanes) {
      batchLanes.set({ path }, lanes);
    },
    webhookDelivery(result, seconds) {
      deliveries.inc({ result });
      deliverySeconds.observe(seconds);
    },
  };
}
