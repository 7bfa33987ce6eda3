import { setTimeout as delay } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { createDispersaClient } from '../src/client.ts';
import { createMemoryNonceGenerator } from '../src/nonce.ts';
import { fail, ok, startFakeServer } from './support/fake-server.ts';
import { API_KEY, keys, setup } from './support/harness.ts';

const payment = {
  intentId: 'pay_1',
  id: 'pay_1',
  state: 'completed',
  subStatus: null,
  amountMinor: '150000',
  currency: 'VES',
  rail: 'PM',
  beneficiary: '04141234567',
  createdAt: '2026-01-01T00:00:00.000Z',
};

describe('client requests against a real HTTP server', () => {
  it('signs reads with an empty idempotency slot, no body and no content-type, and unwraps the payload', async () => {
    const { server, client } = await setup((req) =>
      req.url === '/v2/balance' ? ok({ currency: 'VES', availableMinor: '500000' }) : ok({ keyType: 'secret' }),
    );
    expect(await client.balance()).toEqual({ currency: 'VES', availableMinor: '500000' });
    expect(await client.me()).toEqual({ keyType: 'secret' });
    expect(server.requests.map((r) => r.verdict)).toEqual(['accepted', 'accepted']);
    for (const req of server.requests) {
      expect(req.method).toBe('GET');
      expect(req.body.length).toBe(0);
      expect(req.headers['content-type']).toBeUndefined();
      expect(req.headers['idempotency-key']).toBeUndefined();
      expect(req.headers['x-api-key']).toBe(API_KEY);
      expect(req.headers['x-nonce']).toMatch(/^[1-9][0-9]{0,37}$/);
    }
  });

  it('sends GET /v2/version without key, nonce or signature', async () => {
    const version = { version: '0.1.0', apiVersion: 'v2', environment: 'sandbox', rails: ['PM'], links: {} };
    const { server, client } = await setup(() => ok(version));
    expect(await client.version()).toEqual(version);
    const [req] = server.requests;
    expect(req?.verdict).toBeNull();
    expect(req?.headers['x-api-key']).toBeUndefined();
    expect(req?.headers['x-signature']).toBeUndefined();
  });

  it('creates a payment: body serialised once with amounts as text, signed with the idempotency-key', async () => {
    const { server, client } = await setup(() => ok(payment, 201));
    const created = await client.payments.create(
      {
        amountMinor: 150000n,
        currency: 'VES',
        rail: 'PM',
        beneficiary: '04141234567',
        bankCode: '0102',
        docType: 'V',
        docNumber: '12345678',
      },
      { idempotencyKey: 'order-77' },
    );
    expect(created).toEqual(payment);
    const [req] = server.requests;
    expect(req?.verdict).toBe('accepted');
    expect(req?.url).toBe('/v2/payments');
    expect(req?.headers['idempotency-key']).toBe('order-77');
    expect(req?.headers['content-type']).toBe('application/json');
    const sent = JSON.parse(req?.body.toString('utf8') ?? '');
    expect(sent.amountMinor).toBe('150000');
    expect(sent).toMatchObject({ currency: 'VES', rail: 'PM', bankCode: '0102', docType: 'V' });
  });

  it('makes up a UUID idempotency-key per operation when none is given', async () => {
    const quote = { quoteId: 'q1', amountType: 'SOURCE' };
    const { server, client } = await setup(() => ok(quote, 201));
    await client.quotes.create({ amountType: 'SOURCE', amountMinor: '1000' });
    await client.quotes.create({ amountType: 'SOURCE', amountMinor: '1000' });
    const [a, b] = server.requests.map((r) => r.headers['idempotency-key']);
    expect(a).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(b).not.toBe(a);
    expect(server.requests.every((r) => r.verdict === 'accepted')).toBe(true);
  });

  it('refuses amounts given as JS numbers before anything is sent', async () => {
    const { server, client } = await setup(() => ok(payment));
    const params = { amountMinor: 1500 as unknown as string, currency: 'VES', beneficiaryId: 'b1' };
    await expect(client.payments.create(params)).rejects.toThrow(/decimal text or a bigint/);
    expect(server.requests).toHaveLength(0);
  });

  it('covers the body routes: content-type only when a body is sent, all signatures verify', async () => {
    const { server, client } = await setup((req) => ok({ route: `${req.method} ${req.url}` }));
    await client.beneficiaries.create({
      rail: 'CCE',
      account: '01020000000000000001',
      bankCode: '0102',
      docType: 'J',
      docNumber: '123456789',
      beneficiaryName: 'Comercial Ávila CA',
      alias: 'proveedor',
    });
    await client.beneficiaries.update('ben_1', { alias: 'nuevo' });
    await client.beneficiaries.archive('ben_1');
    await client.webhook.set('https://example.test/hook');
    await client.webhook.test();
    await client.webhook.get();
    await client.webhook.keys();
    const seen = server.requests.map((r) => [r.method, r.url, r.headers['content-type'] ?? null, r.body.length > 0]);
    expect(seen).toEqual([
      ['POST', '/v2/beneficiaries', 'application/json', true],
      ['PATCH', '/v2/beneficiaries/ben_1', 'application/json', true],
      ['DELETE', '/v2/beneficiaries/ben_1', null, false],
      ['PUT', '/v2/webhook', 'application/json', true],
      ['POST', '/v2/webhook/test', null, false],
      ['GET', '/v2/webhook', null, false],
      ['GET', '/v2/webhook/keys', null, false],
    ]);
    // The key set is public and fetched unsigned (it must not wait in the key's lane, see client.ts).
    expect(server.requests.map((r) => r.verdict)).toEqual([...Array(6).fill('accepted'), null]);
    expect(server.requests[6]?.headers['x-signature']).toBeUndefined();
    expect(server.requests.every((r) => r.headers['idempotency-key'] === undefined)).toBe(true);
    expect(JSON.parse(server.requests[3]?.body.toString() ?? '')).toEqual({
      webhookUrl: 'https://example.test/hook',
    });
    expect(JSON.parse(server.requests[1]?.body.toString() ?? '')).toEqual({ alias: 'nuevo' });
  });

  it('encodes ids in paths and signs the encoded target as sent', async () => {
    const { server, client } = await setup(() => ok(payment));
    await client.payments.get('pay/1 ?x=%');
    await client.beneficiaries.get('ñ#1');
    expect(server.requests.map((r) => r.url)).toEqual([
      '/v2/payments/pay%2F1%20%3Fx%3D%25',
      '/v2/beneficiaries/%C3%B1%231',
    ]);
    expect(server.requests.every((r) => r.verdict === 'accepted')).toBe(true);
    await expect(client.payments.get('..')).rejects.toThrow(/not a usable id/);
    await expect(client.payments.get('')).rejects.toThrow(/not a usable id/);
    expect(server.requests).toHaveLength(2);
  });

  it('signs the query string exactly as sent, and sends no "?" without parameters', async () => {
    const { server, client } = await setup(() => ok({ data: [], hasMore: false, nextCursor: null }));
    await client.payments.list({ status: 'completed', limit: 2, cursor: 'pay_9&x=1' });
    await client.payments.list();
    await client.beneficiaries.list({ limit: 5 });
    expect(server.requests.map((r) => r.url)).toEqual([
      '/v2/payments?status=completed&limit=2&cursor=pay_9%26x%3D1',
      '/v2/payments',
      '/v2/beneficiaries?limit=5',
    ]);
    expect(server.requests.every((r) => r.verdict === 'accepted')).toBe(true);
  });

  it('keeps a base URL path prefix in the signed request-target', async () => {
    const server = await startFakeServer({
      apiKey: API_KEY,
      publicKey: keys.publicKey,
      handler: () => ok({}),
    });
    try {
      const client = createDispersaClient({
        baseUrl: `${server.url}/dispersa/`,
        apiKey: API_KEY,
        privateKey: keys.privateKey,
        nonceGenerator: createMemoryNonceGenerator(),
      });
      await client.me();
      await client.payments.create({ amountMinor: '100', currency: 'VES', beneficiaryId: 'b1' });
      expect(server.requests.map((r) => [r.url, r.verdict])).toEqual([
        ['/dispersa/v2/me', 'accepted'],
        ['/dispersa/v2/payments', 'accepted'],
      ]);
      expect(server.requests[1]?.headers['idempotency-key']).toBeDefined();
    } finally {
      await server.close();
    }
  });

  it('lets overlapping reads through the server nonce window even when they arrive reversed', async () => {
    const server = await startFakeServer({
      apiKey: API_KEY,
      publicKey: keys.publicKey,
      handler: () => ok({ currency: 'VES', availableMinor: '1' }),
      reverseFirst: 20,
    });
    try {
      const client = createDispersaClient({
        baseUrl: server.url,
        apiKey: API_KEY,
        privateKey: keys.privateKey,
      });
      // Launched a couple of milliseconds apart, as concurrent workers would: still within the window.
      const pending: Array<Promise<unknown>> = [];
      for (let i = 0; i < 20; i++) {
        pending.push(client.balance());
        await delay(2);
      }
      await Promise.all(pending);
      expect(server.requests.map((r) => r.verdict)).toEqual(Array(20).fill('accepted'));
      const nonces = server.requests.map((r) => BigInt(String(r.headers['x-nonce'])));
      expect((nonces[0] ?? 0n) > (nonces[19] ?? 0n)).toBe(true);
    } finally {
      await server.close();
    }
  });

  it('maps the server refusing a wrong signature to AuthenticationError, without retrying', async () => {
    const other = (await import('./support/keys.ts')).rsaKeyPair();
    const { server, client } = await setup(() => ok({}), { privateKey: other.privateKey });
    await expect(client.me()).rejects.toMatchObject({
      name: 'AuthenticationError',
      status: 401,
      message: 'bad signature',
    });
    expect(server.requests).toHaveLength(1);
  });

  it('passes the trace id header into errors', async () => {
    const { client } = await setup(() => fail(404, 'payment not found'));
    await expect(client.payments.get('nope')).rejects.toMatchObject({ status: 404, traceId: 'trace-404' });
  });
});
