/**
 * Retry policy as pure functions (interface spec, Errors): only 5xx answers and failures with no answer at all
 * are retried, always with the same idempotency-key and body. Every 4xx is final: 400/415 need a fix, 401 a new
 * credential or nonce, 404 and 409 must not be looped over, and a 422 on payments already created a failed
 * payment, so resending it can only replay that.
 */

export interface AttemptOutcome {
  /** HTTP status of the answer, when one came back. */
  status?: number;
  /** True when no HTTP answer came back (refused, reset, timeout). */
  connectionError?: boolean;
}

/**
 * `attempt` counts the attempts already made, the one that just failed included (1 after the first); `max` is
 * the number of retries allowed on top of the first attempt.
 */
export function shouldRetry(outcome: AttemptOutcome, attempt: number, max: number): boolean {
  if (attempt > max) return false;
  if (outcome.connectionError) return true;
  const status = outcome.status;
  return status !== undefined && status >= 500 && status <= 599;
}

export interface BackoffOptions {
  baseMs: number;
  capMs: number;
  /** A number in [0, 1); Math.random by default, fixed in tests. */
  random?: () => number;
}

export const DEFAULT_BACKOFF: BackoffOptions = { baseMs: 500, capMs: 8_000 };

/**
 * Wait before retry number `attempt` (1 for the first retry): the exponential step baseMs × 2^(attempt-1),
 * capped at capMs, of which the upper half is random ("equal jitter"). Jitter spreads clients that failed
 * together; keeping the lower half means a retry never fires at once against a service that is struggling.
 */
export function backoffMs(attempt: number, options: BackoffOptions = DEFAULT_BACKOFF): number {
  const random = options.random ?? Math.random;
  const exponent = Math.max(0, Math.min(attempt - 1, 30));
  const step = Math.min(options.capMs, options.baseMs * 2 ** exponent);
  const half = step / 2;
  return Math.round(half + random() * half);
}
