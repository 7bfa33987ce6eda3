import { describe, expect, it } from 'vitest';
import { MAX_RETRY_DELAY_MS, retryDelayMs } from '../../src/webhooks/backoff.ts';

describe('retryDelayMs', () => {
  it.each([
    [1, 1000, 500, 1000],
    [2, 1000, 1000, 2000],
    [3, 1000, 2000, 4000],
    [12, 1000, 1_024_000, 2_048_000],
    [13, 1000, 1_800_000, 3_600_000],
    [40, 1000, 1_800_000, 3_600_000],
    [1000, 1000, 1_800_000, 3_600_000],
    [1, 50, 25, 50],
  ])('attempt %i at base %i waits between %i and %i ms', (attempt, base, low, high) => {
    expect(retryDelayMs(attempt, base, () => 0)).toBe(low);
    expect(retryDelayMs(attempt, base, () => 0.999_999_999)).toBe(high - 1);
    const random = retryDelayMs(attempt, base);
    expect(random).toBeGreaterThanOrEqual(low);
    expect(random).toBeLessThan(high);
  });

  it('never exceeds one hour', () => {
    for (let attempt = 1; attempt <= 64; attempt++) {
      expect(retryDelayMs(attempt, 3_600_000, () => 0.999_999)).toBeLessThanOrEqual(MAX_RETRY_DELAY_MS);
    }
  });
});
