import { seqOfBeneficiaryId } from './model.ts';

/** Keyset paging of GET /v2/beneficiaries, the same rules as the payment listing (operator contract, section 5). */
export const DEFAULT_PAGE_SIZE = 20;
export const MAX_PAGE_SIZE = 100;

export type PageRequest = { ok: true; beforeSeq: bigint | null; limit: number } | { ok: false; message: string };

export function parsePageRequest(query: { cursor?: string; limit?: string }): PageRequest {
  let limit = DEFAULT_PAGE_SIZE;
  if (query.limit !== undefined) {
    if (!/^[0-9]+$/.test(query.limit) || /^0+$/.test(query.limit)) {
      return { ok: false, message: 'limit must be a positive integer' };
    }
    // Clamped, not refused: a client asking for more simply gets pages of the maximum size.
    limit = Math.min(Number(query.limit), MAX_PAGE_SIZE);
  }
  let beforeSeq: bigint | null = null;
  if (query.cursor !== undefined) {
    beforeSeq = seqOfBeneficiaryId(query.cursor);
    if (beforeSeq === null) return { ok: false, message: 'cursor is malformed: use the nextCursor of a previous page' };
  }
  return { ok: true, beforeSeq, limit };
}

export interface Page<T> {
  data: T[];
  hasMore: boolean;
  /** The last id of the page; null only when the page is empty (the end of the walk). */
  nextCursor: string | null;
}

export function pageOf<T extends { id: string }>(items: T[], hasMore: boolean): Page<T> {
  return { data: items, hasMore, nextCursor: items.length === 0 ? null : items[items.length - 1]!.id };
}
