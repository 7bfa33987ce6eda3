/** Delivery back-off: base × 2^(attempt − 1), capped at one hour, with "equal jitter" (half fixed, half random). */

export const MAX_RETRY_DELAY_MS = 3_600_000;

/** Delay before the attempt after `attempt` (1-based) failed. random returns [0, 1); injectable for tests. */
export function retryDelayMs(attempt: number, baseMs: number, random: () => number = Math.random): number {
  const exponential = Math.min(baseMs * 2 ** Math.max(0, attempt - 1), MAX_RETRY_DELAY_MS);
  // Jitter spreads the retries of many events that failed together (one receiver down) over time.
  return Math.floor(exponential / 2 + random() * (exponential / 2));
}
