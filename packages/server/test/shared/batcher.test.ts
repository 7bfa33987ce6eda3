import { describe, expect, it } from 'vitest';
import { createBatcher } from '../../src/shared/batcher.ts';

const tick = () => new Promise((r) => setImmediate(r));

describe('a batcher', () => {
  it('tells how long each batch ran, a failed one too, and how many lanes it has', async () => {
    const ran: number[] = [];
    const release: ((fail: boolean) => void)[] = [];
    const batcher = createBatcher<number, number>({
      lanes: 3,
      maxBatch: 8,
      onRun: (seconds) => ran.push(seconds),
      async run(items) {
        const fail = await new Promise<boolean>((resolve) => release.push(resolve));
        if (fail) throw new Error('the batch failed');
        return items.map((v) => ({ ok: true, value: v + 1 }));
      },
    });
    expect(batcher.lanes).toBe(3);
    const first = batcher.add(1, 'k');
    while (release.length === 0) await tick();
    const second = batcher.add(2, 'k');
    // The first batch has been running for at least 20 ms when it is let go.
    await new Promise((r) => setTimeout(r, 25));
    expect(ran).toEqual([]);
    release.shift()!(false);
    expect(await first).toBe(2);
    while (release.length === 0) await tick();
    release.shift()!(true);
    await expect(second).rejects.toThrow('the batch failed');
    await batcher.drained();
    expect(ran).toHaveLength(2);
    expect(ran[0]).toBeGreaterThanOrEqual(0.02);
    expect(ran[0]).toBeLessThan(5);
    expect(ran[1]).toBeGreaterThanOrEqual(0);
  });

  it('starts an idle lane after one turn of the event loop: what arrived in that turn shares the batch', async () => {
    const batches: number[][] = [];
    const batcher = createBatcher<number, number>({
      lanes: 1,
      maxBatch: 8,
      async run(items) {
        batches.push(items);
        return items.map((v) => ({ ok: true, value: v }));
      },
    });
    const added = [batcher.add(1, 'k'), batcher.add(2, 'k')];
    await tick();
    added.push(batcher.add(3, 'k'));
    expect(await Promise.all(added)).toEqual([1, 2, 3]);
    expect(batches).toEqual([[1, 2], [3]]);
  });

  it('with startTurns, lets that many turns pass first: what arrived meanwhile shares the batch', async () => {
    const batches: number[][] = [];
    const batcher = createBatcher<number, number>({
      lanes: 1,
      maxBatch: 8,
      startTurns: 3,
      async run(items) {
        batches.push(items);
        return items.map((v) => ({ ok: true, value: v }));
      },
    });
    const added = [batcher.add(1, 'k')];
    await tick();
    added.push(batcher.add(2, 'k'));
    await tick();
    added.push(batcher.add(3, 'k'));
    await tick();
    // The third turn started the batch: this one waits for the next.
    added.push(batcher.add(4, 'k'));
    expect(await Promise.all(added)).toEqual([1, 2, 3, 4]);
    expect(batches).toEqual([[1, 2, 3], [4]]);
    // An idle lane waits its turns again.
    const again = [batcher.add(5, 'k')];
    await tick();
    await tick();
    again.push(batcher.add(6, 'k'));
    expect(await Promise.all(again)).toEqual([5, 6]);
    expect(batches).toEqual([[1, 2, 3], [4], [5, 6]]);
  });
});
