import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/shared/clock.ts';
import type { TestClient, TestServer } from '../support/test-server.ts';
import { expectError, later, MIN, publishRate, startProductionServer } from './fx-http.ts';

// GET /v2/rate over real HTTP on a production deployment (rates only from the operator API).

let server: TestServer;
let clock: ManualClock;

beforeAll(async () => {
  clock = new ManualClock(Date.UTC(2026, 2, 1, 12, 0, 0));
  server = await startProductionServer(clock);
});
afterAll(async () => {
  await server?.stop();
});

/** Each test gets clients of its own currency so rates published by one test never leak into another. */
async function client(currency: string): Promise<TestClient> {
  return server.newClient({ currency });
}

describe('GET /v2/rate', () => {
  it('503 names the real pair while nothing was published, and production publishes nothing by itself', async () => {
    const usd = await client('USD');
    expectError(await usd.api.get('/v2/rate'), 503, 'no rate in force for USD/VES');
    const eur = await client('EUR');
    expectError(await eur.api.get('/v2/rate'), 503, 'no rate in force for EUR/VES');
    const listed = await server.admin('GET', '/admin/v1/rates?base=USD');
    expect(listed.body.payload.data).toEqual([]);
  });

  it('404 with the exact text for a VES balance, even when rates exist', async () => {
    await publishRate(server, clock, { base: 'GBP', rate: '45.1' });
    const ves = await client('VES');
    expectError(await ves.api.get('/v2/rate'), 404, 'no rate applies: your wallet is already in VES');
  });

  it('200 with the Rate object, status word ok, 12 decimals, nothing else in the payload', async () => {
    const published = await publishRate(server, clock, {
      base: 'CAD',
      rate: '26.95',
      expiresAt: later(clock, 10 * MIN),
    });
    const cad = await client('CAD');
    const res = await cad.api.get('/v2/rate');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      status: 'ok',
      traceId: expect.any(String),
      payload: {
        rateId: published['rateId'],
        base: 'CAD',
        quote: 'VES',
        rate: '26.950000000000',
        validFrom: clock.now().toISOString(),
        expiresAt: later(clock, 10 * MIN),
      },
    });
  });

  it('is never served at or after expiresAt, nor before validFrom', async () => {
    const start = clock.now().getTime();
    await publishRate(server, clock, {
      base: 'AUD',
      rate: '24.5',
      validFrom: later(clock, MIN),
      expiresAt: later(clock, 3 * MIN),
    });
    const aud = await client('AUD');
    expectError(await aud.api.get('/v2/rate'), 503, 'no rate in force for AUD/VES');
    clock.set(new Date(start + MIN));
    expect((await aud.api.get('/v2/rate')).body.payload.rate).toBe('24.500000000000');
    clock.set(new Date(start + 3 * MIN - 1));
    expect((await aud.api.get('/v2/rate')).status).toBe(200);
    clock.set(new Date(start + 3 * MIN));
    expectError(await aud.api.get('/v2/rate'), 503, 'no rate in force for AUD/VES');
  });

  it('serves the latest publication; the same value republished is a new rateId', async () => {
    const first = await publishRate(server, clock, { base: 'CHF', rate: '41' });
    const chf = await client('CHF');
    expect((await chf.api.get('/v2/rate')).body.payload.rateId).toBe(first['rateId']);
    const again = await publishRate(server, clock, { base: 'CHF', rate: '41' });
    expect(again['rateId']).not.toBe(first['rateId']);
    const served = (await chf.api.get('/v2/rate')).body.payload;
    expect(served.rateId).toBe(again['rateId']);
    expect(served.rate).toBe('41.000000000000');
  });

  it("a client's own rate takes precedence over the general one, and only for that client", async () => {
    const start = clock.now().getTime();
    const alice = await client('MXN');
    const bob = await client('MXN');
    const own = await publishRate(server, clock, {
      base: 'MXN',
      rate: '2.05',
      clientId: alice.clientId,
      expiresAt: later(clock, 2 * MIN),
    });
    // Published later, so newer than alice's own rate, yet alice keeps hers while it is in force.
    const general = await publishRate(server, clock, { base: 'MXN', rate: '2.1', expiresAt: later(clock, 10 * MIN) });
    expect((await alice.api.get('/v2/rate')).body.payload).toMatchObject({
      rateId: own['rateId'],
      rate: '2.050000000000',
    });
    expect((await bob.api.get('/v2/rate')).body.payload).toMatchObject({
      rateId: general['rateId'],
      rate: '2.100000000000',
    });
    clock.set(new Date(start + 2 * MIN));
    expect((await alice.api.get('/v2/rate')).body.payload.rateId).toBe(general['rateId']);
  });
});
