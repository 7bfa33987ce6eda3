import { describe, expect, it } from 'vitest';
import { randomId } from '../../src/shared/ids.ts';

describe('randomId', () => {
  it('gives the prefix and 128 bits in lower-case base32', () => {
    expect(randomId('evt')).toMatch(/^evt_[a-z2-7]{26}$/);
    expect(randomId('tr', 10)).toMatch(/^tr_[a-z2-7]{16}$/);
    expect(randomId('big', 5000)).toMatch(/^big_[a-z2-7]{8000}$/);
  });

  it('never repeats, across many refills of its random pool', () => {
    const ids = Array.from({ length: 20_000 }, () => randomId('x'));
    expect(new Set(ids).size).toBe(ids.length);
    // Every symbol turns up (a pool read twice, or never refilled, would skew or repeat).
    const symbols = new Set(ids.join('').replaceAll('x_', ''));
    expect(symbols.size).toBe(32);
  });
});
