import type { RailCode } from '../config.ts';
import type { DocType } from '../rails/rail.ts';
import type { StoredDestination } from './domain.ts';

/**
 * A beneficiary's status (spec, Beneficiary states):
 * - ACTIVE: created by POST; its alias may change (PATCH); DELETE archives it.
 * - INACTIVE: archived. Still readable, never changed again and never revived (the database refuses both).
 */
export type BeneficiaryStatus = 'ACTIVE' | 'INACTIVE';

export interface Beneficiary {
  id: string;
  clientId: string;
  alias: string;
  status: BeneficiaryStatus;
  createdAt: Date;
  destination: StoredDestination;
}

/** What a client sends to create one, after validation: the destination as it will be frozen. */
export interface NewBeneficiary {
  alias: string;
  destination: {
    rail: RailCode;
    account: string;
    bankCode: string;
    docType: DocType;
    docNumber: string;
    /** CCE only; always null on PM. */
    beneficiaryName: string | null;
  };
}

/** The Beneficiary object of the API (spec, Beneficiary resource). */
export interface PublicBeneficiary {
  id: string;
  alias: string;
  rail: RailCode;
  account: string;
  bankCode: string | null;
  docType: DocType;
  docNumber: string;
  beneficiaryName: string | null;
  status: BeneficiaryStatus;
  createdAt: string;
}

export const ALIAS_MAX_LENGTH = 100;
/** Not a format rule (the rail judges the account); a bound so that junk cannot bloat the unique index. */
export const ACCOUNT_MAX_LENGTH = 64;
export const BENEFICIARY_NAME_MAX_LENGTH = 35;

const ID_DIGITS = 16;
const ID_FORMAT = /^ben_[0-9]{16}$/;

/** Ids are a sequence number behind a prefix, equally wide, so a larger id is always a later beneficiary. */
export function beneficiaryIdOf(seq: bigint): string {
  return `ben_${seq.toString().padStart(ID_DIGITS, '0')}`;
}

/** The sequence number behind an id, or null when the text is no beneficiary id at all. */
export function seqOfBeneficiaryId(id: string): bigint | null {
  return ID_FORMAT.test(id) ? BigInt(id.slice(4)) : null;
}

export function toPublicBeneficiary(b: Beneficiary): PublicBeneficiary {
  return {
    id: b.id,
    alias: b.alias,
    rail: b.destination.rail,
    account: b.destination.account,
    bankCode: b.destination.bankCode,
    docType: b.destination.docType,
    docNumber: b.destination.docNumber,
    beneficiaryName: b.destination.beneficiaryName,
    status: b.status,
    createdAt: b.createdAt.toISOString(),
  };
}
