import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/shared/clock.ts';
import type { TestServer } from '../support/test-server.ts';
import { expectError, later, MIN, type RateBody, startProductionServer } from './fx-http.ts';

// The operator API of rates: POST /admin/v1/rates (validation, client rates) and GET /admin/v1/rates (listing).

let server: TestServer;
let clock: ManualClock;

beforeAll(async () => {
  clock = new ManualClock(Date.UTC(2026, 2, 1, 12, 0, 0));
  server = await startProductionServer(clock);
});
afterAll(async () => {
  await server?.stop();
});

function post(body: unknown) {
  return server.admin('POST', '/admin/v1/rates', body);
}

async function count(): Promise<number> {
  const { rows } = await server.testDb.db.query<{ n: string }>('SELECT count(*) AS n FROM rates');
  return Number(rows[0]!.n);
}

describe('POST /admin/v1/rates', () => {
  it('201 with the Rate object: 12 decimals, quote VES, validFrom defaulting to now', async () => {
    const res = await post({ base: 'USD', rate: '36.5', expiresAt: later(clock, 10 * MIN) });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      status: 'success',
      traceId: expect.any(String),
      payload: {
        rateId: expect.stringMatching(/^rate_/),
        base: 'USD',
        quote: 'VES',
        rate: '36.500000000000',
        validFrom: clock.now().toISOString(),
        expiresAt: later(clock, 10 * MIN),
      },
    });
  });

  it('takes an explicit validFrom, any zone offset, and 12 decimals exactly', async () => {
    const res = await post({
      base: 'EUR',
      rate: '39.123456789012',
      validFrom: '2026-03-01T13:00:00+01:00',
      expiresAt: '2026-03-01T12:30:00.000Z',
    });
    expect(res.status).toBe(201);
    expect(res.body.payload).toMatchObject({
      rate: '39.123456789012',
      validFrom: '2026-03-01T12:00:00.000Z',
      expiresAt: '2026-03-01T12:30:00.000Z',
    });
  });

  it('a client rate: 201 for that client, and it wins over the general rate for it', async () => {
    const c = await server.newClient({ currency: 'USD' });
    await post({ base: 'USD', rate: '36.5', expiresAt: later(clock, 10 * MIN) });
    const own = await post({ base: 'USD', rate: '35.9', clientId: c.clientId, expiresAt: later(clock, 5 * MIN) });
    expect(own.status).toBe(201);
    expect((await c.api.get('/v2/rate')).body.payload.rateId).toBe(own.body.payload.rateId);
  });

  it('404 for an unknown client', async () => {
    const res = await post({ base: 'USD', rate: '36.5', clientId: 'cli_nobody', expiresAt: later(clock, MIN) });
    expectError(res, 404, 'unknown client cli_nobody');
  });

  it('400 for a client rate in a currency the client does not hold', async () => {
    const ves = await server.newClient({ currency: 'VES' });
    const res = await post({ base: 'USD', rate: '36.5', clientId: ves.clientId, expiresAt: later(clock, MIN) });
    expectError(res, 400, `client ${ves.clientId} holds VES, so a USD rate never applies to it`);
  });

  const valid: RateBody = { base: 'USD', rate: '36.5' };
  it.each<[string, Record<string, unknown>, string | RegExp]>([
    ['no body', {}, 'base is required'],
    ['base missing', { rate: '36.5' }, 'base is required'],
    ['rate missing', { base: 'USD' }, 'rate is required'],
    ['expiresAt missing', { ...valid, expiresAt: undefined }, 'expiresAt is required'],
    ['rate as a number', { ...valid, rate: 36.5 }, 'rate must be a string of decimal text'],
    ['base as a number', { ...valid, base: 840 }, 'base must be a string'],
    ['unknown field', { ...valid, valid_from: '2026-03-01T12:00:00Z' }, /^unknown field valid_from \(expected /],
    ['empty clientId', { ...valid, clientId: '' }, 'clientId must not be empty (omit it for the general rate)'],
    ['lower-case base', { ...valid, base: 'usd' }, 'base must be a 3-letter currency code'],
    ['VES base', { ...valid, base: 'VES' }, 'base must not be VES: the quote currency is VES'],
    ['unsupported base', { ...valid, base: 'XYZ' }, 'base XYZ is not a supported currency'],
    ['zero rate', { ...valid, rate: '0.000' }, 'rate must be greater than 0'],
    ['rate of exactly 1', { ...valid, rate: '1' }, 'rate must not be exactly 1: that is no conversion, not a price'],
    ['rate of 1 with decimals', { ...valid, rate: '1.000000000000' }, /must not be exactly 1/],
    ['negative rate', { ...valid, rate: '-36.5' }, /^rate must be plain decimal text/],
    ['exponent', { ...valid, rate: '3.65e1' }, /^rate must be plain decimal text/],
    ['13 decimals', { ...valid, rate: '36.5000000000001' }, 'rate has more than 12 decimals'],
    [
      'expiry without a zone',
      { ...valid, expiresAt: '2026-03-01T13:00:00' },
      'expiresAt must be an ISO 8601 timestamp with a time zone',
    ],
    [
      'impossible date',
      { ...valid, expiresAt: '2026-02-30T13:00:00Z' },
      'expiresAt must be an ISO 8601 timestamp with a time zone',
    ],
    ['bad validFrom', { ...valid, validFrom: 'tomorrow' }, 'validFrom must be an ISO 8601 timestamp with a time zone'],
    [
      'expiry in the past',
      { ...valid, validFrom: '2026-03-01T11:00:00Z', expiresAt: '2026-03-01T11:30:00Z' },
      'expiresAt must be in the future',
    ],
    [
      'expiry before validFrom',
      { ...valid, validFrom: '2026-03-01T14:00:00Z', expiresAt: '2026-03-01T13:00:00Z' },
      'expiresAt must be after validFrom',
    ],
  ])('400 %s, and nothing is stored', async (_name, body, message) => {
    const before = await count();
    const full = 'expiresAt' in body ? body : { ...body, expiresAt: later(clock, 10 * MIN) };
    expectError(await post(full), 400, message);
    expect(await count()).toBe(before);
  });

  it('a rate of 1 is refused even for a currency where 1 might look plausible', async () => {
    expectError(
      await post({ base: 'EUR', rate: '1.0', expiresAt: later(clock, MIN) }),
      400,
      'rate must not be exactly 1: that is no conversion, not a price',
    );
    expect((await post({ base: 'EUR', rate: '1.000000000001', expiresAt: later(clock, MIN) })).status).toBe(201);
  });

  it('401 without the bearer token', async () => {
    const res = await fetch(`${server.adminUrl}/admin/v1/rates`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ base: 'USD', rate: '36.5', expiresAt: later(clock, MIN) }),
    });
    expect(res.status).toBe(401);
  });
});

describe('GET /admin/v1/rates', () => {
  it('lists newest first with whose rate and where it came from, keyset-paged', async () => {
    const c = await server.newClient({ currency: 'JPY' });
    const ids: string[] = [];
    for (const rate of ['0.21', '0.22', '0.23', '0.24', '0.25']) {
      const res = await post({ base: 'JPY', rate, clientId: c.clientId, expiresAt: later(clock, MIN) });
      ids.push(res.body.payload.rateId);
    }
    const general = await post({ base: 'JPY', rate: '0.2', expiresAt: later(clock, MIN) });

    const first = await server.admin('GET', `/admin/v1/rates?clientId=${c.clientId}&limit=2`);
    expect(first.status).toBe(200);
    expect(first.body.payload.data.map((r: any) => r.rateId)).toEqual([ids[4], ids[3]]);
    expect(first.body.payload.data[0]).toEqual({
      rateId: ids[4],
      base: 'JPY',
      quote: 'VES',
      rate: '0.250000000000',
      validFrom: clock.now().toISOString(),
      expiresAt: later(clock, MIN),
      clientId: c.clientId,
      source: 'operator',
      createdAt: clock.now().toISOString(),
    });
    expect(first.body.payload).toMatchObject({ hasMore: true, nextCursor: ids[3] });

    const second = await server.admin('GET', `/admin/v1/rates?clientId=${c.clientId}&limit=2&cursor=${ids[3]}`);
    expect(second.body.payload.data.map((r: any) => r.rateId)).toEqual([ids[2], ids[1]]);
    const third = await server.admin('GET', `/admin/v1/rates?clientId=${c.clientId}&limit=2&cursor=${ids[1]}`);
    expect(third.body.payload).toEqual({
      data: [expect.objectContaining({ rateId: ids[0] })],
      hasMore: false,
      nextCursor: null,
    });

    const byBase = await server.admin('GET', '/admin/v1/rates?base=JPY');
    expect(byBase.body.payload.data.map((r: any) => r.rateId)).toEqual([general.body.payload.rateId, ...ids.reverse()]);
    expect(byBase.body.payload.data[0].clientId).toBeNull();
  });

  it('400 for a malformed limit, base or cursor; 404 for an unknown client', async () => {
    expectError(await server.admin('GET', '/admin/v1/rates?limit=0'), 400, 'limit must be a positive integer');
    expectError(await server.admin('GET', '/admin/v1/rates?limit=ten'), 400, 'limit must be a positive integer');
    expectError(await server.admin('GET', '/admin/v1/rates?base=usd'), 400, 'base must be a 3-letter currency code');
    expectError(
      await server.admin('GET', '/admin/v1/rates?cursor=rate_nope'),
      400,
      'cursor does not name a rate publication',
    );
    expectError(await server.admin('GET', '/admin/v1/rates?base=USD&base=EUR'), 400, 'base must be given once');
    expectError(await server.admin('GET', '/admin/v1/rates?clientId=cli_nobody'), 404, 'unknown client cli_nobody');
    expect((await server.admin('GET', '/admin/v1/rates?limit=5000')).status).toBe(200);
  });
});
