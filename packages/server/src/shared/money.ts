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
