import type { Db } from '../db/db.ts';
import { prepared } from '../db/prepared.ts';
import type { Clock } from '../shared/clock.ts';
import { retryDelayMs } from './backoff.ts';
import { createDeliveryLog, type DeliveryLog } from './delivery-log.ts';
import { createOutcomeRecorder, type DeliveryOutcome } from './delivery-recorder.ts';
import { signDetachedAsync } from './jws.ts';
import type { PostFn, PostResult } from './safe-post.ts';
import type { ActiveSigner } from './signing-keys.ts';

/**
 * Delivers outbox events (table events) to each client's webhook: claim, post, record. The claim is one
 * statement that numbers the attempts and leases the rows by pushing next_attempt_at ahead; the posts run
 * outside any transaction; the outcomes are recorded afterwards (delivery-recorder.ts). A worker that dies
 * mid-attempt loses only its lease: the event becomes due again and the next claim takes the next number.
 * Events of one payment go out in creation order: one waits while an earlier one of its payment is
 * pending, so no claim ever holds two events of one payment.
 */

export interface DeliveryConfig {
  retryBaseMs: number;
  maxAttempts: number;
  /** How long a claim keeps other workers off the event; must exceed the post timeout. Default 60 s. */
  leaseMs?: number;
  /** Most events one processNext claims. Default 1. */
  batchSize?: number;
  /**
   * Absent: processNext returns once its batch is posted and recorded. A number: processNext returns as
   * soon as its batch is launched, and up to this many posts are in flight at once, so one slow receiver
   * holds one slot instead of stalling every other client's events until its timeout.
   */
  concurrency?: number;
}

export interface DeliveryWorkerDeps {
  db: Db;
  clock: Clock;
  signer: { activeSigner(): Promise<ActiveSigner> };
  post: PostFn;
  config: DeliveryConfig;
  /** Jitter source, [0, 1); injectable for tests. */
  random?: () => number;
  /** Where a failure of a launched delivery goes when processNext has already returned (pipelined mode). */
  onError?: (err: unknown) => void;
  /** Told of every recorded attempt (metrics). */
  onOutcome?: (outcome: DeliveryOutcome) => void;
}

export interface DeliveryWorker extends DeliveryLog {
  /**
   * Claims up to batchSize due events and makes one attempt at each; the id of the first when there was
   * work, undefined when nothing is due (or, pipelined, no slot freed within a second).
   */
  processNext(): Promise<string | undefined>;
  /** Resolves when no launched delivery is in flight (pipelined mode; immediate otherwise). */
  drain(): Promise<void>;
}

interface Claimed {
  id: string;
  client_id: string;
  body: string;
  attempt: number;
  seq: string;
  /** The client's webhook URL when claimed; null: it has none, and the claim settled the event as no_webhook. */
  url: string | null;
}

// Up to $3 due events whose payment has no earlier pending event, in due order, each with its client's webhook URL:
// numbered and leased until $2, or, the client having none, settled as no_webhook (migration 0027).
const CLAIM_SQL = prepared('SELECT id, client_id, body, attempt, seq, url FROM claim_due_events($1, $2, $3)');

function failureText(result: PostResult): string {
  if (result.error !== undefined) return result.error;
  return result.statusCode === undefined ? 'no answer' : `HTTP ${result.statusCode}`;
}

export function createDeliveryWorker(deps: DeliveryWorkerDeps): DeliveryWorker {
  const { db, clock, signer, post, config } = deps;
  const leaseMs = config.leaseMs ?? 60_000;
  const batchSize = Math.max(1, Math.trunc(config.batchSize ?? 1));
  const concurrency = config.concurrency === undefined ? null : Math.max(1, Math.trunc(config.concurrency));
  const random = deps.random ?? Math.random;
  const recorder = createOutcomeRecorder(db);
  let inFlight = 0;
  let waiters: (() => void)[] = [];

  function release(): void {
    inFlight--;
    const woken = waiters;
    waiters = [];
    for (const w of woken) w();
  }

  /** Resolves true when inFlight drops below limit, false after timeoutMs. */
  function waitBelow(limit: number, timeoutMs: number): Promise<boolean> {
    if (inFlight < limit) return Promise.resolve(true);
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve(inFlight < limit), timeoutMs);
      timer.unref();
      const check = () => {
        if (inFlight < limit) {
          clearTimeout(timer);
          resolve(true);
        } else waiters.push(check);
      };
      waiters.push(check);
    });
  }

  async function claim(limit: number): Promise<Claimed[]> {
    const now = clock.now();
    const { rows } = await db.query<Claimed>(CLAIM_SQL, [now, new Date(now.getTime() + leaseMs), limit]);
    // RETURNING has no order; the batch goes out in claim order (due time, then creation).
    return rows
      .map((r) => ({ ...r, attempt: Number(r.attempt), seq: String(r.seq) }))
      .sort((a, b) => (BigInt(a.seq) < BigInt(b.seq) ? -1 : 1));
  }

  function outcomeOf(event: Claimed, url: string, result: PostResult, attemptedAt: Date): DeliveryOutcome {
    const now = clock.now();
    const base = {
      eventId: event.id,
      clientId: event.client_id,
      url,
      attempt: event.attempt,
      statusCode: result.statusCode ?? null,
      error: result.ok ? (result.error ?? null) : failureText(result),
      durationMs: result.durationMs,
      attemptedAt,
      at: now,
    };
    if (result.ok) return { ...base, status: 'delivered', nextAttemptAt: null, lastError: null };
    if (event.attempt >= config.maxAttempts) {
      return { ...base, status: 'dead', nextAttemptAt: null, lastError: failureText(result) };
    }
    const next = new Date(now.getTime() + retryDelayMs(event.attempt, config.retryBaseMs, random));
    return { ...base, status: 'pending', nextAttemptAt: next, lastError: failureText(result) };
  }

  async function deliver(event: Claimed, url: string, signer: ActiveSigner, attemptedAt: Date): Promise<void> {
    const body = Buffer.from(event.body, 'utf8');
    const iat = Math.floor(attemptedAt.getTime() / 1000);
    const signature = await signDetachedAsync(body, { kid: signer.kid, privateKey: signer.privateKey, iat });
    const result = await post({ url, body, eventId: event.id, attempt: event.attempt, signature });
    const outcome = outcomeOf(event, url, result, attemptedAt);
    await recorder.record(outcome);
    deps.onOutcome?.(outcome);
  }

  async function processNext(): Promise<string | undefined> {
    let limit = batchSize;
    if (concurrency !== null) {
      // Claim whole batches: a claim costs about the same for one event as for sixty, so waking up for
      // every single freed slot would turn the claim statement into the bottleneck. The wait is bounded,
      // so a stop signal is noticed even while slow receivers hold the slots.
      await waitBelow(Math.max(1, concurrency - batchSize + 1), 1000);
      limit = Math.min(batchSize, concurrency - inFlight);
      if (limit <= 0) return undefined;
    }
    const claimed = await claim(limit);
    const first = claimed[0];
    if (first === undefined) return undefined;
    const deliverable = claimed.filter((e): e is Claimed & { url: string } => e.url !== null);
    if (deliverable.length === 0) return first.id;

    const active = await signer.activeSigner();
    const attemptedAt = clock.now();
    const launched = deliverable.map((event) => {
      inFlight++;
      return deliver(event, event.url, active, attemptedAt).finally(release);
    });
    if (concurrency === null) {
      await Promise.all(launched);
    } else {
      // A failed write leaves the event leased: it is attempted again, with the next number, when the
      // lease runs out.
      for (const p of launched) p.catch((err: unknown) => deps.onError?.(err));
    }
    return first.id;
  }

  async function drain(): Promise<void> {
    while (inFlight > 0) await waitBelow(1, 1000);
  }

  return { processNext, drain, ...createDeliveryLog({ db, clock }) };
}
