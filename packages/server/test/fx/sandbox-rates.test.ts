import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SANDBOX_RATE } from '../../src/fx/domain.ts';
import { ManualClock } from '../../src/shared/clock.ts';
import type { TestClient, TestServer } from '../support/test-server.ts';
import { startTestServer } from '../support/test-server.ts';
import { expectError, extraKeys, MIN, quote } from './fx-http.ts';

// The sandbox keeps a USD/VES rate in force by itself: a publisher started with the service, republishing
// once half a rate's life is gone, and a lookup that finds nothing publishes at once.

let server: TestServer;
let clock: ManualClock;
let usd: TestClient;

beforeAll(async () => {
  clock = new ManualClock(Date.UTC(2026, 2, 1, 12, 0, 0));
  server = await startTestServer({ clock });
  usd = await server.newClient({ currency: 'USD' });
});
afterAll(async () => {
  await server?.stop();
});

async function publications(): Promise<any[]> {
  const res = await server.admin('GET', '/admin/v1/rates?base=USD&limit=100');
  expect(res.status).toBe(200);
  return res.body.payload.data;
}

async function until<T>(probe: () => Promise<T | undefined>, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 100));
  }
}

function bps(from: string, to: string): number {
  const a = Number(from);
  return Math.abs((Number(to) - a) / a) * 10_000;
}

describe('sandbox rate publisher on a running sandbox', () => {
  it('has a USD rate in force from the start: the first value, a ten-minute life, from the publisher', async () => {
    const res = await usd.api.get('/v2/rate');
    expect(res.status).toBe(200);
    const rate = res.body.payload;
    expect(rate.base).toBe('USD');
    expect(rate.rate).toBe('36.500000000000');
    expect(Date.parse(rate.expiresAt) - Date.parse(rate.validFrom)).toBe(SANDBOX_RATE.lifetimeMs);
    const [latest] = await publications();
    expect(latest).toMatchObject({ rateId: rate.rateId, source: 'sandbox-publisher', clientId: null });
  });

  it('republishes on its own once half the life is gone, by a small step', async () => {
    const before = (await usd.api.get('/v2/rate')).body.payload;
    clock.advance(SANDBOX_RATE.lifetimeMs / 2 + MIN);
    // Nobody asks for the rate here: the publisher's own timer must act.
    const next = await until(async () => {
      const [latest] = await publications();
      return latest.rateId === before.rateId ? undefined : latest;
    }, SANDBOX_RATE.tickMs * 3);
    expect(next.validFrom).toBe(clock.now().toISOString());
    expect(Date.parse(next.expiresAt) - Date.parse(next.validFrom)).toBe(SANDBOX_RATE.lifetimeMs);
    // A step is at most driftBps, then rounded down to the published 4 decimals: one 0.0001 more at most (about
    // 0.027 bps at 36.5; a fixed 0.01 failed on the draws near -driftBps).
    const quantumBps = (0.0001 / Number(before.rate)) * 10_000;
    expect(bps(before.rate, next.rate)).toBeLessThanOrEqual(SANDBOX_RATE.driftBps + quantumBps + 1e-9);
    expect((await usd.api.get('/v2/rate')).body.payload.rateId).toBe(next.rateId);
  });

  it('never answers 503 after time jumps past expiry: the first lookup publishes at once', async () => {
    clock.advance(3 * SANDBOX_RATE.lifetimeMs);
    const res = await usd.api.get('/v2/rate');
    expect(res.status).toBe(200);
    expect(res.body.payload.validFrom).toBe(clock.now().toISOString());

    clock.advance(3 * SANDBOX_RATE.lifetimeMs);
    const q = await quote(usd.api, 'after-a-long-sleep', { amountType: 'TARGET', amountMinor: '150000' });
    expect(q.status).toBe(201);
    const [latest] = await publications();
    expect(q.body.payload.rateId).toBe(latest.rateId);
    expect(latest.validFrom).toBe(clock.now().toISOString());
  });

  it('racing lookups after a lapse all get a rate in force', async () => {
    clock.advance(3 * SANDBOX_RATE.lifetimeMs);
    const apis = await extraKeys(server, usd.clientId, 6);
    const answers = await Promise.all(apis.map((api) => api.get('/v2/rate')));
    for (const a of answers) {
      expect(a.status).toBe(200);
      expect(a.body.payload.validFrom).toBe(clock.now().toISOString());
    }
  });

  it('keeps only USD: another currency still gets the honest 503', async () => {
    const eur = await server.newClient({ currency: 'EUR' });
    expectError(await eur.api.get('/v2/rate'), 503, 'no rate in force for EUR/VES');
  });

  it("leaves the operator's own publications alone while they are fresh", async () => {
    clock.advance(3 * SANDBOX_RATE.lifetimeMs);
    const res = await server.admin('POST', '/admin/v1/rates', {
      base: 'USD',
      rate: '40',
      expiresAt: new Date(clock.now().getTime() + 60 * MIN).toISOString(),
    });
    expect(res.status).toBe(201);
    const served = (await usd.api.get('/v2/rate')).body.payload;
    expect(served).toMatchObject({ rateId: res.body.payload.rateId, rate: '40.000000000000' });
  });
});

describe('sandbox first start', () => {
  it('seeds the USD demo client with a rate in force', async () => {
    const seededClock = new ManualClock(Date.UTC(2026, 5, 1, 8, 0, 0));
    const seeded = await startTestServer({ clock: seededClock, seedDemo: true });
    try {
      const res = await seeded.admin('GET', '/admin/v1/rates?base=USD');
      const live = (res.body.payload.data as any[]).filter(
        (r) =>
          Date.parse(r.validFrom) <= seededClock.now().getTime() &&
          Date.parse(r.expiresAt) > seededClock.now().getTime(),
      );
      expect(live.length).toBeGreaterThanOrEqual(1);
      expect(live[0].source).toBe('sandbox-publisher');
    } finally {
      await seeded.stop();
    }
  });
});
