import type { Queryable } from '../db/db.ts';

/**
 * Writes delivery outcomes: the attempt log row and the event's new state, for many events in one
 * statement. Outcomes that finish while a write is running are written together by the next one (group
 * commit), so the database sees one statement per burst of answers, not one per event.
 */

export interface DeliveryOutcome {
  eventId: string;
  clientId: string;
  url: string;
  attempt: number;
  statusCode: number | null;
  /** The attempt log's error column: why it failed, or a note on a 2xx (e.g. an oversized answer). */
  error: string | null;
  durationMs: number;
  attemptedAt: Date;
  /** What the event becomes: delivered, dead, or pending again (then nextAttemptAt is set). */
  status: 'delivered' | 'dead' | 'pending';
  /** When the outcome was known: delivered_at of a delivered event. */
  at: Date;
  nextAttemptAt: Date | null;
  /** The event's last_error: null once delivered. */
  lastError: string | null;
}

// The attempt log is written whatever the guard says: a late attempt happened and the operator sees it.
// The event row is updated only if this claim still owns the event (same attempt number, still pending):
// if its lease ran out and another worker claimed the event since, that worker's outcome is the one
// that counts.
const RECORD_SQL = `
  WITH logged AS (
    INSERT INTO webhook_attempts (event_id, client_id, url, attempt, status_code, error, duration_ms, attempted_at)
    SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::int[], $5::int[], $6::text[], $7::int[],
                         $8::timestamptz[])
  )
  UPDATE events e SET
    delivery_status = v.status,
    delivered_at = CASE WHEN v.status = 'delivered' THEN v.at ELSE e.delivered_at END,
    next_attempt_at = COALESCE(v.next_at, e.next_attempt_at),
    last_error = v.last_error
  FROM unnest($1::text[], $4::int[], $9::text[], $10::timestamptz[], $11::timestamptz[], $12::text[])
       AS v(id, attempt, status, at, next_at, last_error)
  WHERE e.id = v.id AND e.attempts = v.attempt AND e.delivery_status = 'pending'`;

export async function writeOutcomes(q: Queryable, outcomes: readonly DeliveryOutcome[]): Promise<void> {
  if (outcomes.length === 0) return;
  const col = <T>(f: (o: DeliveryOutcome) => T): T[] => outcomes.map(f);
  await q.query(RECORD_SQL, [
    col((o) => o.eventId),
    col((o) => o.clientId),
    col((o) => o.url),
    col((o) => o.attempt),
    col((o) => o.statusCode),
    col((o) => o.error),
    col((o) => Math.max(0, Math.round(o.durationMs))),
    col((o) => o.attemptedAt),
    col((o) => o.status),
    col((o) => o.at),
    col((o) => o.nextAttemptAt),
    col((o) => o.lastError),
  ]);
}

export interface OutcomeRecorder {
  /** Resolves once the outcome is committed; rejects when the write failed. */
  record(outcome: DeliveryOutcome): Promise<void>;
}

export function createOutcomeRecorder(
  q: Queryable,
  options: { maxBatch?: number; lingerMs?: number } = {},
): OutcomeRecorder {
  const maxBatch = options.maxBatch ?? 500;
  // Answers arrive one by one as I/O callbacks; waiting a few milliseconds before the first write of a
  // burst lets them gather, instead of one statement per answer.
  const lingerMs = options.lingerMs ?? 5;
  let queue: { outcome: DeliveryOutcome; resolve: () => void; reject: (err: unknown) => void }[] = [];
  let scheduled = false;

  async function flush(): Promise<void> {
    while (queue.length > 0) {
      const batch = queue.slice(0, maxBatch);
      queue = queue.slice(batch.length);
      try {
        await writeOutcomes(
          q,
          batch.map((b) => b.outcome),
        );
        for (const b of batch) b.resolve();
      } catch (err) {
        for (const b of batch) b.reject(err);
      }
    }
    scheduled = false;
  }

  return {
    record(outcome) {
      return new Promise((resolve, reject) => {
        queue.push({ outcome, resolve, reject });
        if (scheduled) return;
        scheduled = true;
        setTimeout(() => void flush(), lingerMs);
      });
    },
  };
}
