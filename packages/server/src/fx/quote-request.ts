import { createHash } from 'node:crypto';
import { parsePositiveMinor } from '../shared/money.ts';
import type { AmountType } from './model.ts';

/** Amount columns are int8: anything larger could never be stored, booked or paid. */
export const MAX_AMOUNT_MINOR = 2n ** 63n - 1n;
/** The spec leaves the key's length open; this bound keeps the unique index small. */
export const MAX_IDEMPOTENCY_KEY_LENGTH = 255;

export interface QuoteRequest {
  amountType: AmountType;
  amountMinor: bigint;
}

export type QuoteRequestResult = { ok: true; request: QuoteRequest } | { ok: false; message: string };

/** Validates a POST /v2/quotes body; the message says which rule broke (spec: "The message says which"). */
export function parseQuoteRequest(body: unknown): QuoteRequestResult {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    return { ok: false, message: 'body must be object' };
  }
  const { amountType, amountMinor } = body as Record<string, unknown>;
  if (amountType === undefined || amountType === null) return { ok: false, message: 'amountType is required' };
  if (amountType !== 'SOURCE' && amountType !== 'TARGET') {
    return { ok: false, message: 'amountType must be SOURCE or TARGET' };
  }
  if (amountMinor === undefined || amountMinor === null) return { ok: false, message: 'amountMinor is required' };
  if (typeof amountMinor !== 'string') {
    return {
      ok: false,
      message: 'amountMinor must be a positive integer of minor units as text, not a number',
    };
  }
  const amount = parsePositiveMinor(amountMinor);
  if (amount === null) return { ok: false, message: 'amountMinor must be a positive integer of minor units as text' };
  if (amount > MAX_AMOUNT_MINOR) return { ok: false, message: `amountMinor must be at most ${MAX_AMOUNT_MINOR}` };
  return { ok: true, request: { amountType, amountMinor: amount } };
}

/** Fingerprint of the normalised request: what "same content" means for an idempotent replay. */
export function quoteRequestFingerprint(request: QuoteRequest): string {
  const normalised = JSON.stringify({
    amountType: request.amountType,
    amountMinor: request.amountMinor.toString(),
  });
  return createHash('sha256').update(normalised).digest('hex');
}
