import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { NONCE_PATTERN } from '../src/envelope.ts';
import {
  createMemoryNonceGenerator,
  MAX_NONCE,
  type NonceState,
  nextNonce,
  sharedMemoryNonceGenerator,
} from '../src/nonce.ts';

const T = 1_700_000_000_000;
const floorAt = (ms: number) => BigInt(ms) * 1_000_000n;

describe('nextNonce', () => {
  const cases: Array<[string, number, NonceState | null, bigint]> = [
    ['first nonce: the clock floor', T, null, floorAt(T)],
    ['busy (last issued 5 ms ago): last + 1, no jump', T + 5, { value: floorAt(T), issuedAtMs: T }, floorAt(T) + 1n],
    [
      'quiet for the reseed pause: jumps to the clock',
      T + 1000,
      { value: floorAt(T) + 7n, issuedAtMs: T },
      floorAt(T + 1000),
    ],
    ['clock stepped back: last + 1', T - 60_000, { value: floorAt(T), issuedAtMs: T }, floorAt(T) + 1n],
    [
      'quiet, but the clock is below last: last + 1',
      T,
      { value: floorAt(T + 5000), issuedAtMs: T - 5000 },
      floorAt(T + 5000) + 1n,
    ],
    ['issue time unknown (seed): jump when the clock is higher', T, { value: 5n, issuedAtMs: null }, floorAt(T)],
    [
      'issue time unknown, seed above the clock: last + 1',
      T,
      { value: floorAt(T) + 9n, issuedAtMs: null },
      floorAt(T) + 10n,
    ],
    ['clock at the epoch: 1, never 0', 0, null, 1n],
  ];
  it.each(cases)('%s', (_name, now, last, expected) => {
    const next = nextNonce(now, last, 1000);
    expect(next.value).toBe(expected);
    expect(next.issuedAtMs).toBe(now);
    expect(NONCE_PATTERN.test(next.value.toString())).toBe(true);
  });

  it('refuses to go past 38 digits', () => {
    expect(nextNonce(T, { value: MAX_NONCE - 1n, issuedAtMs: T }).value).toBe(MAX_NONCE);
    expect(() => nextNonce(T, { value: MAX_NONCE, issuedAtMs: T })).toThrow(/38 digits/);
  });
});

describe('createMemoryNonceGenerator', () => {
  it('is strictly increasing and well-formed whatever the clock does', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.integer({ min: 0, max: 4_000_000_000_000 }), { minLength: 1, maxLength: 60 }),
        async (clock) => {
          let i = 0;
          const generator = createMemoryNonceGenerator({ now: () => clock[i++ % clock.length] ?? 0 });
          let previous = 0n;
          for (let n = 0; n < clock.length; n++) {
            const text = await generator.next();
            expect(text).toMatch(NONCE_PATTERN);
            expect(BigInt(text) > previous).toBe(true);
            previous = BigInt(text);
          }
        },
      ),
    );
  });

  it('never hands the same value to concurrent callers, and a burst is consecutive', async () => {
    const generator = createMemoryNonceGenerator();
    const values = (await Promise.all(Array.from({ length: 500 }, () => generator.next()))).map(BigInt);
    expect(new Set(values).size).toBe(500);
    // Consecutive numbers keep a burst of parallel reads inside the server's 64-wide window.
    for (let i = 1; i < values.length; i++) expect(values[i]).toBe((values[i - 1] ?? 0n) + 1n);
  });

  it('a restarted process (a new generator) starts above everything the old one issued', async () => {
    let now = T;
    const before = createMemoryNonceGenerator({ now: () => now });
    let last = '';
    for (let i = 0; i < 10_000; i++) {
      last = await before.next();
      if (i % 100 === 0) now += 1;
    }
    now += 1;
    const after = createMemoryNonceGenerator({ now: () => now });
    expect(BigInt(await after.next()) > BigInt(last)).toBe(true);
  });

  it('continues above a seed given by the caller', async () => {
    const generator = createMemoryNonceGenerator({ now: () => 1, last: '99999999999999999999' });
    expect(await generator.next()).toBe('100000000000000000000');
  });

  it('shares one generator per API key inside a process', async () => {
    expect(sharedMemoryNonceGenerator('sk_test_a')).toBe(sharedMemoryNonceGenerator('sk_test_a'));
    expect(sharedMemoryNonceGenerator('sk_test_a')).not.toBe(sharedMemoryNonceGenerator('sk_test_b'));
  });
});
