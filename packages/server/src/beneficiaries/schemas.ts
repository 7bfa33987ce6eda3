import { type Static, Type } from '@sinclair/typebox';
import type { RailCode } from '../config.ts';
import { PageQuery, pageOf, Timestamp } from '../http/schema-helpers.ts';
import type { DocType } from '../rails/rail.ts';
import { ACCOUNT_MAX_LENGTH, ALIAS_MAX_LENGTH, BENEFICIARY_NAME_MAX_LENGTH } from './model.ts';

/**
 * Request and response schemas of /v2/beneficiaries. They validate every single-field rule (and generate the
 * OpenAPI document); the rules that relate two fields are in validation.ts.
 */

// `enum` rather than a union of literals: the validation error then reads "rail must be one of PM, CCE".
const RailField = Type.Unsafe<RailCode>({ type: 'string', enum: ['PM', 'CCE'], description: 'PM or CCE.' });
const DocTypeField = Type.Unsafe<DocType>({
  type: 'string',
  enum: ['V', 'E', 'J', 'P', 'G'],
  description: 'V, E, J, P or G.',
});

const Alias = Type.String({
  minLength: 1,
  maxLength: ALIAS_MAX_LENGTH,
  pattern: '\\S',
  errorMessage: `must be 1 to ${ALIAS_MAX_LENGTH} characters and not blank`,
  description: `Human label, 1 to ${ALIAS_MAX_LENGTH} characters. The only editable field.`,
});

export const NewBeneficiaryBody = Type.Object({
  rail: RailField,
  account: Type.String({
    minLength: 1,
    maxLength: ACCOUNT_MAX_LENGTH,
    errorMessage: `must be 1 to ${ACCOUNT_MAX_LENGTH} characters`,
    description:
      'PM: 11-digit phone with leading 0; CCE: 20-digit account. Not format-validated: the rail rejects a malformed one.',
  }),
  bankCode: Type.String({
    pattern: '^[0-9]{4}$',
    errorMessage: 'must be 4 digits',
    description: '4-digit bank code. With CCE it must equal the first 4 digits of account.',
  }),
  docType: DocTypeField,
  docNumber: Type.String({
    pattern: '^[0-9]{1,15}$',
    errorMessage: 'must be 1 to 15 digits, no prefix',
    description: 'Digits only, at most 15. The bank receives docType followed by docNumber.',
  }),
  beneficiaryName: Type.Optional(
    Type.Union(
      [
        Type.String({
          minLength: 1,
          maxLength: BENEFICIARY_NAME_MAX_LENGTH,
          pattern: '\\S',
          errorMessage: `must be 1 to ${BENEFICIARY_NAME_MAX_LENGTH} characters and not blank (never truncated)`,
        }),
        Type.Null(),
      ],
      {
        description: `Required with CCE: the name for the interbank message, at most ${BENEFICIARY_NAME_MAX_LENGTH} characters. Ignored with PM (stored as null).`,
      },
    ),
  ),
  alias: Alias,
});
export type NewBeneficiaryBody = Static<typeof NewBeneficiaryBody>;

export const AliasPatchBody = Type.Object(
  { alias: Alias },
  { description: 'Only alias is read; destination fields sent here are ignored (the destination is frozen).' },
);
export type AliasPatchBody = Static<typeof AliasPatchBody>;

export const BeneficiaryIdParams = Type.Object({ id: Type.String({ description: 'The beneficiary id.' }) });

export const BeneficiaryListQuery = Type.Object(PageQuery);
export type BeneficiaryListQuery = Static<typeof BeneficiaryListQuery>;

export const BeneficiaryObject = Type.Object({
  id: Type.String({ description: 'The beneficiaryId used in payments. Larger ids are later beneficiaries.' }),
  alias: Type.String(),
  rail: RailField,
  account: Type.String({ description: 'Phone (PM) or account (CCE). Immutable.' }),
  bankCode: Type.Union([Type.String(), Type.Null()], {
    description: '4-digit bank code. Immutable. Null on records created before the field existed.',
  }),
  docType: DocTypeField,
  docNumber: Type.String(),
  beneficiaryName: Type.Union([Type.String(), Type.Null()], {
    description: 'CCE only (null on PM). Immutable. Null on CCE records created before the field existed.',
  }),
  status: Type.Unsafe<'ACTIVE' | 'INACTIVE'>({
    type: 'string',
    enum: ['ACTIVE', 'INACTIVE'],
    description: 'ACTIVE, or INACTIVE once archived.',
  }),
  createdAt: Timestamp,
});

export const BeneficiaryPage = pageOf(BeneficiaryObject);
