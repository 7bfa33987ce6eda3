import type { AuthContext } from '../auth/authenticate.ts';
import type { Db } from '../db/db.ts';
import type { PaymentPathMetrics } from '../metrics/metrics.ts';
import type { Rail, RailOutcome } from '../rails/rail.ts';
import { type BatchResult, createBatcher } from '../shared/batcher.ts';
import type { Clock } from '../shared/clock.ts';
import { failpoint } from '../shared/failpoints.ts';
import { bookBatch } from './book.ts';
import { type CreateResult, type PrepareDeps, preparePayment, type ReserveItem } from './create.ts';
import { submitToRail } from './dispatch.ts';
import type { Payment } from './repository.ts';
import { reserveBatch } from './reserve.ts';

/**
 * POST /v2/payments as a pipeline of batches (group commit in the application):
 *
 *   prepare   per request, no lock: body rules, destination, fingerprint, rate          (create.ts)
 *   reserve   per batch, one transaction: the nonce (auth/deferred-nonce.ts), reused key, archive, quote,
 *             rules against running totals, hold, payment row with its rail reference, events of payments
 *             failed at once                                                            (reserve.ts)
 *   dispatch  per batch, no transaction: the rail gets the batch's processing payments  (dispatch.ts)
 *   book      per batch, one transaction: each outcome with its ledger effect and event  (book.ts)
 *
 * Reserve, dispatch and book are three batchers, so while one batch is booked the next is at the rail and the one
 * after it is reserved: each phase's round trip overlaps the others' instead of adding to them. A batch that fails
 * answers every request in it with the error (a 5xx): its transaction rolled back, so a retry with the same
 * idempotency key starts afresh; a booking that fails leaves the payments processing, and the follow-up worker
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

  const reserve = createBatcher<ReserveItem, CreateResult>({
    lanes: deps.lanes,
    maxBatch: deps.maxBatch,
    async run(items) {
      metrics.observePaymentBatch('reserve', items.length);
      const results = await reserveBatch(db, clock, items);
      failpoint('payments.after-reserve');
      for (const r of results) {
        if (r.ok && (r.value.kind === 'created' || r.value.kind === 'rejected')) countMove(r.value.payment);
      }
      return results;
    },
  });

  const dispatch = createBatcher<Payment, RailOutcome>({
    lanes: deps.lanes,
    maxBatch: deps.maxBatch,
    async run(payments): Promise<BatchResult<RailOutcome>[]> {
      metrics.observePaymentBatch('dispatch', payments.length);
      const outcomes = await submitToRail(deps.rail, payments, deps.logger);
      failpoint('payments.after-submit');
      return outcomes.map((outcome) => ({ ok: true, value: outcome }));
    },
  });

  const book = createBatcher<Submitted, Payment>({
    lanes: deps.lanes,
    maxBatch: deps.maxBatch,
    async run(submitted): Promise<BatchResult<Payment>[]> {
      metrics.observePaymentBatch('book', submitted.length);
      const booked = await bookBatch(db, clock, submitted);
      failpoint('payments.after-book');
      return booked.map((b) => {
        if (b.moved) countMove(b.payment);
        return { ok: true, value: b.payment };
      });
    },
  });

  function countMove(p: Payment): void {
    metrics.paymentTransition({ rail: p.rail, state: p.state, subStatus: p.subStatus });
  }

  return {
    async create(auth, idempotencyKey, body) {
      const prepared = await preparePayment(deps, auth, idempotencyKey, body);
      if (prepared.kind === 'refused') return prepared;
      const t0 = performance.now();
      const reserved = await reserve.add(prepared.item, auth.clientId);
      // The batch committed: it applied the nonce (or found it a replay) before deciding anything else.
      if (auth.deferredNonce) auth.deferredNonce.settled = true;
      const t1 = performance.now();
      metrics.observePaymentPhase('reserve', (t1 - t0) / 1000);
      if (reserved.kind !== 'created' || reserved.payment.state !== 'processing') return reserved;
      const outcome = await dispatch.add(reserved.payment, auth.clientId);
      const t2 = performance.now();
      metrics.observePaymentPhase('dispatch', (t2 - t1) / 1000);
      const booked = await book.add({ payment: reserved.payment, outcome }, auth.clientId);
      metrics.observePaymentPhase('book', (performance.now() - t2) / 1000);
      return { kind: 'created', payment: booked };
    },
    async drained() {
      await reserve.drained();
      await dispatch.drained();
      await book.drained();
    },
  };
}
