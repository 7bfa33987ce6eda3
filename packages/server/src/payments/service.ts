import type { AuthContext } from '../auth/authenticate.ts';
import type { NonceVerdict } from '../auth/nonce-store.ts';
import { availableBalance } from '../ledger/ledger.ts';
import type { CreateResult } from './create.ts';
import type { PublicPayment } from './model.ts';
import { createPaymentPipeline, type PipelineDeps } from './pipeline.ts';
import type { PaymentView } from './public-view.ts';
import { type ListFilter, listPayments, type Payment, seqOfPaymentId } from './repository.ts';
import { createSignedReads } from './signed-read.ts';

/** A signed read of one payment: the payment, none for this client, or the refusal of its nonce. */
export type ReadResult =
  | { kind: 'found'; payment: PublicPayment }
  | { kind: 'not_found' }
  | { kind: 'refused'; verdict: Exclude<NonceVerdict, 'ok'> };

/** The payment operations the routes call. */
export interface PaymentService {
  create(auth: AuthContext, idempotencyKey: string, body: Record<string, unknown>): Promise<CreateResult>;
  /**
   * One payment of the client, read by a request whose nonce is deferred to this read (auth/deferred-nonce.ts): the
   * read consumes it in the same statement and settles it.
   */
  get(auth: AuthContext, id: string): Promise<ReadResult>;
  list(filter: ListFilter): Promise<{ items: Payment[]; hasMore: boolean }>;
  available(clientId: string, currency: string): Promise<bigint>;
}

export function createPaymentService(deps: PipelineDeps): PaymentService {
  const pipeline = createPaymentPipeline(deps);
  const signedReads = createSignedReads({
    db: deps.db,
    maxBatch: deps.maxBatch,
    onBatch: (size) => deps.metrics.observeNonceBatch(size),
    onRun: (seconds) => deps.metrics.observeBatchRun('payment_read', seconds),
  });
  deps.metrics.setBatchLanes('payment_read', signedReads.lanes);
  const found = (view: PaymentView | null): ReadResult =>
    view === null ? { kind: 'not_found' } : { kind: 'found', payment: view.payment };

  return {
    create: (auth, idempotencyKey, body) => pipeline.create(auth, idempotencyKey, body),
    async get(auth, id) {
      // An id that cannot exist is not looked up; a deferred nonce is then consumed before the 404 leaves.
      if (seqOfPaymentId(id) === null) return { kind: 'not_found' };
      const deferred = auth.deferredNonce;
      // The route defers its nonce to this read (deferNonce: 'transaction'); nothing settles it before the handler.
      if (deferred === undefined || deferred.settled) throw new Error('a payment read needs its request nonce');
      const read = await signedReads.read({
        keyId: deferred.keyId,
        nonce: deferred.nonce,
        strict: deferred.strict,
        clientId: auth.clientId,
        paymentId: id,
      });
      deferred.settled = true;
      return read.verdict === 'ok' ? found(read.view) : { kind: 'refused', verdict: read.verdict };
    },
    list: (filter) => listPayments(deps.db, filter),
    available: (clientId, currency) => availableBalance(deps.db, clientId, currency),
  };
}
