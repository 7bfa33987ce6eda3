import type { AppContext } from '../context.ts';
import type { Queryable } from '../db/db.ts';
import type { Domain } from '../domain.ts';
import type { Destination } from '../rails/rail.ts';
import { findById } from './repository.ts';
import { registerBeneficiaryRoutes } from './routes.ts';
import { createBeneficiaryService } from './service.ts';

/** A stored destination as a payment sees it. bankCode and beneficiaryName may be null on old records. */
export type StoredDestination = Omit<Destination, 'bankCode'> & { bankCode: string | null };

export type ResolveBeneficiaryResult =
  /** active false: archived. Payments refuse it (404) unless they replay an earlier payment that used it. */
  { kind: 'ok'; beneficiaryId: string; active: boolean; destination: StoredDestination } | { kind: 'not_found' };

/** Stored, immutable destinations and their routes. */
export interface BeneficiaryDomain extends Domain {
  /**
   * This client's beneficiary (active or archived), or not_found (unknown id, or another client's).
   * Takes a share lock on the row: inside the caller's transaction an archive waits for it to end (and an archive
   * in flight is waited for and then seen), so a payment never commits against a beneficiary archived before it.
   */
  resolveForPayment(q: Queryable, clientId: string, beneficiaryId: string): Promise<ResolveBeneficiaryResult>;
}

export function createBeneficiaryDomain(ctx: AppContext): BeneficiaryDomain {
  const service = createBeneficiaryService({ db: ctx.db, clock: ctx.clock });
  return {
    registerPublicRoutes(app) {
      registerBeneficiaryRoutes(app, service);
    },
    async resolveForPayment(q, clientId, beneficiaryId) {
      const b = await findById(q, clientId, beneficiaryId, { lock: 'share' });
      if (!b) return { kind: 'not_found' };
      return { kind: 'ok', beneficiaryId: b.id, active: b.status === 'ACTIVE', destination: b.destination };
    },
  };
}
