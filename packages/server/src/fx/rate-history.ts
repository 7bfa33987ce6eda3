import type { Queryable } from '../db/db.ts';
import { isoTime } from '../shared/money.ts';
import type { PublicRate, RateOrigin } from './model.ts';
import { RATE_COLUMNS, type RateRow, rateFromRow, toPublicRate } from './rates.ts';

/** One publication as the operator sees it: the Rate object plus whose it is and where it came from. */
export interface RatePublicationView extends PublicRate {
  /** null: the pair's general rate. */
  clientId: string | null;
  source: RateOrigin;
  createdAt: string;
}

export interface RateHistoryFilter {
  base: string | null;
  clientId: string | null;
  /** rateId of the last item of the previous page. */
  after: string | null;
  limit: number;
}

export type RateHistoryResult =
  | { kind: 'ok'; data: RatePublicationView[]; hasMore: boolean; nextCursor: string | null }
  | { kind: 'bad_cursor'; message: string };

export function toRatePublicationView(row: RateRow): RatePublicationView {
  const rate = rateFromRow(row);
  return {
    ...toPublicRate(rate),
    clientId: rate.clientId,
    source: rate.source,
    createdAt: isoTime(rate.createdAt),
  };
}

/**
 * Publications newest first, keyset-paged on the publication order (seq), so a page never shifts when new
 * rates are published while an operator pages through.
 */
export async function listRatePublications(q: Queryable, filter: RateHistoryFilter): Promise<RateHistoryResult> {
  let before: string | null = null;
  if (filter.after !== null) {
    const { rows } = await q.query<{ seq: string }>('SELECT seq::text AS seq FROM rates WHERE rate_id = $1', [
      filter.after,
    ]);
    if (rows[0] === undefined) return { kind: 'bad_cursor', message: 'cursor does not name a rate publication' };
    before = rows[0].seq;
  }
  const { rows } = await q.query<RateRow>(
    `SELECT ${RATE_COLUMNS}
       FROM rates
      WHERE ($1::text IS NULL OR base = $1::text)
        AND ($2::text IS NULL OR client_id = $2::text)
        AND ($3::bigint IS NULL OR seq < $3::bigint)
      ORDER BY seq DESC
      LIMIT $4`,
    [filter.base, filter.clientId, before, filter.limit + 1],
  );
  const hasMore = rows.length > filter.limit;
  const data = rows.slice(0, filter.limit).map(toRatePublicationView);
  return { kind: 'ok', data, hasMore, nextCursor: hasMore ? data[data.length - 1]!.rateId : null };
}
