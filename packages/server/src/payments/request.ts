import { ACCOUNT_MAX_LENGTH } from '../beneficiaries/model.ts';
import type { Destination, DocType } from '../rails/rail.ts';

/**
 * POST /v2/payments body rules (spec, POST /v2/payments). The destination is an exclusive choice: a stored
 * beneficiaryId (way 1) or an inline destination (way 2). Every violation is a 400 that creates nothing.
 */

export const INLINE_FIELDS = ['rail', 'beneficiary', 'bankCode', 'docType', 'docNumber', 'beneficiaryName'] as const;
export const DOC_TYPES: readonly DocType[] = ['V', 'E', 'J', 'P', 'G'];
export const MAX_AMOUNT_MINOR = 9_223_372_036_854_775_807n;

/** An inline destination of the body (way 2): a whole Destination (rails/rail.ts). */
export type InlineDestination = Destination;

export type PaymentRequest = {
  amountMinor: bigint;
  quoteId: string | null;
} & ({ way: 'beneficiary'; beneficiaryId: string } | { way: 'inline'; destination: InlineDestination });

export type ParseResult = { ok: true; request: PaymentRequest } | { ok: false; error: string };

const bad = (error: string): ParseResult => ({ ok: false, error });

function stringField(body: Record<string, unknown>, name: string): string | undefined | null {
  const v = body[name];
  if (v === undefined || v === null) return undefined;
  return typeof v === 'string' ? v : null;
}

/** Checks a parsed JSON object against the rules, in a fixed order, and names the offending field. */
export function parsePaymentRequest(body: Record<string, unknown>): ParseResult {
  const amount = stringField(body, 'amountMinor');
  if (amount === undefined) return bad('amountMinor is required');
  if (amount === null) return bad('amountMinor must be a string holding a positive integer of minor units');
  if (!/^[1-9][0-9]*$/.test(amount))
    return bad('amountMinor must be a string holding a positive integer of minor units');
  if (amount.length > 19 || BigInt(amount) > MAX_AMOUNT_MINOR) return bad('amountMinor is too large');

  const currency = stringField(body, 'currency');
  if (currency === undefined) return bad('currency is required');
  if (currency !== 'VES') return bad('currency must be VES');

  let quoteId: string | null = null;
  const q = stringField(body, 'quoteId');
  if (q === null || q === '') return bad('quoteId must be a non-empty string');
  if (q !== undefined) quoteId = q;

  const amountMinor = BigInt(amount);
  const beneficiaryId = stringField(body, 'beneficiaryId');
  const inlinePresent = INLINE_FIELDS.filter((f) => body[f] !== undefined && body[f] !== null);

  if (beneficiaryId !== undefined) {
    if (beneficiaryId === null || beneficiaryId === '') return bad('beneficiaryId must be a non-empty string');
    if (inlinePresent.length > 0) {
      return bad(
        `${inlinePresent[0]} is superfluous: with beneficiaryId the destination comes from the stored beneficiary`,
      );
    }
    return { ok: true, request: { amountMinor, quoteId, way: 'beneficiary', beneficiaryId } };
  }

  if (inlinePresent.length === 0) {
    return bad(
      'a destination is required: either beneficiaryId, or rail with beneficiary, bankCode, docType and docNumber',
    );
  }
  const rail = stringField(body, 'rail');
  if (rail === undefined) return bad('rail is required with an inline destination');
  if (rail !== 'PM' && rail !== 'CCE') return bad('rail must be one of PM, CCE');
  const account = stringField(body, 'beneficiary');
  if (account === undefined) return bad('beneficiary is required with rail');
  if (account === null || account.trim() === '') return bad('beneficiary must be a non-empty string');
  // The same bound as a stored beneficiary's account: the format is the rail's to judge, the size is ours.
  if ([...account].length > ACCOUNT_MAX_LENGTH) {
    return bad(`beneficiary must be at most ${ACCOUNT_MAX_LENGTH} characters`);
  }

  const bankCode = stringField(body, 'bankCode');
  if (bankCode === undefined) return bad('bankCode is required');
  if (bankCode === null || !/^[0-9]{4}$/.test(bankCode)) return bad('bankCode must be a string of 4 digits');
  if (rail === 'CCE' && !account.startsWith(bankCode)) {
    return bad('bankCode must equal the first 4 digits of the CCE account');
  }
  const docType = stringField(body, 'docType');
  if (docType === undefined) return bad('docType is required');
  if (docType === null || !DOC_TYPES.includes(docType as DocType)) return bad('docType must be one of V, E, J, P, G');
  const docNumber = stringField(body, 'docNumber');
  if (docNumber === undefined) return bad('docNumber is required');
  if (docNumber === null || !/^[0-9]{1,15}$/.test(docNumber)) {
    return bad('docNumber must be a string of 1 to 15 digits, with no prefix');
  }

  let beneficiaryName: string | null = null;
  if (rail === 'CCE') {
    const name = stringField(body, 'beneficiaryName');
    if (name === undefined) return bad('beneficiaryName is required with CCE');
    if (name === null || name.trim() === '') return bad('beneficiaryName must be a non-empty string');
    // Counted in characters (code points), and never truncated.
    if ([...name].length > 35) return bad('beneficiaryName must be at most 35 characters');
    beneficiaryName = name;
  } else if (
    body['beneficiaryName'] !== undefined &&
    typeof body['beneficiaryName'] !== 'string' &&
    body['beneficiaryName'] !== null
  ) {
    return bad('beneficiaryName must be a string');
  }

  return {
    ok: true,
    request: {
      amountMinor,
      quoteId,
      way: 'inline',
      destination: { rail, account, bankCode, docType: docType as DocType, docNumber, beneficiaryName },
    },
  };
}
