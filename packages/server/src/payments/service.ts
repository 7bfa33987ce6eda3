import type { AuthContext } from '../auth/authenticate.ts';
import { availableBalance } from '../ledger/ledger.ts';
import type { CreateResult } from './create.ts';
import { createPaymentPipeline, type PipelineDeps } from './pipeline.ts';
import { findPayment, type ListFilter, listPayments, type Payment, seqOfPaymentId } from './repository.ts';

/** The payment operations the routes call. */
export interface PaymentService {
  create(auth: AuthContext, idempotencyKey: string, body: Record<string, unknown>): Promise<CreateResult>;
  get(clientId: string, id: string): Promise<Payment | null>;
  list(filter: ListFilter): Promise<{ items: Payment[]; hasMore: boolean }>;
  available(clientId: string, currency: string): Promise<bigint>;
}

export function createPaymentService(deps: PipelineDeps): PaymentService {
  const pipeline = createPaymentPipeline(deps);
  return {
    create: (auth, idempotencyKey, body) => pipeline.create(auth, idempotencyKey, body),
    // An id that cannot exist is not looked up.
    get: async (clientId, id) => (seqOfPaymentId(id) === null ? null : findPayment(deps.db, id, { clientId })),
    list: (filter) => listPayments(deps.db, filter),
    available: (clientId, currency) => availableBalance(deps.db, clientId, currency),
  };
}
