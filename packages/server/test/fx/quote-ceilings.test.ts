import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/shared/clock.ts';
import type { Answer } from '../support/signed-client.ts';
import type { TestServer } from '../support/test-server.ts';
import { expectError, extraKeys, liveQuotes, MIN, publishRate, quote, startProductionServer } from './fx-http.ts';

// The live-quote ceilings over real HTTP, including requests that race (each from its own key, since POST
// nonces must rise per key). On PostgreSQL (DATABASE_URL) the races are real concurrent transactions.

const TTL_SECONDS = 60;
const PER_CLIENT = 3;
const TOTAL = 5;
const PER_CLIENT_MESSAGE = `no quote room: ${PER_CLIENT} live quotes for this client; wait for one to expire or be used`;
const TOTAL_MESSAGE = 'no quote room: the service-wide ceiling of live quotes is reached; wait for quotes to expire';
const body = { amountType: 'SOURCE', amountMinor: '10000' };

let server: TestServer;
let clock: ManualClock;
let keySeq = 0;
const newKey = (): string => `ceiling-key-${++keySeq}`;

beforeAll(async () => {
  clock = new ManualClock(Date.UTC(2026, 2, 1, 12, 0, 0));
  server = await startProductionServer(clock, {
    DISPERSA_QUOTE_TTL_SECONDS: String(TTL_SECONDS),
    DISPERSA_QUOTE_MAX_LIVE_PER_CLIENT: String(PER_CLIENT),
    DISPERSA_QUOTE_MAX_LIVE_TOTAL: String(TOTAL),
  });
});
afterAll(async () => {
  await server?.stop();
});
beforeEach(async () => {
  // Every quote of the previous test expires; a fresh rate outlives this test.
  clock.advance(TTL_SECONDS * 1000 + 1);
  await publishRate(server, clock, {
    rate: '36.5',
    expiresAt: new Date(clock.now().getTime() + 60 * MIN).toISOString(),
  });
});

function statuses(answers: Answer[]): Record<number, number> {
  const out: Record<number, number> = {};
  for (const a of answers) out[a.status] = (out[a.status] ?? 0) + 1;
  return out;
}

describe('live-quote ceilings', () => {
  it('409 once a client holds its ceiling; replays still answer; space returns when the quotes expire', async () => {
    const c = await server.newClient({ currency: 'USD' });
    const keys = [newKey(), newKey(), newKey()];
    for (const k of keys) expect((await quote(c.api, k, body)).status).toBe(201);
    expectError(await quote(c.api, newKey(), body), 409, PER_CLIENT_MESSAGE);
    // A replay is no new quote and needs no room.
    expect((await quote(c.api, keys[0], body)).status).toBe(200);

    clock.advance(TTL_SECONDS * 1000 - 1);
    expectError(await quote(c.api, newKey(), body), 409, PER_CLIENT_MESSAGE);
    clock.advance(1); // now exactly at expiresAt: the quotes are dead
    expect((await quote(c.api, newKey(), body)).status).toBe(201);
  });

  it('409 with its own text once the service-wide ceiling is reached, whoever asks', async () => {
    const a = await server.newClient({ currency: 'USD' });
    const b = await server.newClient({ currency: 'USD' });
    for (let i = 0; i < PER_CLIENT; i++) expect((await quote(a.api, newKey(), body)).status).toBe(201);
    for (let i = 0; i < TOTAL - PER_CLIENT; i++) expect((await quote(b.api, newKey(), body)).status).toBe(201);
    expectError(await quote(b.api, newKey(), body), 409, TOTAL_MESSAGE);
    const c = await server.newClient({ currency: 'USD' });
    expectError(await quote(c.api, newKey(), body), 409, TOTAL_MESSAGE);
  });

  it('racing creations of one client never exceed its ceiling', async () => {
    const c = await server.newClient({ currency: 'USD' });
    const apis = await extraKeys(server, c.clientId, 10);
    const answers = await Promise.all(apis.map((api) => quote(api, newKey(), body)));
    expect(statuses(answers)).toEqual({ 201: PER_CLIENT, 409: 10 - PER_CLIENT });
    for (const a of answers.filter((x) => x.status === 409)) expect(a.body).toEqual({ error: PER_CLIENT_MESSAGE });
    expect(await liveQuotes(server, c.clientId, clock)).toBe(PER_CLIENT);
  });

  it('racing creations of many clients never exceed the total, nor any client its own ceiling', async () => {
    const clients = await Promise.all([1, 2, 3].map(() => server.newClient({ currency: 'USD' })));
    const racers = await Promise.all(clients.map((c) => extraKeys(server, c.clientId, 4)));
    const answers = await Promise.all(racers.flat().map((api) => quote(api, newKey(), body)));
    expect(statuses(answers)).toEqual({ 201: TOTAL, 409: 12 - TOTAL });
    let live = 0;
    for (const c of clients) {
      const n = await liveQuotes(server, c.clientId, clock);
      expect(n).toBeLessThanOrEqual(PER_CLIENT);
      live += n;
    }
    expect(live).toBe(TOTAL);
  });

  it('racing requests with one key and one body make one quote: one 201, the rest 200 with it', async () => {
    const c = await server.newClient({ currency: 'USD' });
    const apis = await extraKeys(server, c.clientId, 8);
    const key = newKey();
    const answers = await Promise.all(apis.map((api) => quote(api, key, body)));
    expect(statuses(answers)).toEqual({ 201: 1, 200: 7 });
    const ids = new Set(answers.map((a) => a.body.payload.quoteId));
    expect(ids.size).toBe(1);
    expect(await liveQuotes(server, c.clientId, clock)).toBe(1);
  });

  it('racing requests with one key and different bodies: exactly one wins, the others are 409', async () => {
    const c = await server.newClient({ currency: 'USD' });
    const apis = await extraKeys(server, c.clientId, 6);
    const key = newKey();
    const answers = await Promise.all(
      apis.map((api, i) => quote(api, key, { amountType: 'SOURCE', amountMinor: String(10_000 + i) })),
    );
    expect(statuses(answers)).toEqual({ 201: 1, 409: 5 });
    for (const a of answers.filter((x) => x.status === 409)) {
      expect(a.body).toEqual({ error: 'idempotency-key already used with different content' });
    }
    expect(await liveQuotes(server, c.clientId, clock)).toBe(1);
  });
});
