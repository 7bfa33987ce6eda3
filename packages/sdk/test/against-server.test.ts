import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testKeyPair } from '../../server/test/support/keys.ts';
import { startTestServer, type TestServer } from '../../server/test/support/test-server.ts';
import { createDispersaClient, type DispersaClient } from '../src/client.ts';
import {
  AuthenticationError,
  BusinessRuleError,
  ConflictError,
  InvalidRequestError,
  NotFoundError,
} from '../src/errors.ts';
import { createMemoryNonceGenerator } from '../src/nonce.ts';
import type { InlinePaymentParams, Payment, WebhookEvent } from '../src/types.ts';
import { createJwksCache, parseEvent } from '../src/webhooks.ts';

/** The SDK against the real service on loopback: every call signed, sent and judged by the server itself. */

let server: TestServer;

beforeAll(async () => {
  server = await startTestServer({ env: { DISPERSA_WEBHOOK_ALLOW_INSECURE: 'true' } });
});
afterAll(async () => {
  await server?.stop();
});

async function sdkClient(options: Parameters<TestServer['newClient']>[0] & { keyIndex?: number } = {}) {
  const keyIndex = options.keyIndex ?? 0;
  const created = await server.newClient({ ...options, keyIndex });
  const client = createDispersaClient({
    baseUrl: server.baseUrl,
    apiKey: created.apiKey,
    privateKey: testKeyPair(keyIndex).privateKey,
    backoff: { baseMs: 5, capMs: 20 },
  });
  return { ...created, client };
}

const PM: Omit<InlinePaymentParams, 'amountMinor'> = {
  currency: 'VES',
  rail: 'PM',
  beneficiary: '04141234567',
  bankCode: '0102',
  docType: 'V',
  docNumber: '12345678',
};

describe('identity and discovery', () => {
  it('reads the version unsigned and the identity signed', async () => {
    const { client } = await sdkClient();
    expect(await client.version()).toMatchObject({ apiVersion: 'v2', environment: 'sandbox', simulado: true });
    const me = await client.me();
    expect(me.limitsConfigured).toBe(true);
    expect(me.publicKeyFingerprint).toMatch(/^SHA256:/);
  });

  it('a signature by another key is an AuthenticationError', async () => {
    const { apiKey } = await sdkClient();
    const wrong = createDispersaClient({ baseUrl: server.baseUrl, apiKey, privateKey: testKeyPair(1).privateKey });
    await expect(wrong.me()).rejects.toBeInstanceOf(AuthenticationError);
  });

  it('a nonce below the mark is refused as a replay; the shared generator never goes there', async () => {
    const { client, apiKey } = await sdkClient();
    await client.me();
    const stale = createDispersaClient({
      baseUrl: server.baseUrl,
      apiKey,
      privateKey: testKeyPair(0).privateKey,
      // A generator whose clock reads the epoch: its nonces are tiny, far below what the service has seen.
      nonceGenerator: createMemoryNonceGenerator({ now: () => 0 }),
    });
    await expect(stale.payments.create({ ...PM, amountMinor: '100' })).rejects.toMatchObject({ status: 401 });
  });

  it('many reads in parallel fit the 64-wide window', async () => {
    const { client } = await sdkClient();
    const answers = await Promise.all(Array.from({ length: 40 }, () => client.balance()));
    expect(answers.every((b) => b.currency === 'VES')).toBe(true);
  });
});

describe('concurrency on one key', () => {
  it('8 payments created at once on one key, 5 rounds, with reads alongside: no error, every one completed', async () => {
    const { client } = await sdkClient({ fundMinor: 50_000_000n });
    for (let round = 0; round < 5; round++) {
      const writes = Array.from({ length: 8 }, (_, i) =>
        client.payments.create({ ...PM, amountMinor: `${round + 1}${i}00` }),
      );
      const reads = Array.from({ length: 8 }, () => client.balance());
      const settled = await Promise.allSettled([...writes, ...reads]);
      expect(settled.filter((r) => r.status === 'rejected')).toEqual([]);
    }
    const listed = await client.payments.list({ limit: 100 });
    expect(listed.data).toHaveLength(40);
    expect(listed.data.every((p) => p.state === 'completed')).toBe(true);
  });

  it('two clients built with one key in one process share its lane: 4 workers for 1.5 s, no error', async () => {
    const { apiKey, client: first } = await sdkClient({ fundMinor: 50_000_000n });
    const second = createDispersaClient({ baseUrl: server.baseUrl, apiKey, privateKey: testKeyPair(0).privateKey });
    const until = Date.now() + 1_500;
    const errors: unknown[] = [];
    let made = 0;
    const worker = async (client: DispersaClient) => {
      while (Date.now() < until) {
        await client.payments.create({ ...PM, amountMinor: '10000' }).then(
          () => made++,
          (e: unknown) => errors.push(e),
        );
      }
    };
    await Promise.all([worker(first), worker(second), worker(first), worker(second)]);
    expect(errors).toEqual([]);
    expect(made).toBeGreaterThan(4);
  });
});

describe('payments', () => {
  let client: DispersaClient;
  beforeAll(async () => {
    ({ client } = await sdkClient({ fundMinor: 50_000_000n }));
  });

  it('creates, replays by idempotency key, and refuses the key with other content', async () => {
    const payment = await client.payments.create({ ...PM, amountMinor: 150_000n }, { idempotencyKey: 'sdk-1' });
    expect(payment).toMatchObject({ state: 'completed', amountMinor: '150000', intentId: payment.id });
    const replay = await client.payments.create({ ...PM, amountMinor: '150000' }, { idempotencyKey: 'sdk-1' });
    expect(replay).toEqual(payment);
    const other = client.payments.create({ ...PM, amountMinor: '150001' }, { idempotencyKey: 'sdk-1' });
    await expect(other).rejects.toBeInstanceOf(ConflictError);
    expect(await client.payments.get(payment.intentId)).toEqual(payment);
  });

  it('a failed payment arrives in a 2xx answer; an invalid one is an InvalidRequestError', async () => {
    expect(await client.payments.create({ ...PM, amountMinor: '150001' })).toMatchObject({ state: 'failed' });
    const bad = client.payments.create({ ...PM, amountMinor: 'lots' });
    await expect(bad).rejects.toBeInstanceOf(InvalidRequestError);
    await expect(client.payments.create({ ...PM, amountMinor: 5 as unknown as string })).rejects.toThrow(TypeError);
  });

  it('a business-rule refusal is a BusinessRuleError with status 422', async () => {
    const { client: unlimited } = await sdkClient({ limits: null });
    const refused = unlimited.payments.create({ ...PM, amountMinor: '150000' });
    await expect(refused).rejects.toBeInstanceOf(BusinessRuleError);
    await expect(refused).rejects.toMatchObject({ status: 422 });
  });

  it('an unknown id is a NotFoundError', async () => {
    await expect(client.payments.get('pay_nope')).rejects.toBeInstanceOf(NotFoundError);
  });

  it('lists by pages and iterates every payment newest first', async () => {
    const { client: fresh } = await sdkClient({ fundMinor: 10_000_000n });
    const made: Payment[] = [];
    for (let i = 0; i < 5; i++) made.unshift(await fresh.payments.create({ ...PM, amountMinor: `${1000 + i}00` }));
    const page = await fresh.payments.list({ limit: 2 });
    expect(page.data.map((p) => p.intentId)).toEqual(made.slice(0, 2).map((p) => p.intentId));
    expect(page).toMatchObject({ hasMore: true, nextCursor: made[1]!.intentId });
    const all: string[] = [];
    for await (const p of fresh.payments.iterate({ limit: 2 })) all.push(p.intentId);
    expect(all).toEqual(made.map((p) => p.intentId));
    const completed = await fresh.payments.list({ status: 'completed' });
    expect(completed.data.length).toBe(5);
  });
});

describe('beneficiaries', () => {
  it('create, get, update, list, iterate, archive', async () => {
    const { client } = await sdkClient({ fundMinor: 1_000_000n });
    const params = { rail: 'PM', account: '04140000001', bankCode: '0102', docType: 'V', docNumber: '1' } as const;
    const b = await client.beneficiaries.create({ ...params, alias: 'one' });
    expect(b).toMatchObject({ status: 'ACTIVE', alias: 'one', bankCode: '0102' });
    await expect(client.beneficiaries.create({ ...params, alias: 'dup' })).rejects.toBeInstanceOf(ConflictError);
    expect(await client.beneficiaries.update(b.id, { alias: 'uno' })).toMatchObject({ alias: 'uno' });
    expect((await client.beneficiaries.get(b.id)).alias).toBe('uno');
    const second = await client.beneficiaries.create({ ...params, account: '04140000002', alias: 'two' });
    expect((await client.beneficiaries.list({ limit: 1 })).data.map((x) => x.id)).toEqual([second.id]);
    const ids: string[] = [];
    for await (const x of client.beneficiaries.iterate({ limit: 1 })) ids.push(x.id);
    expect(ids).toEqual([second.id, b.id]);
    const paid = await client.payments.create({ amountMinor: '10000', currency: 'VES', beneficiaryId: b.id });
    expect(paid.state).toBe('completed');
    expect(await client.beneficiaries.archive(b.id)).toMatchObject({ id: b.id, status: 'INACTIVE' });
    await expect(client.beneficiaries.update(b.id, { alias: 'x' })).rejects.toBeInstanceOf(NotFoundError);
  });
});

describe('rates and quotes', () => {
  it('reads the rate and pays with a quote from a USD balance', async () => {
    const { client, clientId } = await sdkClient({ currency: 'USD', fundMinor: 100_000n });
    const expiresAt = new Date(Date.now() + 600_000).toISOString();
    // A rate for this client alone, so the sandbox's own USD rate publisher cannot change the numbers.
    const published = await server.admin('POST', '/admin/v1/rates', { base: 'USD', rate: '50', expiresAt, clientId });
    expect(published.status).toBe(201);
    expect(await client.rate()).toMatchObject({ base: 'USD', quote: 'VES', rate: '50.000000000000' });
    const quote = await client.quotes.create({ amountType: 'SOURCE', amountMinor: 1000n });
    expect(quote).toMatchObject({ sourceAmountMinor: '1000', targetAmountMinor: '50000', targetCurrency: 'VES' });
    const paid = await client.payments.create({ ...PM, amountMinor: quote.targetAmountMinor, quoteId: quote.quoteId });
    expect(paid.state).toBe('completed');
    expect(await client.balance()).toEqual({ currency: 'USD', availableMinor: '99000' });
    const reused = client.payments.create({ ...PM, amountMinor: quote.targetAmountMinor, quoteId: quote.quoteId });
    await expect(reused).rejects.toBeInstanceOf(ConflictError);
  });
});

describe('webhooks', () => {
  let receiver: Server;
  afterAll(async () => {
    await new Promise((resolve) => receiver?.close(resolve));
  });

  it('registers a receiver that verifies with the SDK, and gets the test event', async () => {
    const { client } = await sdkClient();
    const keys = createJwksCache(() => client.webhook.keys());
    const received: WebhookEvent[] = [];
    receiver = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', async () => {
        const raw = Buffer.concat(chunks);
        try {
          await keys.verify(raw, String(req.headers['x-dispersa-signature'] ?? ''));
        } catch {
          res.writeHead(400).end();
          return;
        }
        const event = parseEvent(raw);
        received.push(event);
        const answer = event.type === 'webhook.verification' ? { challenge: event.data.challenge } : {};
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(answer));
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;

    expect(await client.webhook.set(url)).toMatchObject({ webhookUrl: url, changed: true });
    expect(await client.webhook.get()).toMatchObject({ webhookUrl: url, pendingChange: null });
    expect(await client.webhook.test()).toEqual({ webhookUrl: url, sent: true });
    for (let i = 0; i < 100 && !received.some((e) => e.test); i++) await new Promise((r) => setTimeout(r, 50));
    expect(received.map((e) => e.type)).toEqual(['webhook.verification', 'payment.state_changed']);
    expect(received[1]).toMatchObject({ test: true, data: { payment: { state: expect.any(String) } } });
  });
});
