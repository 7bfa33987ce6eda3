import type { AuthContext } from '../auth/authenticate.ts';
import { availableBalance } from '../ledger/ledger.ts';
import { type CreateDeps, type CreateOutcome, createPayment } from './create.ts';
import { type DispatchDeps, dispatchPayment } from './dispatch.ts';
import { findPayment, type ListFilter, listPayments, type Payment } from './repository.ts';

/** The payment operations the routes call. */
export interface PaymentService {
  create(auth: AuthContext, idempotencyKey: string, body: Record<string, unknown>): Promise<CreateOutcome>;
  get(clientId: string, id: string): Promise<Payment | null>;
  list(filter: ListFilter): Promise<{ items: Payment[]; hasMore: boolean }>;
  available(clientId: string, currency: string): Promise<bigint>;
}

export function createPaymentService(deps: CreateDeps & DispatchDeps): PaymentService {
  return {
    async create(auth, idempotencyKey, body) {
      const outcome = await createPayment(deps, auth, idempotencyKey, body);
      if (outcome.kind === 'created' && outcome.payment.state === 'processing') {
        return { kind: 'created', payment: await dispatchPayment(deps, outcome.payment) };
      }
      return outcome;
    },
    get: (clientId, id) => findPayment(deps.db, id, { clientId }),
    list: (filter) => listPayments(deps.db, filter),
    available: (clientId, currency) => availableBalance(deps.db, clientId, currency),
  };
}
