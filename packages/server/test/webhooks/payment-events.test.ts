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

/**
 * A payment made unknown (magic amount 02 on the sandbox: no answer from the bank), then completed by the operator: a
 * transition written by payments/lifecycle.ts, the path reconciliation and the follow-up worker share. Its id.
 */
async function unknownThenResolved(payer: TestClient): Promise<string> {
  const res = await pay(payer, '150002', PM, newKey());
  const id = res.body.payload.intentId as string;
  await waitForPayment(payer, id, (p) => p.state === 'unknown');
  const resolved = await server.admin('POST', `/admin/v1/payments/${id}/resolve`, {
    outcome: 'completed',
    note: 'confirmed with the bank',
  });
  expect(resolved.status).toBe(200);
  return id;
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
    const id = await unknownThenResolved(client);
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

describe('events of a client without a webhook URL', () => {
  /** Each event of these payments, as the outbox holds it. */
  async function outboxRows(ids: string[]) {
    const { rows } = await server.testDb.db.query<{
      payment_id: string;
      delivery_status: string;
      attempts: number;
      last_error: string | null;
      leased: boolean;
    }>(
      `SELECT payment_id, delivery_status, attempts, last_error, next_attempt_at <> created_at AS leased
       FROM events WHERE payment_id = ANY ($1::text[]) ORDER BY seq`,
      [ids],
    );
    return rows;
  }
  // A claim would have leased the row (next_attempt_at moved on) before settling it.
  const settledAtWrite = { delivery_status: 'no_webhook', attempts: 0, last_error: 'no webhook URL', leased: false };

  it('are written settled by the payment path: no_webhook, never attempted nor claimed', async () => {
    const silent = await server.newClient({ fundMinor: 1_000_000n });
    // Completed at once (booked in a step), declined by the bank (booked on its own), refused by a rule (failed
    // at once, written by the reserve).
    const completed = await pay(silent, '150000', PM, newKey());
    const declined = await pay(silent, '150001', PM, newKey());
    const refusedKey = newKey();
    const refused = await pay(silent, '5000000', PM, refusedKey);
    expect([completed.status, declined.status, refused.status]).toEqual([201, 201, 422]);
    // A 422 answers with its error only; the failed payment it created answers a replay of its key.
    const refusedPayment = await pay(silent, '5000000', PM, refusedKey);
    const ids = [completed, declined, refusedPayment].map((r) => r.body.payload.intentId as string);
    await waitForPayment(silent, ids[1]!, (p) => p.state === 'failed');

    const rows = await outboxRows(ids);
    expect(rows.map((r) => r.payment_id).sort()).toEqual([...ids].sort());
    for (const r of rows) expect(r).toMatchObject(settledAtWrite);
    // The client with a URL still gets its events delivered (the suite above); none of these reached it.
    expect(receiver.requests.filter((r) => ids.includes(eventOf(r).data.payment?.intentId))).toEqual([]);
  });

  it('are written settled by a transition outside the payment path too (here the operator resolving one)', async () => {
    const silent = await server.newClient({ fundMinor: 1_000_000n });
    const id = await unknownThenResolved(silent);
    const rows = await outboxRows([id]);
    expect(rows).toHaveLength(2);
    for (const r of rows) expect(r).toMatchObject(settledAtWrite);
  });
});
