import type { Queryable } from '../db/db.ts';
import type { Clock } from '../shared/clock.ts';

/** The operator's view of deliveries: the attempt log, and putting a dead-lettered event back in the queue. */

export interface DeliveryAttempt {
  id: string;
  eventId: string;
  clientId: string;
  url: string;
  attempt: number;
  /** null when no HTTP answer arrived; error then says why. */
  statusCode: number | null;
  error: string | null;
  durationMs: number;
  attemptedAt: Date;
}

export interface ListAttemptsQuery {
  clientId?: string;
  /** Clamped to 1..100. */
  limit: number;
  /** nextCursor of the previous page. */
  cursor?: string;
}

export type ListAttemptsResult =
  | { ok: true; items: DeliveryAttempt[]; nextCursor: string | null }
  | { ok: false; error: 'invalid_cursor' };

export type RedeliverResult = { ok: true } | { ok: false; error: 'not_found' | 'not_dead' };

export interface DeliveryLog {
  /** Newest first. */
  listAttempts(query: ListAttemptsQuery): Promise<ListAttemptsResult>;
  /**
   * Back to pending, due now. Attempt numbers continue from where they stopped; as its count is already at
   * the maximum, a redelivered event gets one attempt and is dead again if that fails.
   */
  redeliver(eventId: string): Promise<RedeliverResult>;
}

interface AttemptRow {
  id: string;
  event_id: string;
  client_id: string;
  url: string;
  attempt: number;
  status_code: number | null;
  error: string | null;
  duration_ms: number;
  attempted_at: Date;
}

const CURSOR = /^[1-9][0-9]{0,18}$/;

export function createDeliveryLog({ db, clock }: { db: Queryable; clock: Clock }): DeliveryLog {
  async function listAttempts(query: ListAttemptsQuery): Promise<ListAttemptsResult> {
    if (query.cursor !== undefined && !CURSOR.test(query.cursor)) return { ok: false, error: 'invalid_cursor' };
    const limit = Math.min(100, Math.max(1, Math.trunc(query.limit)));
    const { rows } = await db.query<AttemptRow>(
      `SELECT id, event_id, client_id, url, attempt, status_code, error, duration_ms, attempted_at
       FROM webhook_attempts
       WHERE ($1::text IS NULL OR client_id = $1) AND ($2::bigint IS NULL OR id < $2::bigint)
       ORDER BY id DESC LIMIT $3`,
      [query.clientId ?? null, query.cursor ?? null, limit + 1],
    );
    const page = rows.slice(0, limit);
    const items = page.map((r) => ({
      id: String(r.id),
      eventId: r.event_id,
      clientId: r.client_id,
      url: r.url,
      attempt: Number(r.attempt),
      statusCode: r.status_code === null ? null : Number(r.status_code),
      error: r.error,
      durationMs: Number(r.duration_ms),
      attemptedAt: new Date(r.attempted_at),
    }));
    const last = items[items.length - 1];
    return { ok: true, items, nextCursor: rows.length > limit && last !== undefined ? last.id : null };
  }

  async function redeliver(eventId: string): Promise<RedeliverResult> {
    const res = await db.query(
      `UPDATE events SET delivery_status = 'pending', next_attempt_at = $2
       WHERE id = $1 AND delivery_status = 'dead'`,
      [eventId, clock.now()],
    );
    if (res.rowCount === 1) return { ok: true };
    const { rows } = await db.query('SELECT 1 FROM events WHERE id = $1', [eventId]);
    return { ok: false, error: rows.length === 0 ? 'not_found' : 'not_dead' };
  }

  return { listAttempts, redeliver };
}
