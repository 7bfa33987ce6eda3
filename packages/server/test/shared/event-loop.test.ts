import { describe, expect, it } from 'vitest';
import { mapInSlices, runInSlices, SLICE_ITEMS } from '../../src/shared/event-loop.ts';

/** Records, for each item mapped, how many callbacks queued on the event loop had run by then. */
async function turnsSeen(count: number, slice?: number): Promise<{ out: number[]; seen: number[] }> {
  let turns = 0;
  let running = true;
  const tick = (): void => {
    turns++;
    if (running) setImmediate(tick);
  };
  setImmediate(tick);
  const seen: number[] = [];
  const out = await mapInSlices(
    Array.from({ length: count }, (_, i) => i),
    (v) => {
      seen.push(turns);
      return v * 2;
    },
    slice,
  );
  running = false;
  return { out, seen };
}

describe('work in slices', () => {
  it('maps every item in order, letting the event loop turn between slices and only there', async () => {
    const { out, seen } = await turnsSeen(10, 4);
    expect(out).toEqual([0, 2, 4, 6, 8, 10, 12, 14, 16, 18]);
    // Items 0-3 in one stretch, 4-7 after a turn, 8-9 after another.
    expect(new Set(seen.slice(0, 4)).size).toBe(1);
    expect(new Set(seen.slice(4, 8)).size).toBe(1);
    expect(seen[4]!).toBeGreaterThan(seen[3]!);
    expect(seen[8]!).toBeGreaterThan(seen[7]!);
  });

  it('runs a batch no larger than a slice in one stretch (the embedded database stores 100 lines a batch)', async () => {
    const { seen } = await turnsSeen(SLICE_ITEMS);
    expect(new Set(seen).size).toBe(1);
    const { seen: more } = await turnsSeen(SLICE_ITEMS + 1);
    expect(more[SLICE_ITEMS]!).toBeGreaterThan(more[0]!);
  });

  it('drives a generator to its result, turning the event loop at each yield', async () => {
    const order: string[] = [];
    function* steps(): Generator<void, string, void> {
      order.push('a');
      yield;
      order.push('b');
      yield;
      order.push('c');
      return 'done';
    }
    // Work already waiting (a request read from a socket) runs between the first slice and the second.
    setImmediate(() => order.push('other work'));
    expect(await runInSlices(steps())).toBe('done');
    expect(order).toEqual(['a', 'other work', 'b', 'c']);
  });
});
