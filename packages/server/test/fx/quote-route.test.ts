import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/shared/clock.ts';
import type { TestClient, TestServer } from '../support/test-server.ts';
import { expectError, later, MIN, publishRate, quote, startProductionServer } from './fx-http.ts';

// POST /v2/quotes over real HTTP: every status with its exact text, replays, rounding, expiry.

const TTL_SECONDS = 60;
let server: TestServer;
let clock: ManualClock;
let usd: TestClient;
let keySeq = 0;
const newKey = (): string => `quote-key-${++keySeq}`;

beforeAll(async () => {
  clock = new ManualClock(Date.UTC(2026, 2, 1, 12, 0, 0));
  server = await startProductionServer(clock, { DISPERSA_QUOTE_TTL_SECONDS: String(TTL_SECONDS) });
});
afterAll(async () => {
  await server?.stop();
});
beforeEach(async () => {
  // A fresh client per test keeps every test far from the per-client ceiling (default 20).
  usd = await server.newClient({ currency: 'USD' });
});

describe('POST /v2/quotes: created and replayed', () => {
  it('201 for a SOURCE quote: the source is kept, the target computed; status word ok', async () => {
    const rate = await publishRate(server, clock, { rate: '36.5' });
    const res = await quote(usd.api, newKey(), { amountType: 'SOURCE', amountMinor: '10000' });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      status: 'ok',
      traceId: expect.any(String),
      payload: {
        quoteId: expect.stringMatching(/^quote_/),
        amountType: 'SOURCE',
        sourceCurrency: 'USD',
        sourceAmountMinor: '10000',
        targetCurrency: 'VES',
        targetAmountMinor: '365000',
        rateId: rate['rateId'],
        expiresAt: later(clock, TTL_SECONDS * 1000),
      },
    });
  });

  it('rounds the computed side in favour of the service: target down for SOURCE, source up for TARGET', async () => {
    const scaled = 36_123_456_789_012n; // 36.123456789012
    await publishRate(server, clock, { rate: '36.123456789012' });
    const bySource = (await quote(usd.api, newKey(), { amountType: 'SOURCE', amountMinor: '333' })).body.payload;
    // Exact target 12029.1111..., so 12029 (down).
    expect((333n * scaled) / 10n ** 12n).toBe(12029n);
    expect(bySource).toMatchObject({ sourceAmountMinor: '333', targetAmountMinor: '12029' });

    const byTarget = (await quote(usd.api, newKey(), { amountType: 'TARGET', amountMinor: '12030' })).body.payload;
    // Exact source 333.027..., so 334 (up): 333 would buy less than the target.
    expect(byTarget).toMatchObject({ amountType: 'TARGET', sourceAmountMinor: '334', targetAmountMinor: '12030' });
    expect((333n * scaled) / 10n ** 12n < 12030n).toBe(true);
    expect((334n * scaled) / 10n ** 12n >= 12030n).toBe(true);
  });

  it('200 with the same quote for the same key and body, even after the rate and the quote expired', async () => {
    await publishRate(server, clock, { rate: '36.5', expiresAt: later(clock, MIN) });
    const key = newKey();
    const body = { amountType: 'TARGET', amountMinor: '150000' };
    const first = await quote(usd.api, key, body);
    expect(first.status).toBe(201);
    const again = await quote(usd.api, key, body);
    expect(again.status).toBe(200);
    expect(again.body.status).toBe('ok');
    expect(again.body.payload).toEqual(first.body.payload);

    // Past every USD rate published so far (an hour at most) and past the quote's own expiry.
    clock.advance(2 * 60 * MIN);
    const late = await quote(usd.api, key, body);
    expect(late.status).toBe(200);
    expect(late.body.payload).toEqual(first.body.payload);
    // A new key at this moment has no rate to price with.
    expectError(await quote(usd.api, newKey(), body), 503, 'no rate in force for USD/VES');
  });

  it('a client-specific rate prices that client only', async () => {
    const general = await publishRate(server, clock, { rate: '36.5' });
    const own = await publishRate(server, clock, { rate: '30', clientId: usd.clientId });
    const other = await server.newClient({ currency: 'USD' });
    const body = { amountType: 'SOURCE', amountMinor: '100' };
    expect((await quote(usd.api, newKey(), body)).body.payload).toMatchObject({
      rateId: own['rateId'],
      targetAmountMinor: '3000',
    });
    expect((await quote(other.api, newKey(), body)).body.payload).toMatchObject({
      rateId: general['rateId'],
      targetAmountMinor: '3650',
    });
  });
});

describe('POST /v2/quotes: refusals', () => {
  beforeEach(async () => {
    await publishRate(server, clock, { rate: '36.5' });
  });

  it('409 when the key was used with other content; the original stays as it was', async () => {
    const key = newKey();
    const first = await quote(usd.api, key, { amountType: 'SOURCE', amountMinor: '10000' });
    expect(first.status).toBe(201);
    expectError(
      await quote(usd.api, key, { amountType: 'SOURCE', amountMinor: '10001' }),
      409,
      'idempotency-key already used with different content',
    );
    expectError(
      await quote(usd.api, key, { amountType: 'TARGET', amountMinor: '10000' }),
      409,
      'idempotency-key already used with different content',
    );
    expect((await quote(usd.api, key, { amountType: 'SOURCE', amountMinor: '10000' })).body.payload).toEqual(
      first.body.payload,
    );
  });

  it('400 without an idempotency-key header, or with an empty or overlong one', async () => {
    const body = { amountType: 'SOURCE', amountMinor: '10000' };
    expectError(await quote(usd.api, undefined, body), 400, 'idempotency-key header is required');
    expectError(await quote(usd.api, '', body), 400, 'idempotency-key header is required');
    expectError(await quote(usd.api, 'k'.repeat(256), body), 400, 'idempotency-key must be at most 255 characters');
    expect((await quote(usd.api, 'k'.repeat(255), body)).status).toBe(201);
  });

  it.each<[string, unknown, string]>([
    ['amountType missing', { amountMinor: '10000' }, 'amountType is required'],
    ['amountType unknown', { amountType: 'BOTH', amountMinor: '10000' }, 'amountType must be SOURCE or TARGET'],
    ['amountType lower-case', { amountType: 'source', amountMinor: '10000' }, 'amountType must be SOURCE or TARGET'],
    ['amountMinor missing', { amountType: 'SOURCE' }, 'amountMinor is required'],
    [
      'amountMinor as a number',
      { amountType: 'SOURCE', amountMinor: 10000 },
      'amountMinor must be a positive integer of minor units as text, not a number',
    ],
    [
      'amountMinor zero',
      { amountType: 'SOURCE', amountMinor: '0' },
      'amountMinor must be a positive integer of minor units as text',
    ],
    [
      'amountMinor negative',
      { amountType: 'SOURCE', amountMinor: '-5' },
      'amountMinor must be a positive integer of minor units as text',
    ],
    [
      'amountMinor decimal',
      { amountType: 'SOURCE', amountMinor: '10.5' },
      'amountMinor must be a positive integer of minor units as text',
    ],
    [
      'amountMinor leading zero',
      { amountType: 'SOURCE', amountMinor: '0100' },
      'amountMinor must be a positive integer of minor units as text',
    ],
    [
      'amountMinor empty',
      { amountType: 'SOURCE', amountMinor: '' },
      'amountMinor must be a positive integer of minor units as text',
    ],
    [
      'amountMinor beyond int8',
      { amountType: 'SOURCE', amountMinor: '9223372036854775808' },
      'amountMinor must be at most 9223372036854775807',
    ],
    [
      'TARGET below the minimum',
      { amountType: 'TARGET', amountMinor: '99' },
      'target amount 99 is below the minimum of 100 (VES minor units)',
    ],
    [
      'SOURCE buying less than the minimum',
      { amountType: 'SOURCE', amountMinor: '2' },
      'target amount 73 is below the minimum of 100 (VES minor units)',
    ],
    [
      'SOURCE converting beyond int8',
      { amountType: 'SOURCE', amountMinor: '9223372036854775807' },
      'amountMinor too large: the converted amount exceeds 9223372036854775807',
    ],
  ])('400 %s', async (_name, body, message) => {
    const key = newKey();
    expectError(await quote(usd.api, key, body), 400, message);
    // A 400 creates nothing: the same key then works for a valid request.
    expect((await quote(usd.api, key, { amountType: 'TARGET', amountMinor: '100' })).status).toBe(201);
  });

  it('400 for a body that is not a JSON object', async () => {
    expectError(
      await usd.api.request('POST', '/v2/quotes', { rawBody: '[]', idempotencyKey: newKey() }),
      400,
      'body must be object',
    );
    expectError(
      await usd.api.request('POST', '/v2/quotes', {
        rawBody: '{"amountType":"SOURCE","amountMinor":"10000"}',
        idempotencyKey: newKey(),
        contentType: 'text/plain',
      }),
      400,
      'body must be object',
    );
  });

  it('authentication is decided before the body is judged', async () => {
    const res = await usd.api.request('POST', '/v2/quotes', {
      body: { amountType: 'NOPE' },
      idempotencyKey: newKey(),
      signature: 'AAAA',
    });
    expectError(res, 401, 'bad signature');
  });

  it('404 for a VES balance, with the exact text', async () => {
    const ves = await server.newClient({ currency: 'VES' });
    expectError(
      await quote(ves.api, newKey(), { amountType: 'TARGET', amountMinor: '150000' }),
      404,
      'no rate applies: your wallet is already in VES',
    );
  });

  it('503 naming the real pair when no rate is in force', async () => {
    const eur = await server.newClient({ currency: 'EUR' });
    expectError(
      await quote(eur.api, newKey(), { amountType: 'SOURCE', amountMinor: '10000' }),
      503,
      'no rate in force for EUR/VES',
    );
  });
});

describe('OpenAPI', () => {
  it('documents both routes, the quote body and the required idempotency-key', async () => {
    const doc: any = await (await fetch(`${server.baseUrl}/v2/openapi.json`)).json();
    const rate = doc.paths['/v2/rate'].get;
    expect(Object.keys(rate.responses).sort()).toEqual(['200', '400', '401', '404', '415', '500', '503']);
    const post = doc.paths['/v2/quotes'].post;
    const key = post.parameters.find((p: any) => p.name === 'idempotency-key');
    expect(key).toMatchObject({ in: 'header', required: true });
    const schema = post.requestBody.content['application/json'].schema;
    expect(schema.required.sort()).toEqual(['amountMinor', 'amountType']);
    expect(schema.properties.amountType.enum).toEqual(['SOURCE', 'TARGET']);
    expect(schema.properties.amountMinor.type).toBe('string');
    expect(Object.keys(post.responses).sort()).toEqual([
      '200',
      '201',
      '400',
      '401',
      '404',
      '409',
      '413',
      '415',
      '500',
      '503',
    ]);
  });
});
