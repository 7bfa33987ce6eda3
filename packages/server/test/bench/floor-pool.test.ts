import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { benchFloor, type FloorServer, floorLanes, startFloorServer } from '../../bench/floor.ts';
import { runLoad } from '../../bench/load.ts';
import type { Lane, LoadJob, LoadResult } from '../../bench/load-job.ts';

// A real floor server and the real load driver on loopback, with a pool far smaller than one second of requests:
// the floor checks no nonce, so its lanes may send their pool again, where a signing loop would cap it.
describe('the floor is driven from its pre-signed pool only', () => {
  let lanes: Lane[];
  let server: FloorServer;
  beforeAll(async () => {
    lanes = await floorLanes(2);
    server = await startFloorServer(lanes);
  }, 60_000);
  afterAll(async () => {
    await server?.stop();
  });

  const job = (reusePool: boolean, warmupSeconds = 0): LoadJob => ({
    baseUrl: server.baseUrl,
    scenario: 'create-payment',
    runTag: randomBytes(4).toString('hex'),
    lanes,
    connections: 2,
    seconds: 1,
    warmupSeconds,
    poolSize: 8,
    signThreads: 1,
    presignSeconds: 10,
    reusePool,
  });

  // Every answer 2xx, more requests than the pool, and `beyond` (the requests sent past the pool, one way or the
  // other) the answered ones plus up to one a connection still in flight when the run ended.
  const expectPastThePool = (r: LoadResult, beyond: number) => {
    expect(r.preSigned).toBe(8);
    expect(r.requests).toBeGreaterThan(8);
    expect(r.non2xx + r.errors + r.timeouts).toBe(0);
    expect(beyond - (r.requests - 8)).toBeGreaterThanOrEqual(0);
    expect(beyond - (r.requests - 8)).toBeLessThanOrEqual(2);
  };

  it('a lane whose pool is used up sends it again, and nothing is signed in the loop', async () => {
    const r = await runLoad(job(true));
    expect(r.signedInLoop).toBe(0);
    expectPastThePool(r, r.reused);
  }, 60_000);

  it('without it the driver signs in the loop once the pool is used up (the service checks nonces)', async () => {
    const r = await runLoad(job(false));
    expect(r.reused).toBe(0);
    expectPastThePool(r, r.signedInLoop);
  }, 60_000);

  it('a warm-up before the timed run draws on the same pool and is left out of its figures', async () => {
    let started = 0;
    const r = await runLoad(job(true, 1), () => {
      started++;
    });
    expect(started).toBe(1);
    expect(r.signedInLoop).toBe(0);
    expect(r.durationSeconds).toBeGreaterThan(0.95);
    expect(r.durationSeconds).toBeLessThanOrEqual(1.01);
    // Every request past the pool was sent again from it, over the warm-up and the timed run alike.
    expect(r.answered).toBeGreaterThan(r.requests);
    // Two whole seconds, the warm-up's and the timed run's, holding every answer but those of its last moments.
    expect(r.answersBySecond).toHaveLength(2);
    const inSeconds = r.answersBySecond.reduce((a, n) => a + n, 0);
    expect(r.answersBySecond.every((n) => n > 0)).toBe(true);
    expect(r.answered - inSeconds).toBeGreaterThanOrEqual(0);
    expect(r.answered - inSeconds).toBeLessThanOrEqual(2);
    expect(r.reused - (r.answered - 8)).toBeGreaterThanOrEqual(0);
    expect(r.reused - (r.answered - 8)).toBeLessThanOrEqual(2);
    expect(r.non2xx + r.errors + r.timeouts).toBe(0);
  }, 60_000);

  it('benchFloor reuses its pool for both scenarios', async () => {
    const floor = await benchFloor({
      scenarios: ['create-payment', 'get-payment'],
      connections: 2,
      seconds: 1,
      warmupSeconds: 0,
      pool: { 'create-payment': 8, 'get-payment': 8 },
      signThreads: 1,
      presignSeconds: 10,
      log: () => {},
    });
    expect(floor.map((f) => f.scenario)).toEqual(['create-payment', 'get-payment']);
    for (const f of floor) {
      expect(f.rps).toBeGreaterThan(8);
      expect(f.signedInLoop).toBe(0);
    }
  }, 60_000);
});
