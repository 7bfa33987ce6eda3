import { type HttpError, httpError } from '../http/errors.ts';
import type { BeneficiaryError } from './service.ts';

/** Exhaustive: a new kind of failure does not compile until it is given a status here. */
export function beneficiaryHttpError(e: BeneficiaryError): HttpError {
  switch (e.kind) {
    case 'not_found':
      return httpError(404, 'beneficiary not found');
    case 'archived':
      return httpError(404, 'beneficiary is archived (INACTIVE) and cannot be edited');
    case 'duplicate_destination':
      return httpError(
        409,
        e.existingId === null
          ? 'an ACTIVE beneficiary with this rail and account already exists'
          : `an ACTIVE beneficiary with this rail and account already exists: ${e.existingId}; archive it first to replace it`,
      );
  }
}
