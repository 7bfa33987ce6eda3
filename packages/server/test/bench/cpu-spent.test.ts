import { describe, expect, it } from 'vitest';
import { cpuSecondsSpent } from '../../bench/server-process.ts';

describe("the bench's reading of the database's CPU", () => {
  it('counts each process by its growth and a new one whole, and a process gone as nothing, never less', () => {
    const before = new Map([
      [10, 5.0],
      [11, 40.0],
    ]);
    // 11 closed (an idle pooled connection), 12 opened.
    const after = new Map([
      [10, 6.5],
      [12, 0.25],
    ]);
    expect(cpuSecondsSpent(before, after)).toBeCloseTo(1.75);
  });
});
