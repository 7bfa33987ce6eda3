import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newKey, PM, pay } from '../support/payments.ts';
import { startTestServer, type TestClient, type TestServer } from '../support/test-server.ts';
import { echoChallenge, waitFor } from '../webhooks/e2e.ts';
import { type Receiver, startReceiver } from '../webhooks/helpers.ts';

/** The operator routes the console added: clients and quotes lists, one event with its attempts, audited replay. */

let server: TestServer;
let receiver: Receiver;
let client: TestClient;

beforeAll(async () => {
  server = await startTestServer({ env: { DISPERSA_WEBHOOK_ALLOW_INSECURE: 'true' } });
  receiver = await startReceiver(echoChallenge);
  client = await server.newClient({ fundMinor: 10_000_000n });
  const put = await client.api.request('PUT', '/v2/webhook', { body: { webhookUrl: receiver.url } });
  expect(put.body.payload.changed).toBe(true);
});
afterAll(async () => {
  await server.stop();
  await receiver.close();
});

describe('operator routes of the console', () => {
  it('GET /admin/v1/clients: newest first, with balances, keyset paged', async () => {
    const other = await server.newClient({ fundMinor: 500n });
    const first = await server.admin('GET', '/admin/v1/clients?limit=1');
    expect(first.status).toBe(200);
    expect(first.body.payload.data).toEqual([
      expect.objectContaining({ clientId: other.clientId, balance: { currency: 'VES', availableMinor: '500' } }),
    ]);
    expect(first.body.payload.hasMore).toBe(true);
    const next = await server.admin('GET', `/admin/v1/clients?limit=1&cursor=${first.body.payload.nextCursor}`);
    expect(next.body.payload.data[0].clientId).toBe(client.clientId);
    expect((await server.admin('GET', '/admin/v1/clients?cursor=cli_nope')).status).toBe(400);
  });

  it('GET /admin/v1/quotes lists quotes; an unknown client is 404', async () => {
    const res = await server.admin('GET', '/admin/v1/quotes');
    expect(res.status).toBe(200);
    expect(res.body.payload.data).toEqual(expect.any(Array));
    expect((await server.admin('GET', '/admin/v1/quotes?clientId=cli_nope')).status).toBe(404);
  });

  it('an event with its attempts; replay sends it again and records who and why', async () => {
    const paid = await pay(client, '150000', PM, newKey());
    const paymentId = paid.body.payload.intentId as string;
    const { rows } = await server.testDb.db.query<{ id: string }>('SELECT id FROM events WHERE payment_id = $1', [
      paymentId,
    ]);
    const eventId = rows[0]!.id;
    const sentTimes = () => receiver.requests.filter((r) => r.headers['x-dispersa-event-id'] === eventId).length;
    await waitFor(async () => {
      const e = await server.admin('GET', `/admin/v1/webhooks/events/${eventId}`);
      return e.body.payload.deliveryStatus === 'delivered' ? e : undefined;
    }, 'the delivery');
    const detail = await server.admin('GET', `/admin/v1/webhooks/events/${eventId}`);
    expect(detail.body.payload).toMatchObject({
      eventId,
      paymentId,
      deliveryStatus: 'delivered',
      attempts: 1,
      attemptLog: [expect.objectContaining({ attempt: 1, statusCode: 200 })],
      replays: [],
      body: { id: eventId, type: 'payment.state_changed' },
    });

    expect((await server.admin('POST', `/admin/v1/webhooks/events/${eventId}/replay`, {})).status).toBe(400);
    expect((await server.admin('POST', '/admin/v1/webhooks/events/evt_nope/replay', { note: 'x' })).status).toBe(404);
    const replayed = await server.admin('POST', `/admin/v1/webhooks/events/${eventId}/replay`, {
      note: 'client lost it in their outage',
      requestedBy: 'ana@ops',
    });
    expect(replayed.status).toBe(200);
    expect(replayed.body.payload).toEqual({ eventId, previousStatus: 'delivered', deliveryStatus: 'pending' });
    await waitFor(() => sentTimes() === 2, 'the replayed delivery');
    const again = receiver.requests.filter((r) => r.headers['x-dispersa-event-id'] === eventId).at(-1)!;
    expect(again.headers['x-dispersa-delivery-attempt']).toBe('2');
    const after = await waitFor(async () => {
      const e = await server.admin('GET', `/admin/v1/webhooks/events/${eventId}`);
      return e.body.payload.deliveryStatus === 'delivered' ? e : undefined;
    }, 'the second delivery recorded');
    expect(after.body.payload.replays).toEqual([
      {
        fromStatus: 'delivered',
        requestedBy: 'ana@ops',
        note: 'client lost it in their outage',
        createdAt: expect.any(String),
      },
    ]);
    expect(after.body.payload.attemptLog).toHaveLength(2);
  });

  it('a pending event cannot be replayed: it is already on its way', async () => {
    const { rows } = await server.testDb.db.query<{ id: string }>(
      `UPDATE events SET delivery_status = 'pending', next_attempt_at = now() + interval '1 hour'
        WHERE id = (SELECT id FROM events ORDER BY seq LIMIT 1) RETURNING id`,
    );
    const res = await server.admin('POST', `/admin/v1/webhooks/events/${rows[0]!.id}/replay`, { note: 'again' });
    expect(res.status).toBe(409);
    expect(res.body).toEqual({ error: 'the event is still pending: it is already on its way' });
  });
});
