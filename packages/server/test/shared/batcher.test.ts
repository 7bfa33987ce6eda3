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
});
