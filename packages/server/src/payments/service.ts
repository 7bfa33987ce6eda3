import type { AuthContext } from '../auth/authenticate.ts';
import { availableBalance } from '../ledger/ledger.ts';
import { createBatcher } from '../shared/batcher.ts';
import type { CreateResult } from './create.ts';
import { createPaymentPipeline, type PipelineDeps } from './pipeline.ts';
import { findPaymentsByIds, type ListFilter, listPayments, type Payment, seqOfPaymentId } from './repository.ts';

/** The payment operations the routes call. */
export interface PaymentService {
  create(auth: AuthContext, idempotencyKey: string, body: Record<string, unknown>): Promise<CreateResult>;
  get(clientId: string, id: string): Promise<Payment | null>;
  list(filter: ListFilter): Promise<{ items: Payment[]; hasMore: boolean }>;
  available(clientId: string, currency: string): Promise<bigint>;
}

export function createPaymentService(deps: PipelineDeps): PaymentService {
  const pipeline = createPaymentPipeline(deps);
  // Reads that arrive together share one query: on a busy server a round trip to the database costs more
  // than the read itself.
  const reads = createBatcher<{ clientId: string; id: string }, Payment | null>({
    lanes: 1,
    maxBatch: deps.maxBatch,
    async run(items) {
      const found = await findPaymentsByIds(
        deps.db,
        items.map((i) => i.id),
      );
      return items.map(({ clientId, id }) => {
        const p = found.get(id);
        // Another client's payment does not exist for this one.
        return { ok: true, value: p !== undefined && p.clientId === clientId ? p : null };
      });
    },
  });
  return {
    create: (auth, idempotencyKey, body) => pipeline.create(auth, idempotencyKey, body),
    // An id that cannot exist is not looked up.
    get: async (clientId, id) => (seqOfPaymentId(id) === null ? null : reads.add({ clientId, id }, '')),
    list: (filter) => listPayments(deps.db, filter),
    available: (clientId, currency) => availableBalance(deps.db, clientId, currency),
  };
}
