import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestClient, type TestServer } from '../support/test-server.ts';
import { echoChallenge, eventOf, fetchJwks, hangUp, waitFor } from './e2e.ts';
import { type Receiver, startReceiver } from './helpers.ts';
import { verifyBothWays } from './independent-verifier.ts';

/**
 * GET/PUT /v2/webhook over real HTTP: proof of control (proven, wrong echo → 422, unreachable →
 * pendingChange then applied by the background worker), superseded requests, and /v2/me.
 */

let server: TestServer;
const receivers: Receiver[] = [];

async function receiver(handler = echoChallenge): Promise<Receiver> {
  const r = await startReceiver(handler);
  receivers.push(r);
  return r;
}

beforeAll(async () => {
  server = await startTestServer({
    env: { DISPERSA_WEBHOOK_ALLOW_INSECURE: 'true', DISPERSA_WEBHOOK_RETRY_BASE_MS: '40' },
  });
});
afterAll(async () => {
  await server.stop();
  await Promise.all(receivers.map((r) => r.close()));
});

async function history(clientId: string): Promise<any[]> {
  const res = await server.admin('GET', `/admin/v1/webhooks/clients/${clientId}`);
  expect(res.status).toBe(200);
  return res.body.payload.changeRequests;
}

async function withProvenUrl(): Promise<{ client: TestClient; url: string }> {
  const client = await server.newClient();
  const r = await receiver();
  const put = await client.api.request('PUT', '/v2/webhook', { body: { webhookUrl: r.url } });
  expect(put.status).toBe(200);
  return { client, url: r.url };
}

describe('GET /v2/webhook and /v2/me before any configuration', () => {
  it('shows no URL, no pending change, changed false', async () => {
    const client = await server.newClient();
    const res = await client.api.get('/v2/webhook');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      status: 'success',
      traceId: expect.any(String),
      payload: { webhookUrl: null, pendingChange: null, changed: false },
    });
    const me = await client.api.get('/v2/me');
    expect(me.body.payload.webhook).toEqual({ url: null, pendingChange: null });
  });
});

describe('PUT /v2/webhook: proof of control', () => {
  it('a receiver that echoes the challenge proves control: the URL applies at once', async () => {
    const client = await server.newClient();
    const r = await receiver();
    const put = await client.api.request('PUT', '/v2/webhook', { body: { webhookUrl: r.url } });
    expect(put.status).toBe(200);
    expect(put.body.payload).toEqual({ webhookUrl: r.url, changed: true, pendingChange: null });

    // The verification event: contract shape, contract headers, signed like every event.
    expect(r.requests).toHaveLength(1);
    const req = r.requests[0]!;
    const event = eventOf(req);
    expect(event).toEqual({
      id: expect.stringMatching(/^evt_/),
      type: 'webhook.verification',
      test: false,
      createdAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      data: { challenge: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/) },
    });
    expect(req.method).toBe('POST');
    expect(req.headers['content-type']).toBe('application/json');
    expect(req.headers['x-dispersa-event-id']).toBe(event.id);
    expect(req.headers['x-dispersa-delivery-attempt']).toBe('1');
    const verified = await verifyBothWays(
      req.body,
      String(req.headers['x-dispersa-signature']),
      await fetchJwks(server.baseUrl),
    );
    expect(verified).toMatchObject({ alg: 'RS256', kid: expect.any(String) });
    expect(Math.abs(verified!.iat - Date.now() / 1000)).toBeLessThan(60);

    expect((await client.api.get('/v2/webhook')).body.payload).toEqual({
      webhookUrl: r.url,
      pendingChange: null,
      changed: false,
    });
    expect((await client.api.get('/v2/me')).body.payload.webhook).toEqual({ url: r.url, pendingChange: null });
    expect(await history(client.clientId)).toMatchObject([{ requestedUrl: r.url, status: 'proven', attempts: 1 }]);
  });

  it('setting the URL that is already active changes nothing and sends nothing', async () => {
    const { client, url } = await withProvenUrl();
    const r = receivers.find((x) => x.url === url)!;
    const before = r.requests.length;
    const put = await client.api.request('PUT', '/v2/webhook', { body: { webhookUrl: url } });
    expect(put.status).toBe(200);
    expect(put.body.payload).toEqual({ webhookUrl: url, changed: false, pendingChange: null });
    expect(r.requests.length).toBe(before);
    expect(await history(client.clientId)).toHaveLength(1);
  });

  it('a wrong echo is 422, recorded as a failed change request, and the active URL stays', async () => {
    const { client, url } = await withProvenUrl();
    const wrong = await receiver((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"challenge":"not-the-one"}');
    });
    const put = await client.api.request('PUT', '/v2/webhook', { body: { webhookUrl: wrong.url } });
    expect(put.status).toBe(422);
    expect(put.body).toEqual({ error: expect.stringMatching(/proof of control failed.*challenge/) });
    expect(wrong.requests).toHaveLength(1);
    expect((await client.api.get('/v2/webhook')).body.payload).toEqual({
      webhookUrl: url,
      pendingChange: null,
      changed: false,
    });
    const [latest] = await history(client.clientId);
    expect(latest).toMatchObject({
      requestedUrl: wrong.url,
      status: 'rejected',
      reason: expect.stringMatching(/challenge/),
      resolvedAt: expect.any(String),
    });

    // Repeating it repeats the rejection (spec, Errors), each time as a new recorded request.
    const again = await client.api.request('PUT', '/v2/webhook', { body: { webhookUrl: wrong.url } });
    expect(again.status).toBe(422);
    expect((await history(client.clientId)).filter((h) => h.status === 'rejected')).toHaveLength(2);
  });

  it('a non-2xx answer or an answer that is not JSON is a wrong answer too', async () => {
    const client = await server.newClient();
    const failing = await receiver((_req, res) => res.writeHead(500).end('{}'));
    const notJson = await receiver((_req, res) => res.writeHead(200).end('ok'));
    for (const r of [failing, notJson]) {
      const put = await client.api.request('PUT', '/v2/webhook', { body: { webhookUrl: r.url } });
      expect(put.status).toBe(422);
    }
    expect((await client.api.get('/v2/webhook')).body.payload.webhookUrl).toBeNull();
  });

  it('an unreachable receiver leaves a pendingChange; the worker keeps verifying and applies it when proven', async () => {
    const { client, url: oldUrl } = await withProvenUrl();
    const later = await receiver(hangUp);
    const requestedBefore = Date.now();
    const put = await client.api.request('PUT', '/v2/webhook', { body: { webhookUrl: later.url } });
    expect(put.status).toBe(200);
    const pending = put.body.payload.pendingChange;
    expect(put.body.payload).toEqual({ webhookUrl: oldUrl, changed: false, pendingChange: expect.any(Object) });
    expect(pending).toEqual({
      webhookUrl: later.url,
      requestedAt: expect.any(String),
      status: 'verifying',
      attempts: 1,
      nextAttemptAt: expect.any(String),
      expiresAt: expect.any(String),
      lastError: expect.any(String),
    });
    const requestedAt = Date.parse(pending.requestedAt);
    expect(requestedAt).toBeGreaterThanOrEqual(requestedBefore - 1000);
    expect(Date.parse(pending.expiresAt) - requestedAt).toBe(24 * 3_600_000);
    expect(Date.parse(pending.nextAttemptAt)).toBeGreaterThan(requestedAt);

    const me = await client.api.get('/v2/me');
    expect(me.body.payload.webhook).toEqual({
      url: oldUrl,
      pendingChange: expect.objectContaining({ webhookUrl: later.url }),
    });

    // The same URL again: no new change request; the pending one is reported.
    const again = await client.api.request('PUT', '/v2/webhook', { body: { webhookUrl: later.url } });
    expect(again.status).toBe(200);
    expect(again.body.payload.webhookUrl).toBe(oldUrl);
    expect(again.body.payload.pendingChange.requestedAt).toBe(pending.requestedAt);
    expect((await history(client.clientId)).filter((h) => h.status === 'verifying')).toHaveLength(1);

    // The background worker retries with back-off; events keep going to the old URL meanwhile.
    await waitFor(() => later.requests.length >= 3, 'background verification attempts');
    later.setHandler(echoChallenge);
    await waitFor(async () => {
      const res = await client.api.get('/v2/webhook');
      return res.body.payload.webhookUrl === later.url ? res : undefined;
    }, 'the pending URL to apply');
    expect((await client.api.get('/v2/webhook')).body.payload.pendingChange).toBeNull();

    // Every attempt re-sent the same verification event, numbered 1, 2, 3, ...
    const ids = new Set(later.requests.map((r) => r.headers['x-dispersa-event-id']));
    expect(ids.size).toBe(1);
    const attempts = later.requests.map((r) => Number(r.headers['x-dispersa-delivery-attempt']));
    expect(attempts).toEqual(attempts.map((_, i) => i + 1));
    const [latest] = await history(client.clientId);
    expect(latest).toMatchObject({ requestedUrl: later.url, status: 'proven', attempts: attempts.length });
  });

  it('a newer request supersedes a pending one; asking for the active URL again cancels it', async () => {
    const { client, url } = await withProvenUrl();
    const d = await receiver(hangUp);
    const e = await receiver(hangUp);
    expect((await client.api.request('PUT', '/v2/webhook', { body: { webhookUrl: d.url } })).status).toBe(200);
    const put = await client.api.request('PUT', '/v2/webhook', { body: { webhookUrl: e.url } });
    expect(put.body.payload).toMatchObject({ webhookUrl: url, changed: false, pendingChange: { webhookUrl: e.url } });
    let h = await history(client.clientId);
    expect(h.find((x) => x.requestedUrl === d.url)).toMatchObject({ status: 'superseded' });
    expect(h.find((x) => x.requestedUrl === e.url)).toMatchObject({ status: 'verifying' });

    const back = await client.api.request('PUT', '/v2/webhook', { body: { webhookUrl: url } });
    expect(back.body.payload).toEqual({ webhookUrl: url, changed: false, pendingChange: null });
    h = await history(client.clientId);
    expect(h.find((x) => x.requestedUrl === e.url)).toMatchObject({ status: 'superseded' });
    // An attempt already in flight when the request was superseded may still land; after that, none.
    await new Promise((r) => setTimeout(r, 150));
    const attemptsOfE = e.requests.length;
    await new Promise((r) => setTimeout(r, 400));
    expect(e.requests.length).toBe(attemptsOfE);
  });

  it('validates the body: webhookUrl required, a string, a URL', async () => {
    const client = await server.newClient();
    const missing = await client.api.request('PUT', '/v2/webhook', { body: {} });
    expect(missing).toMatchObject({ status: 400, body: { error: 'webhookUrl is required' } });
    const number = await client.api.request('PUT', '/v2/webhook', { body: { webhookUrl: 42 } });
    expect(number).toMatchObject({ status: 400, body: { error: 'webhookUrl must be a string' } });
    const notUrl = await client.api.request('PUT', '/v2/webhook', { body: { webhookUrl: 'hooks.example.com' } });
    expect(notUrl.status).toBe(400);
    expect(notUrl.body.error).toMatch(/^webhookUrl must be an absolute https:\/\/ URL/);
    const text = await client.api.request('PUT', '/v2/webhook', { rawBody: 'x', contentType: 'text/plain' });
    expect(text).toMatchObject({ status: 400, body: { error: 'body must be object' } });
  });
});
