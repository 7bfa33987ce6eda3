import { httpError } from './errors.ts';

/** Keyset paging shared by every listing: limit default 20, at most 100 (larger is clamped), cursor = last id. */
export const DEFAULT_PAGE_SIZE = 20;
export const MAX_PAGE_SIZE = 100;

export function pageLimit(raw: string | undefined): number {
  if (raw === undefined) return DEFAULT_PAGE_SIZE;
  if (!/^[0-9]+$/.test(raw) || /^0+$/.test(raw)) throw httpError(400, 'limit must be a positive integer');
  return raw.length > 3 ? MAX_PAGE_SIZE : Math.min(Number(raw), MAX_PAGE_SIZE);
}

/** Turns a cursor into its sequence number with the listing's own id parser; a malformed one is a 400. */
export function pageCursor(raw: string | undefined, parse: (id: string) => bigint | null): bigint | undefined {
  if (raw === undefined) return undefined;
  const seq = parse(raw);
  if (seq === null) throw httpError(400, 'cursor must be an id from a previous page');
  return seq;
}

export function pageOfItems<T, O>(items: T[], hasMore: boolean, toPublic: (t: T) => O, idOf: (t: T) => string) {
  return {
    data: items.map(toPublic),
    hasMore,
    nextCursor: items.length > 0 ? idOf(items[items.length - 1]!) : null,
  };
}
