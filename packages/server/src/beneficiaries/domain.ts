import type { AppContext } from '../context.ts';
import type { Queryable } from '../db/db.ts';
import type { Domain } from '../domain.ts';
import type { RailCode } from '../config.ts';
import type { DocType } from '../rails/rail.ts';

/** A stored destination as a payment sees it. bankCode and beneficiaryName may be null on old records. */
export interface StoredDestination {
  rail: RailCode;
  account: string;
  bankCode: string | null;
  docType: DocType;
  docNumber: string;
  beneficiaryName: string | null;
}

export type ResolveBeneficiaryResult =
  /** active false: archived. Payments refuse it (404) unless they replay an earlier payment that used it. */
  | { kind: 'ok'; beneficiaryId: string; active: boolean; destination: StoredDestination }
  | { kind: 'not_found' };

/** Stored, immutable destinations and their routes. */
export interface BeneficiaryDomain extends Domain {
  /** This client's beneficiary (active or archived), or not_found (unknown id, or another client's). */
  resolveForPayment(q: Queryable, clientId: string, beneficiaryId: string): Promise<ResolveBeneficiaryResult>;
}

export function createBeneficiaryDomain(_ctx: AppContext): BeneficiaryDomain {
  return {
    async resolveForPayment() {
      return { kind: 'not_found' };
    },
  };
}
