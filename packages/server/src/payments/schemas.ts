import { Type } from '@sinclair/typebox';
import { MinorAmountOut, Timestamp } from '../http/schema-helpers.ts';

const Nullable = <T extends ReturnType<typeof Type.String>>(t: T) => Type.Union([t, Type.Null()]);

export const PaymentSchema = Type.Object({
  intentId: Type.String({ description: 'Identifier of the payment (same value as id).' }),
  id: Type.String(),
  state: Type.String({
    description:
      'pending, processing, completed, failed or unknown. Treat any other value as unknown, never as failed.',
  }),
  subStatus: Nullable(
    Type.String({
      description: 'reserved, reconciling, under_review, at_rail, declined, wrong_beneficiary, rejected_by_us.',
    }),
  ),
  amountMinor: MinorAmountOut,
  currency: Type.Literal('VES'),
  rail: Type.String({ description: 'PM or CCE.' }),
  beneficiary: Type.String({ description: 'Phone (PM) or account (CCE).' }),
  createdAt: Timestamp,
  updatedAt: Timestamp,
  failureCode: Nullable(Type.String({ description: 'Why a failed payment failed, e.g. insufficient_balance.' })),
  beneficiaryId: Type.Optional(Type.String({ description: 'Present when paid by beneficiaryId.' })),
  sourceAmountMinor: Type.Optional(Type.String({ description: 'Debited from a non-VES balance, in its currency.' })),
  sourceCurrency: Type.Optional(Type.String()),
  quoteId: Type.Optional(Type.String()),
});

const Str = (description: string) => Type.String({ description });

export const PaymentBody = Type.Object(
  {
    amountMinor: Type.String({
      pattern: '^[1-9][0-9]*$',
      errorMessage: 'must be a string holding a positive integer of minor units',
      description: 'Minor units as a decimal string.',
    }),
    currency: Type.String({ description: 'VES.' }),
    beneficiaryId: Type.Optional(Str('Way 1: a stored beneficiary. Excludes every inline field.')),
    rail: Type.Optional(Str('Way 2: PM or CCE.')),
    beneficiary: Type.Optional(Str('Way 2: phone (PM, 11 digits) or account (CCE, 20 digits). Not format-validated.')),
    bankCode: Type.Optional(Str('Way 2: 4 digits; with CCE the first 4 digits of the account.')),
    docType: Type.Optional(Str('Way 2: V, E, J, P or G.')),
    docNumber: Type.Optional(Str('Way 2: digits only, at most 15.')),
    beneficiaryName: Type.Optional(Str('Way 2 with CCE: at most 35 characters, never truncated.')),
    quoteId: Type.Optional(Str('Non-VES balances: a live quote whose targetAmountMinor equals amountMinor.')),
  },
  { additionalProperties: true },
);

export const BalanceSchema = Type.Object({ currency: Type.String(), availableMinor: MinorAmountOut });
