/** Money is bigint minor units inside and decimal strings at the edge. */

/**
 * Bounds far below the range of the bigint columns (9.2 * 10^18), so that no sum the service or a reconciliation
 * query makes can overflow: one funding at most 10^15 minor units (10 trillion bolivares), a client's balance at
 * most 10^16. Above them is a 400.
 */
export const MAX_FUNDING_MINOR = 10n ** 15n;
export const MAX_BALANCE_MINOR = 10n ** 16n;

const MINOR_TEXT = /^[1-9][0-9]{0,29}$/;

/** Parses the edge form of a positive amount ("150000"); null when it is not one. */
export function parsePositiveMinor(text: unknown): bigint | null {
  if (typeof text !== 'string' || !MINOR_TEXT.test(text)) return null;
  return BigInt(text);
}

export function formatMinor(amount: bigint): string {
  return amount.toString(10);
}

/** Reads an int8/numeric column, which both back-ends deliver as text. */
export function minorFromDb(value: unknown): bigint {
  if (typeof value === 'bigint') return value;
  if (typeof value === 'string' || typeof value === 'number') return BigInt(value);
  throw new TypeError(`not an amount: ${String(value)}`);
}

/** Timestamps at the edge: ISO 8601 UTC with milliseconds. */
export function isoTime(value: Date | string): string {
  return (value instanceof Date ? value : new Date(value)).toISOString();
}

/**
 * isoTime of a timestamptz as PostgreSQL writes it in JSON: ISO 8601 in the session's offset, the fraction's trailing
 * zeros dropped ("2026-11-29T03:34:27.12+00:00"). A UTC session's text is cut and padded to the edge form, the
 * fraction truncated to milliseconds as Date truncates it: a tenth of the time of parsing a Date and formatting it,
 * which the signed GET did twice a request. Any other offset or shape goes through Date.
 */
export function isoTimeFromDb(text: string): string {
  const n = text.length;
  if (n >= 25 && n <= 32 && text.endsWith('+00:00') && text[4] === '-' && text[10] === 'T') {
    if (n === 25) return `${text.slice(0, 19)}.000Z`;
    if (n >= 27 && text[19] === '.') return `${text.slice(0, 19)}.${`${text.slice(20, n - 6)}00`.slice(0, 3)}Z`;
  }
  return new Date(text).toISOString();
}
