import { describe, expect, it } from 'vitest';
import { type AttemptOutcome, backoffMs, shouldRetry } from '../src/retry.ts';

describe('shouldRetry', () => {
  const cases: Array<[string, AttemptOutcome, number, number, boolean]> = [
    ['500 after the first attempt', { status: 500 }, 1, 2, true],
    ['502', { status: 502 }, 1, 2, true],
    ['503 (no rate in force, temporarily unavailable)', { status: 503 }, 2, 2, true],
    ['504', { status: 504 }, 1, 2, true],
    ['599', { status: 599 }, 1, 2, true],
    ['connection error', { connectionError: true }, 1, 2, true],
    ['connection error on the last allowed retry', { connectionError: true }, 2, 2, true],
    ['500 once the retries are used up', { status: 500 }, 3, 2, false],
    ['connection error once the retries are used up', { connectionError: true }, 3, 2, false],
    ['500 with retries disabled', { status: 500 }, 1, 0, false],
    ['400 invalid request', { status: 400 }, 1, 2, false],
    ['401 authentication (a resend with a new nonce is a new decision)', { status: 401 }, 1, 2, false],
    ['403', { status: 403 }, 1, 2, false],
    ['404 not found', { status: 404 }, 1, 2, false],
    ['409 conflict (unlike some SDKs, never retried here)', { status: 409 }, 1, 2, false],
    ['415 unsupported media type', { status: 415 }, 1, 2, false],
    ['422 business rule (the failed payment already exists)', { status: 422 }, 1, 2, false],
    ['429', { status: 429 }, 1, 2, false],
    ['499', { status: 499 }, 1, 2, false],
    ['600 is not a server error', { status: 600 }, 1, 2, false],
    ['a 2xx is never retried', { status: 201 }, 1, 2, false],
    ['nothing known', {}, 1, 2, false],
  ];
  it.each(cases)('%s', (_name, outcome, attempt, max, expected) => {
    expect(shouldRetry(outcome, attempt, max)).toBe(expected);
  });

  it('never retries any 4xx, whatever the budget', () => {
    for (let status = 400; status < 500; status++) expect(shouldRetry({ status }, 1, 10)).toBe(false);
  });
});

describe('backoffMs', () => {
  const options = { baseMs: 100, capMs: 1_000 };
  const cases: Array<[number, number, number]> = [
    // attempt, random, expected: half of min(cap, base × 2^(attempt-1)) plus random × that half
    [1, 0, 50],
    [1, 0.999, 100],
    [2, 0, 100],
    [2, 0.5, 150],
    [3, 0, 200],
    [4, 1, 800],
    [5, 0, 500],
    [5, 1, 1_000],
    [40, 0.5, 750],
    [0, 0, 50],
  ];
  it.each(cases)('attempt %i with random %d waits %i ms', (attempt, random, expected) => {
    expect(backoffMs(attempt, { ...options, random: () => random })).toBe(expected);
  });

  it('stays within [step/2, step] and never above the cap for real randomness', () => {
    for (let attempt = 1; attempt < 20; attempt++) {
      const step = Math.min(1_000, 100 * 2 ** (attempt - 1));
      for (let i = 0; i < 50; i++) {
        const wait = backoffMs(attempt, options);
        expect(wait).toBeGreaterThanOrEqual(step / 2);
        expect(wait).toBeLessThanOrEqual(step);
      }
    }
  });
});
