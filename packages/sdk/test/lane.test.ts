import { setTimeout as delay } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { createKeyLane, type LaneKind } from '../src/lane.ts';

/** Runs `kind` through the lane, logging when it starts and ends; it holds its ticket for `ms`. */
function runner(lane = createKeyLane(8)) {
  const log: string[] = [];
  let active = 0;
  let maxActive = 0;
  const run = async (name: string, kind: LaneKind, ms = 5) => {
    const ticket = await lane.acquire(kind);
    active++;
    maxActive = Math.max(maxActive, active);
    log.push(`+${name}`);
    await delay(ms);
    log.push(`-${name}`);
    active--;
    ticket.release();
  };
  return { run, log, maxActive: () => maxActive };
}

describe('key lane', () => {
  it('runs writes one at a time, in the order they asked', async () => {
    const { run, log } = runner();
    await Promise.all(['w1', 'w2', 'w3'].map((name) => run(name, 'write')));
    expect(log).toEqual(['+w1', '-w1', '+w2', '-w2', '+w3', '-w3']);
  });

  it('lets reads run side by side, but none starts while a write is in flight', async () => {
    const { run, log } = runner();
    await Promise.all([run('r1', 'read', 20), run('w', 'write'), run('r2', 'read'), run('r3', 'read')]);
    // The write does not wait for r1 (taken earlier, so lower); r2 and r3 wait for the write's answer.
    expect(log.slice(0, 2)).toEqual(['+r1', '+w']);
    expect(log.indexOf('+r2')).toBeGreaterThan(log.indexOf('-w'));
    expect(log.indexOf('+r3')).toBeGreaterThan(log.indexOf('-w'));
    expect(log.indexOf('+r3')).toBeLessThan(log.indexOf('-r2'));
  });

  it('keeps every request in flight within the window of the oldest', async () => {
    const { run, log, maxActive } = runner(createKeyLane(4));
    await Promise.all([run('slow', 'read', 40), ...Array.from({ length: 6 }, (_, i) => run(`r${i}`, 'read', 1))]);
    // r0..r2 start beside the slow one; r3 (four numbers after it) waits for it to be answered.
    expect(log.indexOf('+r3')).toBeGreaterThan(log.indexOf('-slow'));
    expect(maxActive()).toBeLessThanOrEqual(4);
  });

  it('does not let a stream of reads starve a waiting write', async () => {
    const { run, log } = runner();
    const first = run('r0', 'read', 10);
    const write = run('w', 'write');
    const later = Array.from({ length: 5 }, (_, i) => run(`r${i + 1}`, 'read'));
    await Promise.all([first, write, ...later]);
    for (let i = 1; i <= 5; i++) expect(log.indexOf(`+r${i}`)).toBeGreaterThan(log.indexOf('-w'));
  });

  it('a ticket released twice frees its place once', async () => {
    const lane = createKeyLane(8);
    const w = await lane.acquire('write');
    w.release();
    w.release();
    const a = await lane.acquire('write');
    let second = false;
    const b = lane.acquire('write').then((t) => {
      second = true;
      return t;
    });
    w.release();
    await delay(5);
    expect(second).toBe(false);
    a.release();
    (await b).release();
    expect(second).toBe(true);
  });
});
