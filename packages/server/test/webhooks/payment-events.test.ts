import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newKey, PM, pay, waitForPayment } from '../support/payments.ts';
import { startTestServer, type TestClient, type TestServer } from '../support/test-server.ts';
import { echoChallenge, eventOf, fetchJwks, waitFor } from './e2e.ts';
import { type Receiver, startReceiver } from './helpers.ts';
import { verifyBothWays } from './independent-verifier.ts';

/**
 * End to end with the payment core: real payments on the sandbox rail emit their events in the
 * transaction of each transition, and the worker delivers them signed, in order, with data.payment equal
 * to what GET /v2/payments/{id} shows.
 */

let server: TestServer;
let receiver: Receiver;
let client: TestClient;

beforeAll(async () => {
  server = await startTestServer({
    env: {
      DISPERSA_WEBHOOK_ALLOW_INSECURE: 'true',
      DISPERSA_WEBHOOK_RETRY_BASE_MS: '30',
      DISPERSA_SANDBOX_SETTLE_MS: '200',
      DISPERSA_RECONCILE_INTERVAL_MS: '100',
      DISPERSA_UNKNOWN_BUDGET_SECONDS: '3600',
    },
  });
  receiver = await startReceiver(echoChallenge);
  client = await server.newClient({ fundMinor: 100_000_000n });
  const put = await client.api.request('PUT', '/v2/webhook', { body: { webhookUrl: receiver.url } });
  expect(put.body.payload.changed).toBe(true);
});
afterAll(async () => {
  await server.stop();
  await receiver.close();
});

function eventsOfPayment(id: string) {
  return receiver.requests
    .filter((r) => {
      const e = eventOf(r);
      return e.type === 'payment.state_changed' && e.data.payment.intentId === id;
    })
    .map((r) => ({ req: r, event: eventOf(r) }));
}

describe('payment events', () => {
  it('a completed payment: its event carries the Payment as GET shows it, signed, verified both ways', async () => {
    const res = await pay(client, '150000', PM, newKey());
    expect(res.status).toBeLessThan(300);
    const id = res.body.payload.intentId as string;
    const final = await waitForPayment(client, id, (p) => p.state === 'completed');
    const delivered = await waitFor(() => {
      const found = eventsOfPayment(id).find((x) => x.event.data.payment.state === 'completed');
      return found;
    }, 'the completed event');
    expect(delivered.event).toMatchObject({ type: 'payment.state_changed', test: false, data: { payment: final } });
    expect(typeof delivered.event.data.previousState === 'string' || delivered.event.data.previousState === null).toBe(
      true,
    );
    const jwks = await fetchJwks(server.baseUrl);
    for (const { req } of eventsOfPayment(id)) {
      expect(await verifyBothWays(req.body, String(req.headers['x-dispersa-signature']), jwks)).not.toBeNull();
    }
  });

  it('unknown, then resolved by the operator: two events, in the order of the transitions', async () => {
    // Magic amount 02 on the sandbox: no answer from the bank, so the payment becomes unknown.
    const res = await pay(client, '150002', PM, newKey());
    const id = res.body.payload.intentId as string;
    await waitForPayment(client, id, (p) => p.state === 'unknown');
    const resolved = await server.admin('POST', `/admin/v1/payments/${id}/resolve`, {
      outcome: 'completed',
      note: 'confirmed with the bank',
    });
    expect(resolved.status).toBe(200);
    const events = await waitFor(() => {
      const got = eventsOfPayment(id);
      return got.some((x) => x.event.data.payment.state === 'completed') ? got : undefined;
    }, 'the completed event');
    const chain = events.map((x) => [x.event.data.previousState, x.event.data.payment.state]);
    expect(chain.slice(-2)).toEqual([
      [expect.any(String), 'unknown'],
      ['unknown', 'completed'],
    ]);
  });
});
