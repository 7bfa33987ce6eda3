import { Type } from '@sinclair/typebox';
import { ACCOUNT_MAX_LENGTH } from '../beneficiaries/model.ts';
import type { RailCode } from '../config.ts';
import { MinorAmountOut, Timestamp } from '../http/schema-helpers.ts';
import type { PaymentState, SubStatus } from './model.ts';

const Nullable = <T extends ReturnType<typeof Type.String>>(t: T) => Type.Union([t, Type.Null()]);

export const PAYMENT_STATES = ['pending', 'processing', 'completed', 'failed', 'unknown'] as const;
export const SUB_STATUSES = [
  'reserved',
  'reconciling',
  'under_review',
  'at_rail',
  'declined',
  'wrong_beneficiary',
  'rejected_by_us',
] as const;

export const PaymentSchema = Type.Object({
  intentId: Type.String({ description: 'Identifier of the payment (same value as id).' }),
  id: Type.String(),
  state: Type.Unsafe<PaymentState>({
    type: 'string',
    enum: [...PAYMENT_STATES],
    description: 'The set can grow: treat a value you do not know as unknown, never as failed.',
  }),
  subStatus: Type.Unsafe<SubStatus>({
    type: ['string', 'null'],
    enum: [...SUB_STATUSES, null],
    description: 'Refines state; null when there is nothing to add. The set can grow.',
  }),
  amountMinor: MinorAmountOut,
  currency: Type.Literal('VES'),
  rail: Type.Unsafe<RailCode>({ type: 'string', enum: ['PM', 'CCE'] }),
  beneficiary: Type.String({ description: 'Phone (PM) or account (CCE).' }),
  createdAt: Timestamp,
  updatedAt: Timestamp,
  failureCode: Nullable(Type.String({ description: 'Why a failed payment failed, e.g. insufficient_balance.' })),
  beneficiaryId: Type.Optional(Type.String({ description: 'Present when paid by beneficiaryId.' })),
  sourceAmountMinor: Type.Optional(Type.String({ description: 'Debited from a non-VES balance, in its currency.' })),
  sourceCurrency: Type.Optional(Type.String()),
  quoteId: Type.Optional(Type.String()),
});

/** Largest amount a payment can carry: a signed 64-bit count of minor units. */
export const MAX_AMOUNT_MINOR = 2n ** 63n - 1n;

/** A pattern for decimal texts of at most `max` (no sign, no leading zero): shorter ones, or as long and not above. */
function atMostPattern(max: bigint): string {
  const digits = max.toString();
  const alternatives = [`[1-9][0-9]{0,${digits.length - 2}}`];
  for (let i = 0; i < digits.length; i++) {
    const d = Number(digits[i]);
    const low = i === 0 ? 1 : 0;
    if (d > low) {
      const range = d - 1 === low ? `${low}` : `[${low}-${d - 1}]`;
      const rest = digits.length - i - 1;
      alternatives.push(`${digits.slice(0, i)}${range}${rest > 0 ? `[0-9]{${rest}}` : ''}`);
    }
  }
  alternatives.push(digits);
  return `^(?:${alternatives.join('|')})$`;
}

export const RAILS = ['PM', 'CCE'] as const;
export const DOC_TYPES = ['V', 'E', 'J', 'P', 'G'] as const;
/** The inline destination's fields (way 2), in the order the spec lists them. */
export const INLINE_FIELDS = ['rail', 'beneficiary', 'bankCode', 'docType', 'docNumber', 'beneficiaryName'] as const;

/**
 * Each field's rules, written once: the body schema below checks them, and the OpenAPI document shows them.
 * `errorText` (http/errors.ts) is the 400's text when the keyword it names fails; the others use the generic text
 * naming the field ("rail must be a string", "rail must be one of PM, CCE", "currency must be VES").
 */
const FIELD = {
  amountMinor: {
    type: 'string',
    pattern: '^[1-9][0-9]*$',
    description: 'Minor units (cents) as a decimal string, at most 9223372036854775807: "150000" is 1500.00.',
    examples: ['150000'],
    errorText: { pattern: 'amountMinor must be a string holding a positive integer of minor units' },
  },
  currency: { type: 'string', const: 'VES', description: 'VES, the only currency paid out.' },
  quoteId: {
    type: 'string',
    minLength: 1,
    description: 'Non-VES balances: a live quote whose targetAmountMinor equals amountMinor.',
    errorText: { minLength: 'quoteId must be a non-empty string' },
  },
  beneficiaryId: {
    type: 'string',
    minLength: 1,
    description: 'Way 1: a stored beneficiary. Excludes every inline field.',
    errorText: { minLength: 'beneficiaryId must be a non-empty string' },
  },
  rail: { type: 'string', enum: [...RAILS], description: 'Way 2: PM (mobile payment) or CCE (interbank transfer).' },
  beneficiary: {
    type: 'string',
    pattern: '\\S',
    maxLength: ACCOUNT_MAX_LENGTH,
    description: 'Way 2: phone (PM, 11 digits with the leading 0) or account (CCE, 20 digits). Not format-validated.',
    errorText: {
      pattern: 'beneficiary must be a non-empty string',
      maxLength: `beneficiary must be at most ${ACCOUNT_MAX_LENGTH} characters`,
    },
  },
  bankCode: {
    type: 'string',
    pattern: '^[0-9]{4}$',
    description: 'Way 2, both rails: 4 digits; with CCE the first 4 digits of the account.',
    errorText: { pattern: 'bankCode must be a string of 4 digits' },
  },
  docType: { type: 'string', enum: [...DOC_TYPES], description: 'Way 2, both rails: V, E, J, P or G.' },
  docNumber: {
    type: 'string',
    pattern: '^[0-9]{1,15}$',
    description: 'Way 2, both rails: digits only, at most 15, no prefix.',
    errorText: { pattern: 'docNumber must be a string of 1 to 15 digits, with no prefix' },
  },
  beneficiaryName: {
    type: 'string',
    description: 'Way 2 with CCE: at most 35 characters, never truncated. Unused with PM.',
  },
} as const;

/** The CCE name: the field's rules plus the ones that only apply with CCE. */
const CCE_NAME = {
  ...FIELD.beneficiaryName,
  pattern: '\\S',
  maxLength: 35,
  errorText: {
    pattern: 'beneficiaryName must be a non-empty string',
    maxLength: 'beneficiaryName must be at most 35 characters',
  },
};

/** The field is there (even null: then its own rules refuse it). */
const has = (name: string) => ({ required: [name], properties: { [name]: {} } });
/** The field, if there, keeps its rules. */
const field = (name: keyof typeof FIELD, rules: object = FIELD[name]) => ({ properties: { [name]: rules } });
/** The field must be there and keep its rules; `text` replaces "<name> is required". */
const required = (name: keyof typeof FIELD, text?: string, rules: object = FIELD[name]) => ({
  required: [name],
  properties: { [name]: rules },
  ...(text ? { errorText: { required: text } } : {}),
});
const SUPERFLUOUS = 'is superfluous: with beneficiaryId the destination comes from the stored beneficiary';
const IS_CCE = { required: ['rail'], properties: { rail: { const: 'CCE' } } };

/**
 * POST /v2/payments body (spec, POST /v2/payments): amountMinor and currency, then the destination, an exclusive
 * choice between a stored beneficiaryId (way 1) and an inline destination (way 2). The rules are checked in this
 * order and the first one broken is the 400: `allOf` runs its steps in order (the validator stops at the first
 * failure) before the `required` and `properties` beside it, which show each field once in the document.
 */
export const PaymentBody = Type.Unsafe<Record<string, unknown>>({
  type: 'object',
  description:
    'Way 1: amountMinor, currency and beneficiaryId. Way 2: amountMinor, currency, rail, beneficiary, bankCode, ' +
    'docType, docNumber, and beneficiaryName with CCE. Any other field is ignored.',
  required: ['amountMinor', 'currency'],
  properties: FIELD,
  additionalProperties: true,
  allOf: [
    required('amountMinor'),
    field('amountMinor', {
      type: 'string',
      pattern: atMostPattern(MAX_AMOUNT_MINOR),
      errorText: { pattern: 'amountMinor is too large' },
    }),
    required('currency'),
    field('quoteId'),
    {
      if: has('beneficiaryId'),
      // Way 1: a stored beneficiary, and no inline field beside it.
      // biome-ignore lint/suspicious/noThenProperty: JSON Schema's if/then/else
      then: {
        allOf: [
          field('beneficiaryId'),
          ...INLINE_FIELDS.map((name) => ({ not: has(name), errorText: { not: `${name} ${SUPERFLUOUS}` } })),
        ],
      },
      // Way 2: the inline destination.
      else: {
        allOf: [
          {
            anyOf: INLINE_FIELDS.map(has),
            errorText: {
              anyOf:
                'a destination is required: either beneficiaryId, or rail with beneficiary, bankCode, docType and docNumber',
            },
          },
          required('rail', 'rail is required with an inline destination'),
          required('beneficiary', 'beneficiary is required with rail'),
          required('bankCode'),
          {
            if: IS_CCE,
            // biome-ignore lint/suspicious/noThenProperty: JSON Schema's if/then/else
            then: {
              type: 'object',
              description: 'With CCE, bankCode equals the first 4 digits of beneficiary (the account).',
              startsWithField: { field: 'beneficiary', prefix: 'bankCode' },
              errorText: { startsWithField: 'bankCode must equal the first 4 digits of the CCE account' },
            },
          },
          required('docType'),
          required('docNumber'),
          {
            if: IS_CCE,
            // biome-ignore lint/suspicious/noThenProperty: JSON Schema's if/then/else
            then: required('beneficiaryName', 'beneficiaryName is required with CCE', CCE_NAME),
            else: field('beneficiaryName'),
          },
        ],
      },
    },
  ],
});

export const BalanceSchema = Type.Object({ currency: Type.String(), availableMinor: MinorAmountOut });
