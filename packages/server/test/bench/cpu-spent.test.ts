import { describe, expect, it } from 'vitest';
import { coresOf } from '../../bench/payments-bench.ts';
import { coreShare, cpuSecondsSpent, schedOf, summedShare } from '../../bench/server-process.ts';

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

describe("the bench's reading of time on a core and waiting for one", () => {
  it('gives each share in % of the span', () => {
    expect(coreShare({ run: 10, wait: 2 }, { run: 14.7, wait: 4.4 }, 10)).toEqual({ running: 47, waiting: 24 });
    expect(coreShare(null, { run: 1, wait: 1 }, 10)).toBeNull();
    expect(coreShare({ run: 1, wait: 1 }, { run: 2, wait: 2 }, 0)).toBeNull();
  });

  it('sums the processes, a new one counted whole and one gone left out', () => {
    const before = new Map([
      [10, { run: 100, wait: 10 }],
      [11, { run: 500, wait: 50 }],
    ]);
    const after = new Map([
      [10, { run: 106.7, wait: 11.2 }],
      [12, { run: 3, wait: 0.5 }],
    ]);
    expect(summedShare(before, after, 10)).toEqual({ running: 97, waiting: 17 });
    expect(summedShare(before, new Map(), 10)).toBeNull();
  });

  it('reads a live thread from /proc, its time on a core growing with work', () => {
    const first = schedOf('self');
    if (first === null) return expect(process.platform).not.toBe('linux');
    let x = 0;
    for (let i = 0; i < 5_000_000; i++) x += i % 7;
    const second = schedOf('self')!;
    expect(x).toBeGreaterThan(0);
    expect(second.run).toBeGreaterThan(first.run);
    expect(second.wait).toBeGreaterThanOrEqual(first.wait);
    expect(schedOf(2 ** 22 + 7)).toBeNull();
  });

  it('prints what it has and leaves out what /proc did not give', () => {
    expect(
      coresOf({
        server: { running: 47, waiting: 24 },
        loadGenerator: null,
        postgres: { running: 75, waiting: 30 },
      }),
    ).toBe('cores (% of the run on a core / waiting for one): server 47 / 24, postgres 75 / 30');
    expect(coresOf({ server: null, loadGenerator: null, postgres: null })).toBeNull();
  });
});
