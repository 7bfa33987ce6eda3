import { CCE, PM } from '../support/payments.ts';

/**
 * Invalid POST /v2/payments bodies and the exact 400 text of each: the first rule broken, in the order the rules
 * are checked. The texts are those the service gave before the body schema replaced the hand-written validator
 * (schema and validator then answered in turn); two answers changed on purpose, marked below.
 */
const base = { amountMinor: '150000', currency: 'VES' };

export const INVALID_BODIES: [string, Record<string, unknown>, string][] = [
  ['amount as a number', { ...PM, amountMinor: 150000, currency: 'VES' }, 'amountMinor must be a string'],
  ['amount missing', { ...PM, currency: 'VES' }, 'amountMinor is required'],
  ['amount null', { ...PM, amountMinor: null, currency: 'VES' }, 'amountMinor must be a string'],
  [
    'amount zero',
    { ...PM, ...base, amountMinor: '0' },
    'amountMinor must be a string holding a positive integer of minor units',
  ],
  [
    'amount negative',
    { ...PM, ...base, amountMinor: '-5' },
    'amountMinor must be a string holding a positive integer of minor units',
  ],
  [
    'amount decimal',
    { ...PM, ...base, amountMinor: '1500.00' },
    'amountMinor must be a string holding a positive integer of minor units',
  ],
  [
    'amount with leading zero',
    { ...PM, ...base, amountMinor: '0150' },
    'amountMinor must be a string holding a positive integer of minor units',
  ],
  ['amount beyond 64 bits', { ...PM, ...base, amountMinor: '99999999999999999999' }, 'amountMinor is too large'],
  ['amount just beyond 64 bits', { ...PM, ...base, amountMinor: '9223372036854775808' }, 'amountMinor is too large'],
  // fields are checked in the spec's order, amountMinor first (before: "currency is required")
  ['amount as a number and no currency', { ...PM, amountMinor: 5 }, 'amountMinor must be a string'],
  ['currency missing', { ...PM, amountMinor: '100' }, 'currency is required'],
  ['currency USD', { ...PM, ...base, currency: 'USD' }, 'currency must be VES'],
  ['currency a number', { ...PM, ...base, currency: 1 }, 'currency must be a string'],
  ['quoteId empty', { ...PM, ...base, quoteId: '' }, 'quoteId must be a non-empty string'],
  ['quoteId a number', { ...PM, ...base, quoteId: 7 }, 'quoteId must be a string'],
  [
    'no destination',
    { ...base },
    'a destination is required: either beneficiaryId, or rail with beneficiary, bankCode, docType and docNumber',
  ],
  ['only nulls for a destination', { ...base, rail: null, beneficiary: null }, 'rail must be a string'],
  [
    'rail without beneficiary',
    { ...base, rail: 'PM', bankCode: '0102', docType: 'V', docNumber: '1' },
    'beneficiary is required with rail',
  ],
  ['beneficiary without rail', { ...base, beneficiary: '04141234567' }, 'rail is required with an inline destination'],
  ['rail a number', { ...base, ...PM, rail: 1 }, 'rail must be a string'],
  [
    'beneficiary of a megabyte',
    { ...base, ...PM, beneficiary: '0'.repeat(1_000_000) },
    'beneficiary must be at most 64 characters',
  ],
  [
    'beneficiary of 65 characters',
    { ...base, ...PM, beneficiary: '0'.repeat(65) },
    'beneficiary must be at most 64 characters',
  ],
  ['beneficiary blank', { ...base, ...PM, beneficiary: '   ' }, 'beneficiary must be a non-empty string'],
  ['beneficiary a number', { ...base, ...PM, beneficiary: 4141234567 }, 'beneficiary must be a string'],
  ['unknown rail', { ...base, ...PM, rail: 'ACH' }, 'rail must be one of PM, CCE'],
  ['unknown rail and no beneficiary', { ...base, rail: 'ACH' }, 'rail must be one of PM, CCE'],
  ['bankCode missing on PM', { ...base, ...PM, bankCode: undefined }, 'bankCode is required'],
  ['bankCode of 3 digits', { ...base, ...PM, bankCode: '102' }, 'bankCode must be a string of 4 digits'],
  ['bankCode a number', { ...base, ...PM, bankCode: 102 }, 'bankCode must be a string'],
  [
    'CCE bankCode not the account prefix',
    { ...base, ...CCE, bankCode: '0102' },
    'bankCode must equal the first 4 digits of the CCE account',
  ],
  [
    'CCE bad prefix and bad docType',
    { ...base, ...CCE, bankCode: '0102', docType: 'X' },
    'bankCode must equal the first 4 digits of the CCE account',
  ],
  ['docType missing', { ...base, ...PM, docType: undefined }, 'docType is required'],
  ['docType X', { ...base, ...PM, docType: 'X' }, 'docType must be one of V, E, J, P, G'],
  ['docType lower case', { ...base, ...PM, docType: 'v' }, 'docType must be one of V, E, J, P, G'],
  [
    'docNumber with prefix',
    { ...base, ...PM, docNumber: 'V12345678' },
    'docNumber must be a string of 1 to 15 digits, with no prefix',
  ],
  [
    'docNumber of 16 digits',
    { ...base, ...PM, docNumber: '1234567890123456' },
    'docNumber must be a string of 1 to 15 digits, with no prefix',
  ],
  ['docNumber missing', { ...base, ...PM, docNumber: undefined }, 'docNumber is required'],
  ['docNumber a number', { ...base, ...PM, docNumber: 12345678 }, 'docNumber must be a string'],
  [
    'CCE without beneficiaryName',
    { ...base, ...CCE, beneficiaryName: undefined },
    'beneficiaryName is required with CCE',
  ],
  [
    'CCE beneficiaryName blank',
    { ...base, ...CCE, beneficiaryName: ' ' },
    'beneficiaryName must be a non-empty string',
  ],
  [
    'CCE beneficiaryName of 36 characters',
    { ...base, ...CCE, beneficiaryName: 'A'.repeat(36) },
    'beneficiaryName must be at most 35 characters',
  ],
  ['CCE beneficiaryName a number', { ...base, ...CCE, beneficiaryName: 5 }, 'beneficiaryName must be a string'],
  ['PM beneficiaryName a number', { ...base, ...PM, beneficiaryName: 5 }, 'beneficiaryName must be a string'],
  [
    'beneficiaryId with an inline field',
    { ...base, beneficiaryId: 'ben_1', bankCode: '0102' },
    'bankCode is superfluous: with beneficiaryId the destination comes from the stored beneficiary',
  ],
  [
    'beneficiaryId with rail',
    { ...base, beneficiaryId: 'ben_1', rail: 'PM' },
    'rail is superfluous: with beneficiaryId the destination comes from the stored beneficiary',
  ],
  // beneficiaryId is checked before the inline fields (before: "rail must be a string")
  [
    'beneficiaryId with a null inline field only',
    { ...base, beneficiaryId: '', rail: null },
    'beneficiaryId must be a non-empty string',
  ],
  ['beneficiaryId not a string', { ...base, beneficiaryId: 5 }, 'beneficiaryId must be a string'],
  ['beneficiaryId empty', { ...base, beneficiaryId: '' }, 'beneficiaryId must be a non-empty string'],
];
