import { compactVerify, createRemoteJWKSet } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomId } from '../../src/shared/ids.ts';
import { startTestServer, type TestClient, type TestServer } from '../support/test-server.ts';
import { echoChallenge, eventOf, eventStatus, fetchJwks, insertPaymentEvent, waitFor } from './e2e.ts';
import { type ReceivedRequest, type Receiver, type ReceiverHandler, startReceiver } from './helpers.ts';
import { verifyBothWays, verifyWithNodeCrypto } from './independent-verifier.ts';

/**
 * Delivery from the outbox over real HTTP, with the worker running inside the service: the test event,
 * retries, dead letters and redelivery, per-payment order, key rotation, the JWKS route and the operator's
 * delivery log. Payment events are outbox rows written here in the documented shape.
 */

const MAX_ATTEMPTS = 3;
let server: TestServer;
let receiver: Receiver;
let client: TestClient;
let handler: ReceiverHandler = echoChallenge;

beforeAll(async () => {
  server = await startTestServer({
    env: {
      DISPERSA_WEBHOOK_ALLOW_INSECURE: 'true',
      DISPERSA_WEBHOOK_RETRY_BASE_MS: '30',
      DISPERSA_WEBHOOK_MAX_ATTEMPTS: String(MAX_ATTEMPTS),
    },
  });
  receiver = await startReceiver((req, res) => handler(req, res));
  client = await server.newClient();
  const put = await client.api.request('PUT', '/v2/webhook', { body: { webhookUrl: receiver.url } });
  expect(put.body.payload.changed).toBe(true);
});
afterAll(async () => {
  await server.stop();
  await receiver.close();
});

const db = () => server.testDb.db;

function deliveriesOf(eventId: string): ReceivedRequest[] {
  return receiver.requests.filter((r) => r.headers['x-dispersa-event-id'] === eventId);
}

function ack(_req: ReceivedRequest, res: import('node:http').ServerResponse): void {
  res.writeHead(200).end();
}

describe('POST /v2/webhook/test', () => {
  it('queues a test event: type payment.state_changed, test true, a synthetic Payment, signed and delivered', async () => {
    handler = ack;
    const res = await client.api.request('POST', '/v2/webhook/test');
    expect(res.status).toBe(200);
    expect(res.body.payload).toEqual({ webhookUrl: receiver.url, sent: true });

    const req = await waitFor(
      () => receiver.requests.find((r) => eventOf(r).test === true),
      'the test event to arrive',
    );
    const event = eventOf(req);
    expect(event).toEqual({
      id: expect.stringMatching(/^evt_/),
      type: 'payment.state_changed',
      test: true,
      createdAt: expect.any(String),
      data: {
        payment: {
          intentId: expect.stringMatching(/^pay_/),
          id: event.data.payment.intentId,
          state: 'completed',
          subStatus: null,
          amountMinor: expect.stringMatching(/^[1-9][0-9]*$/),
          currency: 'VES',
          rail: 'PM',
          beneficiary: expect.any(String),
          createdAt: expect.any(String),
          updatedAt: expect.any(String),
          failureCode: null,
        },
        previousState: 'processing',
      },
    });
    expect(req.headers['x-dispersa-event-id']).toBe(event.id);
    expect(req.headers['x-dispersa-delivery-attempt']).toBe('1');
    expect(
      await verifyBothWays(req.body, String(req.headers['x-dispersa-signature']), await fetchJwks(server.baseUrl)),
    ).not.toBeNull();

    await waitFor(async () => (await eventStatus(db(), event.id)).delivery_status === 'delivered', 'delivered');
    const log = await server.admin('GET', `/admin/v1/webhooks/deliveries?clientId=${client.clientId}&limit=5`);
    expect(log.status).toBe(200);
    expect(log.body.payload.data[0]).toEqual({
      id: expect.any(String),
      eventId: event.id,
      clientId: client.clientId,
      url: receiver.url,
      attempt: 1,
      statusCode: 200,
      error: null,
      durationMs: expect.any(Number),
      attemptedAt: expect.any(String),
    });
  });
});

describe('delivery of payment events', () => {
  it('retries a failing receiver with the same event id and increasing attempt numbers, every attempt signed', async () => {
    const failures = new Map<string, number>();
    handler = (req, res) => {
      const id = String(req.headers['x-dispersa-event-id']);
      const n = failures.get(id) ?? 0;
      failures.set(id, n + 1);
      if (n < 2) res.writeHead(500).end('later');
      else res.writeHead(200).end();
    };
    const e = await insertPaymentEvent(db(), {
      clientId: client.clientId,
      paymentId: randomId('pay'),
      state: 'completed',
      previousState: 'processing',
    });
    await waitFor(async () => (await eventStatus(db(), e.id)).delivery_status === 'delivered', 'delivery');
    const got = deliveriesOf(e.id);
    expect(got.map((r) => r.headers['x-dispersa-delivery-attempt'])).toEqual(['1', '2', '3']);
    const jwks = await fetchJwks(server.baseUrl);
    for (const r of got) {
      expect(r.body.toString('utf8')).toBe(e.body);
      expect(await verifyBothWays(r.body, String(r.headers['x-dispersa-signature']), jwks)).not.toBeNull();
    }
    const log = await server.admin('GET', `/admin/v1/webhooks/deliveries?clientId=${client.clientId}&limit=100`);
    const mine = log.body.payload.data.filter((a: any) => a.eventId === e.id);
    expect(mine.map((a: any) => [a.attempt, a.statusCode, a.error])).toEqual([
      [3, 200, null],
      [2, 500, 'HTTP 500'],
      [1, 500, 'HTTP 500'],
    ]);
  });

  it('dead-letters after DISPERSA_WEBHOOK_MAX_ATTEMPTS; the operator redelivers it (404 unknown, 409 not dead)', async () => {
    handler = (_req, res) => res.writeHead(503).end();
    const e = await insertPaymentEvent(db(), {
      clientId: client.clientId,
      paymentId: randomId('pay'),
      state: 'failed',
      previousState: 'processing',
    });
    await waitFor(async () => (await eventStatus(db(), e.id)).delivery_status === 'dead', 'dead letter');
    expect(await eventStatus(db(), e.id)).toEqual({ delivery_status: 'dead', attempts: MAX_ATTEMPTS });
    await new Promise((r) => setTimeout(r, 200));
    expect(deliveriesOf(e.id)).toHaveLength(MAX_ATTEMPTS);

    expect(await server.admin('POST', `/admin/v1/webhooks/events/${randomId('evt')}/redeliver`)).toMatchObject({
      status: 404,
      body: { error: expect.any(String) },
    });
    handler = ack;
    const redeliver = await server.admin('POST', `/admin/v1/webhooks/events/${e.id}/redeliver`);
    expect(redeliver.status).toBe(200);
    expect(redeliver.body.payload).toEqual({ eventId: e.id, deliveryStatus: 'pending' });
    await waitFor(async () => (await eventStatus(db(), e.id)).delivery_status === 'delivered', 'redelivery');
    expect(deliveriesOf(e.id).map((r) => r.headers['x-dispersa-delivery-attempt'])).toEqual(['1', '2', '3', '4']);
    expect(await server.admin('POST', `/admin/v1/webhooks/events/${e.id}/redeliver`)).toMatchObject({
      status: 409,
      body: { error: expect.any(String) },
    });
  });

  it('delivers the events of each payment in the order of its transitions, even with failures in between', async () => {
    let n = 0;
    const acknowledged: string[] = [];
    const ackedAt = new Map<string, number>();
    handler = (req, res) => {
      // Every other first attempt fails (below the dead-letter limit), so retries interleave.
      if (req.headers['x-dispersa-delivery-attempt'] === '1' && ++n % 2 === 0) return void res.writeHead(500).end();
      acknowledged.push(String(req.headers['x-dispersa-event-id']));
      ackedAt.set(String(req.headers['x-dispersa-event-id']), receiver.requests.length - 1);
      res.writeHead(200).end();
    };
    const order = new Map<string, string[]>();
    const states = ['processing', 'unknown', 'completed'];
    const payments = Array.from({ length: 6 }, () => randomId('pay'));
    // One transaction: every event is due at once, so the worker sees later transitions while earlier
    // ones of the same payment are still waiting for their retry.
    await db().tx(async (q) => {
      for (let i = 0; i < states.length; i++) {
        for (const p of payments) {
          const e = await insertPaymentEvent(q, {
            clientId: client.clientId,
            paymentId: p,
            state: states[i]!,
            previousState: i === 0 ? 'pending' : states[i - 1]!,
          });
          order.set(p, [...(order.get(p) ?? []), e.id]);
        }
      }
    });
    const all = [...order.values()].flat();
    expect(all).toHaveLength(18);
    await waitFor(async () => {
      for (const id of all) if ((await eventStatus(db(), id)).delivery_status !== 'delivered') return false;
      return true;
    }, 'every event delivered');
    for (const ids of order.values()) {
      expect(acknowledged.filter((id) => ids.includes(id))).toEqual(ids);
      // Nothing of a payment was even attempted before its previous event was acknowledged.
      const firstTry = ids.map((id) => receiver.requests.findIndex((r) => r.headers['x-dispersa-event-id'] === id));
      for (let i = 1; i < ids.length; i++) expect(firstTry[i]!).toBeGreaterThan(ackedAt.get(ids[i - 1]!)!);
    }
  });

  it('marks the events of a client without a webhook no_webhook and sends nothing', async () => {
    const silent = await server.newClient();
    expect((await silent.api.request('POST', '/v2/webhook/test')).body.payload).toEqual({
      webhookUrl: null,
      sent: false,
    });
    const e = await insertPaymentEvent(db(), {
      clientId: silent.clientId,
      paymentId: randomId('pay'),
      state: 'completed',
      previousState: 'processing',
    });
    await waitFor(async () => (await eventStatus(db(), e.id)).delivery_status === 'no_webhook', 'no_webhook');
    expect(deliveriesOf(e.id)).toHaveLength(0);
  });
});

describe('signing keys', () => {
  it('GET /v2/webhook/keys is public, a bare JWKS with a cache lifetime, and also answers a signed request', async () => {
    const res = await fetch(`${server.baseUrl}/v2/webhook/keys`);
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toMatch(/max-age=\d+/);
    const body: any = await res.json();
    expect(Object.keys(body)).toEqual(['keys']);
    expect(body.keys.length).toBeGreaterThanOrEqual(1);
    for (const k of body.keys) {
      expect(k).toEqual({
        kty: 'RSA',
        use: 'sig',
        alg: 'RS256',
        kid: expect.any(String),
        n: expect.any(String),
        e: 'AQAB',
      });
    }
    const signed = await client.api.get('/v2/webhook/keys');
    expect(signed.status).toBe(200);
    expect(signed.body).toEqual(body);
  });

  it('rotation: the new key signs, the old stays in the JWKS until retired', async () => {
    handler = ack;
    // docs/webhooks.md's jose receiver, with its cooldown lowered as documented, beside one on jose's defaults.
    const keysUrl = new URL(`${server.baseUrl}/v2/webhook/keys`);
    const documented = createRemoteJWKSet(keysUrl, { cooldownDuration: 1_000 });
    const defaults = createRemoteJWKSet(keysUrl);
    const joseVerify = async (jwks: typeof defaults, rawBody: Buffer, header: string) => {
      const [protectedB64, , signatureB64] = header.split('.');
      const compact = `${protectedB64}.${rawBody.toString('base64url')}.${signatureB64}`;
      return (await compactVerify(compact, jwks, { algorithms: ['RS256'] })).protectedHeader.kid;
    };
    const before = await fetchJwks(server.baseUrl);
    const oldKid = before.keys[0]!.kid;
    const first = await insertPaymentEvent(db(), {
      clientId: client.clientId,
      paymentId: randomId('pay'),
      state: 'completed',
      previousState: 'processing',
    });
    const oldReq = await waitFor(() => deliveriesOf(first.id)[0], 'an event signed with the old key');
    const oldSignature = String(oldReq.headers['x-dispersa-signature']);
    expect(verifyWithNodeCrypto(oldReq.body, oldSignature, before)?.kid).toBe(oldKid);
    expect(await joseVerify(documented, oldReq.body, oldSignature)).toBe(oldKid);
    expect(await joseVerify(defaults, oldReq.body, oldSignature)).toBe(oldKid);
    const fetchedAt = Date.now();

    const rotated = await server.admin('POST', '/admin/v1/webhooks/keys/rotate');
    expect(rotated.status).toBe(200);
    expect(rotated.body.payload).toEqual({ kid: expect.any(String), previousKid: oldKid });
    const newKid = rotated.body.payload.kid as string;
    expect(newKid).not.toBe(oldKid);

    const during = await fetchJwks(server.baseUrl);
    expect(during.keys.map((k) => k.kid)).toEqual([newKid, oldKid]);
    expect(await verifyBothWays(oldReq.body, oldSignature, during)).not.toBeNull();

    const second = await insertPaymentEvent(db(), {
      clientId: client.clientId,
      paymentId: randomId('pay'),
      state: 'completed',
      previousState: 'processing',
    });
    const newReq = await waitFor(() => deliveriesOf(second.id)[0], 'an event signed with the new key');
    const newSignature = String(newReq.headers['x-dispersa-signature']);
    expect((await verifyBothWays(newReq.body, newSignature, during))?.kid).toBe(newKid);
    // jose refetches a key set on an unknown kid only once its cooldown (30 s by default) has passed since the
    // last fetch: on its defaults the receiver refuses the new key's events for up to 30 s after a rotation...
    expect(Date.now() - fetchedAt).toBeLessThan(30_000);
    await expect(joseVerify(defaults, newReq.body, newSignature)).rejects.toMatchObject({
      code: 'ERR_JWKS_NO_MATCHING_KEY',
    });
    // ...with the documented cooldown of 1 s, from a second after its last fetch.
    await new Promise((r) => setTimeout(r, Math.max(0, 1_100 - (Date.now() - fetchedAt))));
    expect(await joseVerify(documented, newReq.body, newSignature)).toBe(newKid);

    const keys = await server.admin('GET', '/admin/v1/webhooks/keys');
    expect(keys.body.payload.keys.map((k: any) => [k.kid, k.status, k.environment])).toEqual([
      [newKid, 'active', 'sandbox'],
      [oldKid, 'retiring', 'sandbox'],
    ]);
    expect(await server.admin('POST', `/admin/v1/webhooks/keys/${newKid}/retire`)).toMatchObject({ status: 409 });
    expect(await server.admin('POST', '/admin/v1/webhooks/keys/no-such-kid/retire')).toMatchObject({ status: 404 });
    const retired = await server.admin('POST', `/admin/v1/webhooks/keys/${oldKid}/retire`);
    expect(retired).toMatchObject({ status: 200, body: { payload: { kid: oldKid, status: 'retired' } } });
    expect(await server.admin('POST', `/admin/v1/webhooks/keys/${oldKid}/retire`)).toMatchObject({ status: 409 });

    const after = await fetchJwks(server.baseUrl);
    expect(after.keys.map((k) => k.kid)).toEqual([newKid]);
    expect(await verifyBothWays(oldReq.body, oldSignature, after)).toBeNull();
  });
});

describe('operator delivery log', () => {
  it('pages newest first with a cursor and refuses a malformed limit or cursor', async () => {
    const page1 = await server.admin('GET', `/admin/v1/webhooks/deliveries?clientId=${client.clientId}&limit=2`);
    expect(page1.status).toBe(200);
    expect(page1.body.payload).toMatchObject({ hasMore: true, nextCursor: expect.any(String) });
    expect(page1.body.payload.data).toHaveLength(2);
    const page2 = await server.admin(
      'GET',
      `/admin/v1/webhooks/deliveries?clientId=${client.clientId}&limit=2&cursor=${page1.body.payload.nextCursor}`,
    );
    expect(page2.status).toBe(200);
    const ids = [...page1.body.payload.data, ...page2.body.payload.data].map((a: any) => Number(a.id));
    expect(ids).toEqual([...ids].sort((a, b) => b - a));
    expect(new Set(ids).size).toBe(4);
    expect(await server.admin('GET', '/admin/v1/webhooks/deliveries?limit=abc')).toMatchObject({ status: 400 });
    // limit=0 is refused like on every other listing (issue 13, item 9), not answered with an empty page.
    expect(await server.admin('GET', '/admin/v1/webhooks/deliveries?limit=0')).toMatchObject({
      status: 400,
      body: { error: 'limit must be a positive integer' },
    });
    expect(await server.admin('GET', '/admin/v1/webhooks/deliveries?limit=000')).toMatchObject({ status: 400 });
    expect(await server.admin('GET', '/admin/v1/webhooks/deliveries?cursor=xyz')).toMatchObject({ status: 400 });
    const unknown = await server.admin('GET', `/admin/v1/webhooks/deliveries?clientId=${randomId('cli')}`);
    expect(unknown.body.payload).toEqual({ data: [], hasMore: false, nextCursor: null });
  });
});
