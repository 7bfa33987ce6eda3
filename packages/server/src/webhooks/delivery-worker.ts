import type { Db } from '../db/db.ts';
import type { Clock } from '../shared/clock.ts';
import { retryDelayMs } from './backoff.ts';
import { createDeliveryLog, type DeliveryLog } from './delivery-log.ts';
import { signDetached } from './jws.ts';
import type { PostFn, PostResult } from './safe-post.ts';
import type { ActiveSigner } from './signing-keys.ts';

/**
 * Delivers outbox events (table events) to each client's webhook: claim, post, record. The claim is a short
 * transaction that numbers the attempt and leases the row by pushing next_attempt_at ahead; the post runs
 * outside any transaction; the outcome is recorded in a second short transaction. A worker that dies
 * mid-attempt loses only its lease: the event becomes due again and the next claim takes the next number.
 * Events of one payment go out in creation order: one waits while an earlier one of its payment is pending.
 */

export interface DeliveryConfig {
  retryBaseMs: number;
  maxAttempts: number;
  /** How long a claim keeps other workers off the event; must exceed the post timeout. Default 60 s. */
  leaseMs?: number;
}

export interface DeliveryWorkerDeps {
  db: Db;
  clock: Clock;
  signer: { activeSigner(): Promise<ActiveSigner> };
  post: PostFn;
  config: DeliveryConfig;
  /** The client's active webhook URL, or null when it has none. */
  webhookUrlFor(clientId: string): Promise<string | null>;
  /** Jitter source, [0, 1); injectable for tests. */
  random?: () => number;
}

export interface DeliveryWorker extends DeliveryLog {
  /** Makes at most one attempt; the event id when there was work, undefined when nothing is due. */
  processNext(): Promise<string | undefined>;
}

interface Claimed {
  id: string;
  client_id: string;
  body: string;
  attempt: number;
}

// A candidate is due and pending, and no earlier event of its payment is still pending. Dead-lettered
// events do not hold the payment's later events back: they wait for an operator, the later ones do not.
const CLAIM_SQL = `
  SELECT e.id, e.client_id, e.body
  FROM events e
  WHERE e.delivery_status = 'pending' AND e.next_attempt_at <= $1
    AND NOT EXISTS (
      SELECT 1 FROM events p
      WHERE e.payment_id IS NOT NULL AND p.payment_id = e.payment_id
        AND p.seq < e.seq AND p.delivery_status = 'pending')
  ORDER BY e.next_attempt_at, e.seq
  LIMIT 1
  FOR UPDATE OF e SKIP LOCKED`;

function failureText(result: PostResult): string {
  if (result.error !== undefined) return result.error;
  return result.statusCode === undefined ? 'no answer' : `HTTP ${result.statusCode}`;
}

export function createDeliveryWorker(deps: DeliveryWorkerDeps): DeliveryWorker {
  const { db, clock, signer, post, config } = deps;
  const leaseMs = config.leaseMs ?? 60_000;
  const random = deps.random ?? Math.random;

  async function claim(): Promise<Claimed | undefined> {
    const now = clock.now();
    return db.tx(async (q) => {
      const { rows } = await q.query<Omit<Claimed, 'attempt'>>(CLAIM_SQL, [now]);
      const row = rows[0];
      if (row === undefined) return undefined;
      const { rows: updated } = await q.query<{ attempts: number }>(
        'UPDATE events SET attempts = attempts + 1, next_attempt_at = $2 WHERE id = $1 RETURNING attempts',
        [row.id, new Date(now.getTime() + leaseMs)],
      );
      return { ...row, attempt: Number(updated[0]!.attempts) };
    });
  }

  async function markNoWebhook(event: Claimed): Promise<void> {
    // The claim was not an attempt: give its number back.
    await db.query(
      `UPDATE events SET delivery_status = 'no_webhook', attempts = attempts - 1, last_error = 'no webhook URL'
       WHERE id = $1 AND attempts = $2 AND delivery_status = 'pending'`,
      [event.id, event.attempt],
    );
  }

  async function record(event: Claimed, url: string, result: PostResult, attemptedAt: Date): Promise<void> {
    const now = clock.now();
    await db.tx(async (q) => {
      await q.query(
        `INSERT INTO webhook_attempts (event_id, client_id, url, attempt, status_code, error, duration_ms, attempted_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
        [
          event.id,
          event.client_id,
          url,
          event.attempt,
          result.statusCode ?? null,
          result.ok ? (result.error ?? null) : failureText(result),
          result.durationMs,
          attemptedAt,
        ],
      );
      // Guarded by the attempt number: if this claim's lease ran out and another worker claimed the event
      // since, that worker's outcome is the one that counts.
      const guard = `WHERE id = $1 AND attempts = $2 AND delivery_status = 'pending'`;
      if (result.ok) {
        await q.query(
          `UPDATE events SET delivery_status = 'delivered', delivered_at = $3, last_error = NULL ${guard}`,
          [event.id, event.attempt, now],
        );
      } else if (event.attempt >= config.maxAttempts) {
        await q.query(`UPDATE events SET delivery_status = 'dead', last_error = $3 ${guard}`, [
          event.id,
          event.attempt,
          failureText(result),
        ]);
      } else {
        const next = new Date(now.getTime() + retryDelayMs(event.attempt, config.retryBaseMs, random));
        await q.query(`UPDATE events SET next_attempt_at = $3, last_error = $4 ${guard}`, [
          event.id,
          event.attempt,
          next,
          failureText(result),
        ]);
      }
    });
  }

  async function processNext(): Promise<string | undefined> {
    const event = await claim();
    if (event === undefined) return undefined;
    const url = await deps.webhookUrlFor(event.client_id);
    if (url === null) {
      await markNoWebhook(event);
      return event.id;
    }
    const { kid, privateKey } = await signer.activeSigner();
    const attemptedAt = clock.now();
    const body = Buffer.from(event.body, 'utf8');
    const signature = signDetached(body, { kid, privateKey, iat: Math.floor(attemptedAt.getTime() / 1000) });
    const result = await post({ url, body, eventId: event.id, attempt: event.attempt, signature });
    await record(event, url, result, attemptedAt);
    return event.id;
  }

  return { processNext, ...createDeliveryLog({ db, clock }) };
}
