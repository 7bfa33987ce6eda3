import type { Db } from '../db/db.ts';
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

export type ReplayResult =
  | { ok: true; fromStatus: string }
  | { ok: false; error: 'not_found' | 'pending' | 'invalid'; message?: string };

export interface EventDetail {
  eventId: string;
  clientId: string;
  type: string;
  test: boolean;
  paymentId: string | null;
  deliveryStatus: string;
  attempts: number;
  nextAttemptAt: Date | null;
  lastError: string | null;
  createdAt: Date;
  deliveredAt: Date | null;
  body: unknown;
  attemptLog: DeliveryAttempt[];
  replays: { fromStatus: string; requestedBy: string; note: string; createdAt: Date }[];
}

export interface DeliveryLog {
  /** Newest first. */
  listAttempts(query: ListAttemptsQuery): Promise<ListAttemptsResult>;
  /**
   * Back to pending, due now. Attempt numbers continue from where they stopped; as its count is already at
   * the maximum, a redelivered event gets one attempt and is dead again if that fails.
   */
  redeliver(eventId: string): Promise<RedeliverResult>;
  /**
   * Sends an event again, whatever became of it (delivered, dead, or no webhook at the time): back to pending,
   * due now, with the next attempt number, the same body and a fresh signature. The operator's name and reason are
   * recorded with the state the event was in. An event still pending is already on its way (`pending`).
   */
  replay(eventId: string, input: { note: unknown; requestedBy?: unknown }): Promise<ReplayResult>;
  /** One event with its attempts and replays, for the operator; null when unknown. */
  event(eventId: string): Promise<EventDetail | null>;
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

function attemptOf(r: AttemptRow): DeliveryAttempt {
  return {
    id: String(r.id),
    eventId: r.event_id,
    clientId: r.client_id,
    url: r.url,
    attempt: Number(r.attempt),
    statusCode: r.status_code === null ? null : Number(r.status_code),
    error: r.error,
    durationMs: Number(r.duration_ms),
    attemptedAt: new Date(r.attempted_at),
  };
}

export function createDeliveryLog({ db, clock }: { db: Db; clock: Clock }): DeliveryLog {
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
    const items = rows.slice(0, limit).map(attemptOf);
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

  async function replay(eventId: string, input: { note: unknown; requestedBy?: unknown }): Promise<ReplayResult> {
    if (typeof input.note !== 'string' || input.note.trim() === '' || input.note.length > 2000) {
      return { ok: false, error: 'invalid', message: 'note is required: a string of 1 to 2000 characters saying why' };
    }
    const by = input.requestedBy ?? 'operator';
    if (typeof by !== 'string' || by.trim() === '' || by.length > 200) {
      return { ok: false, error: 'invalid', message: 'requestedBy must be a string of 1 to 200 characters' };
    }
    const note = input.note;
    return db.tx(async (q) => {
      const { rows } = await q.query<{ delivery_status: string }>(
        'SELECT delivery_status FROM events WHERE id = $1 FOR UPDATE',
        [eventId],
      );
      const from = rows[0]?.delivery_status;
      if (from === undefined) return { ok: false, error: 'not_found' };
      if (from === 'pending') return { ok: false, error: 'pending' };
      const now = clock.now();
      await q.query(
        `UPDATE events SET delivery_status = 'pending', next_attempt_at = $2, last_error = NULL WHERE id = $1`,
        [eventId, now],
      );
      await q.query(
        `INSERT INTO webhook_replays (event_id, from_status, requested_by, note, created_at) VALUES ($1, $2, $3, $4, $5)`,
        [eventId, from, by.trim(), note, now],
      );
      return { ok: true, fromStatus: from };
    });
  }

  async function event(eventId: string): Promise<EventDetail | null> {
    const { rows } = await db.query<{
      id: string;
      client_id: string;
      type: string;
      test: boolean;
      payment_id: string | null;
      body: string;
      created_at: Date;
      delivery_status: string;
      attempts: number;
      next_attempt_at: Date;
      last_error: string | null;
      delivered_at: Date | null;
    }>(
      `SELECT id, client_id, type, test, payment_id, body, created_at, delivery_status, attempts, next_attempt_at,
              last_error, delivered_at FROM events WHERE id = $1`,
      [eventId],
    );
    const e = rows[0];
    if (e === undefined) return null;
    const attempts = await db.query<AttemptRow>(
      `SELECT id, event_id, client_id, url, attempt, status_code, error, duration_ms, attempted_at
         FROM webhook_attempts WHERE event_id = $1 ORDER BY attempt`,
      [eventId],
    );
    const replays = await db.query<{ from_status: string; requested_by: string; note: string; created_at: Date }>(
      'SELECT from_status, requested_by, note, created_at FROM webhook_replays WHERE event_id = $1 ORDER BY id',
      [eventId],
    );
    return {
      eventId: e.id,
      clientId: e.client_id,
      type: e.type,
      test: e.test,
      paymentId: e.payment_id,
      deliveryStatus: e.delivery_status,
      attempts: Number(e.attempts),
      nextAttemptAt: e.delivery_status === 'pending' ? new Date(e.next_attempt_at) : null,
      lastError: e.last_error,
      createdAt: new Date(e.created_at),
      deliveredAt: e.delivered_at === null ? null : new Date(e.delivered_at),
      body: JSON.parse(e.body),
      attemptLog: attempts.rows.map(attemptOf),
      replays: replays.rows.map((r) => ({
        fromStatus: r.from_status,
        requestedBy: r.requested_by,
        note: r.note,
        createdAt: new Date(r.created_at),
      })),
    };
  }

  return { listAttempts, redeliver, replay, event };
}
