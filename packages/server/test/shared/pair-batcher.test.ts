import { describe, expect, it } from 'vitest';
import { createPairBatcher } from '../../src/shared/pair-batcher.ts';

/** A pair batcher whose runs wait for the test to let each one finish. */
function gated(options: { joint?: boolean; fail?: (a: string[], b: number[]) => boolean } = {}) {
  const runs: { a: string[]; b: number[] }[] = [];
  const ran: number[] = [];
  const release: (() => void)[] = [];
  const batcher = createPairBatcher<string, string, number, number>({
    lanes: 1,
    maxBatch: 3,
    joint: options.joint ?? true,
    onRun: (seconds) => ran.push(seconds),
    async run(a, b) {
      runs.push({ a, b });
      await new Promise<void>((resolve) => release.push(resolve));
      if (options.fail?.(a, b)) throw new Error('the batch failed');
      return { a: a.map((v) => ({ ok: true, value: v.toUpperCase() })), b: b.map((v) => ({ ok: true, value: v * 2 })) };
    },
  });
  const next = async () => {
    while (release.length === 0) await new Promise((r) => setImmediate(r));
    release.shift()!();
  };
  return { batcher, runs, ran, next };
}

describe('a pair batcher', () => {
  it('runs what arrived of both kinds while a batch was in flight as one batch, up to maxBatch of each', async () => {
    const { batcher, runs, next } = gated();
    const first = batcher.addA('a', 'k');
    await new Promise((r) => setImmediate(r));
    const later = [batcher.addB(1, 'k'), batcher.addA('b', 'k'), batcher.addB(2, 'k')];
    const more = [batcher.addA('c', 'k'), batcher.addA('d', 'k'), batcher.addA('e', 'k')];
    await next();
    expect(await first).toBe('A');
    await next();
    expect(await Promise.all(later)).toEqual([2, 'B', 4]);
    await next();
    expect(await Promise.all(more)).toEqual(['C', 'D', 'E']);
    expect(runs).toEqual([
      { a: ['a'], b: [] },
      { a: ['b', 'c', 'd'], b: [1, 2] },
      { a: ['e'], b: [] },
    ]);
    await batcher.drained();
  });

  it('fails every item of both kinds when a batch throws, and goes on with the next', async () => {
    const { batcher, ran, next } = gated({ fail: (a) => a.includes('bad') });
    const bad = batcher.addA('bad', 'k');
    const b = batcher.addB(7, 'k');
    const after = new Promise((r) => setImmediate(r)).then(() => batcher.addA('good', 'k'));
    await next();
    await expect(bad).rejects.toThrow('the batch failed');
    await expect(b).rejects.toThrow('the batch failed');
    await next();
    expect(await after).toBe('GOOD');
    // Each batch, the failed one too, told how long it ran.
    expect(ran).toHaveLength(2);
    for (const seconds of ran) expect(seconds).toBeGreaterThanOrEqual(0);
    expect(batcher.lanes).toBe(1);
  });

  it('with joint off, runs each kind in batches of its own, neither waiting for the other', async () => {
    const { batcher, runs, next } = gated({ joint: false });
    const a = batcher.addA('a', 'k');
    const b = batcher.addB(1, 'k');
    const a2 = batcher.addA('b', 'k');
    while (runs.length < 2) await new Promise((r) => setImmediate(r));
    expect(runs).toEqual([
      { a: ['a', 'b'], b: [] },
      { a: [], b: [1] },
    ]);
    await next();
    await next();
    expect([await a, await a2, await b]).toEqual(['A', 'B', 2]);
    await batcher.drained();
    // A lane for each kind.
    expect(batcher.lanes).toBe(2);
  });

  it('passes startTurns to its lanes, joint or each kind apart', async () => {
    for (const joint of [true, false]) {
      const runs: { a: string[]; b: number[] }[] = [];
      const batcher = createPairBatcher<string, string, number, number>({
        lanes: 1,
        maxBatch: 8,
        joint,
        startTurns: 2,
        async run(a, b) {
          runs.push({ a, b });
          return { a: a.map((v) => ({ ok: true, value: v })), b: b.map((v) => ({ ok: true, value: v })) };
        },
      });
      const a = [batcher.addA('a', 'k')];
      const b = [batcher.addB(1, 'k')];
      await new Promise((r) => setImmediate(r));
      a.push(batcher.addA('b', 'k'));
      b.push(batcher.addB(2, 'k'));
      expect(await Promise.all(a)).toEqual(['a', 'b']);
      expect(await Promise.all(b)).toEqual([1, 2]);
      expect(runs).toEqual(
        joint
          ? [{ a: ['a', 'b'], b: [1, 2] }]
          : [
              { a: ['a', 'b'], b: [] },
              { a: [], b: [1, 2] },
            ],
      );
      await batcher.drained();
    }
  });
});
