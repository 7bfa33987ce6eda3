import type { AuthContext } from '../auth/authenticate.ts';
import { batchStartTurns } from '../db/batch-start.ts';
import type { Db } from '../db/db.ts';
import type { PaymentPathMetrics } from '../metrics/metrics.ts';
import type { Rail, RailOutcome } from '../rails/rail.ts';
import { type BatchResult, createBatcher } from '../shared/batcher.ts';
import type { Clock } from '../shared/clock.ts';
import { failpoint } from '../shared/failpoints.ts';
import { createPairBatcher } from '../shared/pair-batcher.ts';
import { advanceBatch } from './advance.ts';
import { type Booked, bookBatch, failsPayment } from './book.ts';
import { type CreateResult, type PrepareDeps, preparePayment, type ReserveItem } from './create.ts';
import { submitToRail } from './dispatch.ts';
import type { Payment } from './repository.ts';

/**
 * POST /v2/payments as a pipeline of batches (group commit in the application):
 *
 *   prepare   per request, no lock: body rules, destination, fingerprint, rate          (create.ts)
 *   reserve   per batch: the nonce (auth/deferred-nonce.ts), reused key, archive, quote, rules against running
 *             totals, hold, payment row with its rail reference, events of payments failed at once  (reserve.ts)
 *   dispatch  per batch, no transaction: the rail gets the batch's processing payments  (dispatch.ts)
 *   book      per batch: each outcome with its ledger effect and event                   (book.ts)
 *
 * On PostgreSQL reserve and book share one statement and one commit (advance.ts): each step books what the rail
 * answered since the last step and reserves what arrived since, while the rail has the batch in between; on the
 * embedded database each phase has batches of its own. Dispatch is a batcher of its own, so the rail's round trip
 * overlaps the database's work instead of adding to it. An answer that fails its payment gives its hold back, which
 * locks the balance: it is booked by a batcher of its own, outside the step (lock order, migration 0034). A batch
 * that fails answers every request in it with the error (a 5xx): its transaction rolled back, so a retry with the
 * same idempotency key starts afresh; a booking that fails leaves the payments processing, and the follow-up worker
 * finishes them (follow-up.ts).
 */

/** A payment the rail has answered, waiting for its booking. */
interface Submitted {
  payment: Payment;
  outcome: RailOutcome;
}

export interface PipelineDeps extends PrepareDeps {
  db: Db;
  clock: Clock;
  rail: Rail;
  logger: { warn(obj: object, msg: string): void };
  metrics: PaymentPathMetrics;
  lanes: number;
  maxBatch: number;
}

export interface PaymentPipeline {
  create(auth: AuthContext, idempotencyKey: string, body: Record<string, unknown>): Promise<CreateResult>;
  /** Resolves once no batch is in flight. */
  drained(): Promise<void>;
}

export function createPaymentPipeline(deps: PipelineDeps): PaymentPipeline {
  const { db, clock, metrics } = deps;
  const startTurns = batchStartTurns(db);
  const stepConnection = db.heldConnection?.() ?? db;

  const step = createPairBatcher<ReserveItem, CreateResult, Submitted, Payment>({
    lanes: deps.lanes,
    maxBatch: deps.maxBatch,
    startTurns,
    // On PostgreSQL a step's call and commit cost as much as its payments, and the server, the backends and the
    // load share the cores: one call for both phases made about 8 % more payments a second (docs/performance-log.md).
    // The embedded database runs every statement on the service's one thread, where a longer step only keeps HTTP
    // waiting: there the phases stay batches of their own (9 % fewer payments a second joined).
    joint: db.kind === 'postgres',
    onRun: (seconds) => metrics.observeBatchRun('payment_step', seconds),
    async run(reserve, book) {
      if (reserve.length > 0) metrics.observePaymentBatch('reserve', reserve.length);
      if (book.length > 0) metrics.observePaymentBatch('book', book.length);
      const { reserved, booked } = await advanceBatch(db, stepConnection, clock, reserve, book);
      if (reserve.length > 0) failpoint('payments.after-reserve');
      if (book.length > 0) failpoint('payments.after-book');
      for (const r of reserved) {
        if (r.ok && (r.value.kind === 'created' || r.value.kind === 'rejected')) countMove(r.value.payment);
      }
      return { a: reserved, b: booked.map((r) => (r.ok ? movedTo(r.value) : r)) };
    },
  });

  const dispatch = createBatcher<Payment, RailOutcome>({
    lanes: deps.lanes,
    maxBatch: deps.maxBatch,
    startTurns,
    onRun: (seconds) => metrics.observeBatchRun('payment_dispatch', seconds),
    async run(payments): Promise<BatchResult<RailOutcome>[]> {
      metrics.observePaymentBatch('dispatch', payments.length);
      const outcomes = await submitToRail(deps.rail, payments, deps.logger);
      failpoint('payments.after-submit');
      return outcomes.map((outcome) => ({ ok: true, value: outcome }));
    },
  });

  const bookFailures = createBatcher<Submitted, Payment>({
    lanes: deps.lanes,
    maxBatch: deps.maxBatch,
    startTurns,
    onRun: (seconds) => metrics.observeBatchRun('payment_book_failed', seconds),
    async run(submitted): Promise<BatchResult<Payment>[]> {
      metrics.observePaymentBatch('book', submitted.length);
      const booked = await bookBatch(db, clock, submitted);
      failpoint('payments.after-book');
      return booked.map(movedTo);
    },
  });

  metrics.setBatchLanes('payment_step', step.lanes);
  metrics.setBatchLanes('payment_dispatch', dispatch.lanes);
  metrics.setBatchLanes('payment_book_failed', bookFailures.lanes);

  function movedTo(b: Booked): BatchResult<Payment> {
    if (b.moved) countMove(b.payment);
    return { ok: true, value: b.payment };
  }

  function countMove(p: Payment): void {
    metrics.paymentTransition({ rail: p.rail, state: p.state, subStatus: p.subStatus });
  }

  return {
    async create(auth, idempotencyKey, body) {
      const prepared = await preparePayment(deps, auth, idempotencyKey, body);
      if (prepared.kind === 'refused') return prepared;
      const t0 = performance.now();
      const reserved = await step.addA(prepared.item, auth.clientId);
      // The batch committed: it applied the nonce (or found it a replay) before deciding anything else.
      if (auth.deferredNonce) auth.deferredNonce.settled = true;
      const t1 = performance.now();
      metrics.observePaymentPhase('reserve', (t1 - t0) / 1000);
      if (reserved.kind !== 'created' || reserved.payment.state !== 'processing') return reserved;
      const outcome = await dispatch.add(reserved.payment, auth.clientId);
      const t2 = performance.now();
      metrics.observePaymentPhase('dispatch', (t2 - t1) / 1000);
      const submitted = { payment: reserved.payment, outcome };
      const booked = await (failsPayment(outcome)
        ? bookFailures.add(submitted, auth.clientId)
        : step.addB(submitted, auth.clientId));
      metrics.observePaymentPhase('book', (performance.now() - t2) / 1000);
      return { kind: 'created', payment: booked };
    },
    async drained() {
      await step.drained();
      await dispatch.drained();
      await bookFailures.drained();
      // A booking queued behind the rail may have started a step after the first wait.
      await step.drained();
    },
  };
}
