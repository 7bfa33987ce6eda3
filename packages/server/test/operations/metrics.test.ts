import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/shared/clock.ts';
import { type Scrape, scrape } from '../support/metrics.ts';
import { newKey, PM, pay } from '../support/payments.ts';
import { usingPostgres } from '../support/test-db.ts';
import { startTestServer, type TestClient, type TestServer } from '../support/test-server.ts';
import { echoChallenge, waitFor } from '../webhooks/e2e.ts';
import { type Receiver, startReceiver } from '../webhooks/helpers.ts';

/**
 * GET /metrics on the operator listener: who may read it, and that the counters and gauges move with what the
 * service does. The gauges read from the database are cached for 5 s of the service's clock, which this test
 * moves by hand.
 */

const METRICS_TOKEN = 'metrics-token-0123456789abcdef';
const clock = new ManualClock(Date.UTC(2026, 4, 1, 12, 0, 0));
let server: TestServer;
let receiver: Receiver;
let client: TestClient;
let failDeliveries = false;

/** A scrape that sees fresh database gauges: the clock moves past the cache first. */
async function freshScrape(): Promise<Scrape> {
  clock.advance(6_000);
  return scrape(server.adminUrl);
}

beforeAll(async () => {
  server = await startTestServer({
    clock,
    env: {
      DISPERSA_METRICS_TOKEN: METRICS_TOKEN,
      DISPERSA_WEBHOOK_ALLOW_INSECURE: 'true',
      // A failed delivery waits an hour of the manual clock: it stays pending while the test looks.
      DISPERSA_WEBHOOK_RETRY_BASE_MS: '3600000',
      DISPERSA_RECONCILE_INTERVAL_MS: '50',
    },
  });
  receiver = await startReceiver((req, res) => {
    if (failDeliveries && !req.body.toString('utf8').includes('"webhook.verification"')) {
      return void res.writeHead(500).end();
    }
    echoChallenge(req, res);
  });
  client = await server.newClient({ fundMinor: 100_000_000n });
  const put = await client.api.request('PUT', '/v2/webhook', { body: { webhookUrl: receiver.url } });
  expect(put.body.payload.changed).toBe(true);
});
afterAll(async () => {
  await server?.stop();
  await receiver?.close();
});

describe('GET /metrics', () => {
  it('takes the admin token or the metrics token; the metrics token opens nothing else', async () => {
    const get = (path: string, token?: string) =>
      fetch(server.adminUrl + path, { headers: token ? { authorization: `Bearer ${token}` } : {} });
    expect((await get('/metrics')).status).toBe(401);
    expect((await get('/metrics', 'not-the-token-at-all-0000')).status).toBe(401);
    const byAdmin = await get('/metrics', 'test-admin-token-0123456789abcdef');
    expect(byAdmin.status).toBe(200);
    expect(byAdmin.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    expect((await get('/metrics', METRICS_TOKEN)).status).toBe(200);
    expect((await get('/admin/v1/payments', METRICS_TOKEN)).status).toBe(401);
    // Not on the public listener.
    expect((await fetch(`${server.baseUrl}/metrics`)).status).toBe(404);
  });

  it('carries the process metrics and, on PostgreSQL, the connection pool', async () => {
    const m = await scrape(server.adminUrl);
    expect(m.value('process_cpu_user_seconds_total')).toBeGreaterThan(0);
    expect(m.value('nodejs_heap_size_used_bytes')).toBeGreaterThan(0);
    expect(m.value('dispersa_up')).toBe(1);
    expect(m.value('dispersa_database_up')).toBe(1);
    if (usingPostgres()) {
      expect(m.value('dispersa_db_pool_max')).toBe(32);
      expect(m.value('dispersa_db_pool_connections', { state: 'idle' })).toBeGreaterThanOrEqual(0);
      expect(m.value('dispersa_db_pool_waiting')).toBe(0);
    } else {
      expect(m.value('dispersa_db_pool_max')).toBeUndefined();
    }
  });

  it('a payment moves the request counter, its latency histogram and the delivery results', async () => {
    const route = { listener: 'public', method: 'POST', route: '/v2/payments' };
    const before = await freshScrape();
    const res = await pay(client, '150000', PM, newKey());
    expect(res.status).toBe(201);
    expect(res.body.payload.state).toBe('completed');
    const after = await waitFor(async () => {
      const m = await scrape(server.adminUrl);
      const delivered = m.value('dispersa_webhook_deliveries_total', { result: 'delivered' })!;
      return delivered > before.value('dispersa_webhook_deliveries_total', { result: 'delivered' })! ? m : undefined;
    }, 'the delivery of the payment event');
    expect(after.value('dispersa_http_requests_total', { ...route, status: '201' })).toBe(
      (before.value('dispersa_http_requests_total', { ...route, status: '201' }) ?? 0) + 1,
    );
    expect(after.value('dispersa_http_request_duration_seconds_count', route)).toBe(
      (before.value('dispersa_http_request_duration_seconds_count', route) ?? 0) + 1,
    );
    expect(after.value('dispersa_webhook_delivery_duration_seconds_count')).toBeGreaterThan(
      before.value('dispersa_webhook_delivery_duration_seconds_count')!,
    );
    // Routes are counted by their template, never by the raw URL.
    await client.api.get(`/v2/payments/${res.body.payload.intentId}`);
    await fetch(`${server.baseUrl}/v2/no-such-route/123`);
    const later = await scrape(server.adminUrl);
    expect(
      later.value('dispersa_http_requests_total', {
        ...route,
        method: 'GET',
        route: '/v2/payments/:id',
        status: '200',
      }),
    ).toBe(1);
    expect(later.sum('dispersa_http_requests_total', { route: 'unmatched', status: '404' })).toBeGreaterThanOrEqual(1);
    expect(later.text).not.toContain(res.body.payload.intentId);
  });

  it('a payment moves the transition counters of its rail and states, and the batch sizes and times of each phase', async () => {
    const completed = { rail: 'PM', state: 'completed', sub_status: '' };
    const reserved = { rail: 'PM', state: 'processing', sub_status: 'reserved' };
    const before = await scrape(server.adminUrl);
    const started = performance.now();
    const res = await pay(client, '150000', PM, newKey());
    const elapsedSeconds = (performance.now() - started) / 1000;
    expect(res.body.payload.state).toBe('completed');
    const after = await scrape(server.adminUrl);
    for (const labels of [completed, reserved]) {
      const was = before.value('dispersa_payment_transitions_total', labels) ?? 0;
      expect(after.value('dispersa_payment_transitions_total', labels), JSON.stringify(labels)).toBe(was + 1);
    }
    let phaseSeconds = 0;
    for (const phase of ['reserve', 'dispatch', 'book']) {
      const was = before.value('dispersa_payment_batch_size_count', { phase }) ?? 0;
      expect(after.value('dispersa_payment_batch_size_count', { phase }), phase).toBe(was + 1);
      const timed = before.value('dispersa_payment_phase_seconds_count', { phase }) ?? 0;
      expect(after.value('dispersa_payment_phase_seconds_count', { phase }), phase).toBe(timed + 1);
      const spent =
        (after.value('dispersa_payment_phase_seconds_sum', { phase }) ?? 0) -
        (before.value('dispersa_payment_phase_seconds_sum', { phase }) ?? 0);
      expect(spent, phase).toBeGreaterThan(0);
      phaseSeconds += spent;
    }
    // Seconds, and only the request's own time: the phases fit inside the call that made them.
    expect(phaseSeconds).toBeLessThan(elapsedSeconds);
  });

  it('a payment and a read of it time each batch of their paths, and every batched path states its lanes', async () => {
    const before = await scrape(server.adminUrl);
    const started = performance.now();
    const res = await pay(client, '150000', PM, newKey());
    expect(res.body.payload.state).toBe('completed');
    const read = await client.api.get(`/v2/payments/${res.body.payload.intentId}`);
    expect(read.status).toBe(200);
    const elapsedSeconds = (performance.now() - started) / 1000;
    const after = await scrape(server.adminUrl);
    const runs = (path: string, name = 'dispersa_batch_run_seconds_count') =>
      (after.value(name, { path }) ?? 0) - (before.value(name, { path }) ?? 0);
    // Its reserve and its booking are a step each; the rail took it once; the read was one batch; nothing failed.
    expect(runs('payment_step')).toBe(2);
    expect(runs('payment_dispatch')).toBe(1);
    expect(runs('payment_read')).toBe(1);
    expect(runs('payment_book_failed')).toBe(0);
    let busySeconds = 0;
    for (const path of ['payment_step', 'payment_dispatch', 'payment_read']) {
      const spent = runs(path, 'dispersa_batch_run_seconds_sum');
      expect(spent, path).toBeGreaterThan(0);
      busySeconds += spent;
    }
    // Seconds, one lane at a time: the batches ran one after another inside the two calls.
    expect(busySeconds).toBeLessThan(elapsedSeconds);
    // On PostgreSQL a step carries reserves and bookings together; embedded, each kind has a lane of its own.
    expect(after.value('dispersa_batch_lanes', { path: 'payment_step' })).toBe(usingPostgres() ? 1 : 2);
    expect(after.value('dispersa_batch_lanes', { path: 'payment_dispatch' })).toBe(1);
    expect(after.value('dispersa_batch_lanes', { path: 'payment_book_failed' })).toBe(1);
    expect(after.value('dispersa_batch_lanes', { path: 'payment_read' })).toBe(1);
    expect(after.value('dispersa_batch_lanes', { path: 'nonce' })).toBe(2);
  });

  it('a payment refused by a rule is timed in the reserve phase only', async () => {
    const before = await scrape(server.adminUrl);
    const res = await pay(client, '100000000001', PM, newKey());
    expect(res.status).toBe(422);
    const after = await scrape(server.adminUrl);
    for (const [phase, added] of [
      ['reserve', 1],
      ['dispatch', 0],
      ['book', 0],
    ] as const) {
      const was = before.value('dispersa_payment_phase_seconds_count', { phase }) ?? 0;
      expect(after.value('dispersa_payment_phase_seconds_count', { phase }) ?? 0, phase).toBe(was + added);
    }
  });

  it('an unknown payment shows in the open payments and its age; an undelivered event in the outbox', async () => {
    // The events of the earlier payments are delivered first.
    const before = await waitFor(async () => {
      const m = await freshScrape();
      return m.value('dispersa_outbox_pending_events') === 0 ? m : undefined;
    }, 'an empty outbox');
    const unknownLabels = { state: 'unknown', sub_status: 'reconciling', rail: 'PM' };
    expect(before.value('dispersa_payments_open', unknownLabels)).toBe(0);
    expect(before.value('dispersa_payments_open', { ...unknownLabels, sub_status: 'under_review' })).toBe(0);

    failDeliveries = true;
    const retriedBefore = before.value('dispersa_webhook_deliveries_total', { result: 'retrying' })!;
    // Magic amount 02: the bank never answers; the payment is unknown until reconciliation decides.
    const res = await pay(client, '150002', PM, newKey());
    expect(res.body.payload.state).toBe('unknown');
    await waitFor(async () => {
      const m = await scrape(server.adminUrl);
      return m.value('dispersa_webhook_deliveries_total', { result: 'retrying' })! > retriedBefore ? m : undefined;
    }, 'a failed delivery');
    const after = await freshScrape();
    expect(after.value('dispersa_payments_open', unknownLabels)).toBe(1);
    expect(after.value('dispersa_payments_unknown_oldest_age_seconds', { sub_status: 'reconciling' })).toBe(6);
    expect(after.value('dispersa_outbox_pending_events')).toBe(1);
    expect(after.value('dispersa_outbox_oldest_pending_age_seconds')).toBe(6);
    failDeliveries = false;
  });

  it('moves made by reconciliation and by an operator count as transitions too, once committed', async () => {
    const completed = { rail: 'PM', state: 'completed', sub_status: '' };
    const resolvedFailed = { rail: 'PM', state: 'failed', sub_status: '' };
    const before = await scrape(server.adminUrl);
    // 03: the bank never answers, yet the money moves at settlement: reconciliation completes it.
    const found = await pay(client, '150003', PM, newKey());
    expect(found.body.payload.state).toBe('unknown');
    // 02: nothing moves; an operator settles it.
    const lost = await pay(client, '150002', PM, newKey());
    expect(lost.body.payload.state).toBe('unknown');
    const resolved = await server.admin('POST', `/admin/v1/payments/${lost.body.payload.id}/resolve`, {
      outcome: 'failed',
      note: 'the bank confirmed it never received the transfer',
    });
    expect(resolved.status).toBe(200);
    clock.advance(6_000);
    await waitFor(async () => {
      const p = await client.api.get(`/v2/payments/${found.body.payload.id}`);
      return p.body.payload.state === 'completed' ? p : undefined;
    }, 'reconciliation to complete the 03 payment');
    const after = await scrape(server.adminUrl);
    const moved = (labels: Record<string, string>) =>
      (after.value('dispersa_payment_transitions_total', labels) ?? 0) -
      (before.value('dispersa_payment_transitions_total', labels) ?? 0);
    expect(moved(completed)).toBe(1);
    expect(moved(resolvedFailed)).toBe(1);
  });

  it('open reconciliation exceptions by kind, and the bank and ledger balances', async () => {
    const before = await freshScrape();
    const kinds = ['orphan_debit', 'unfunded_credit', 'double_debit', 'missing_debit', 'balance_mismatch'];
    const open = Object.fromEntries(
      kinds.map((kind) => [kind, before.value('dispersa_reconciliation_open_exceptions', { kind })]),
    );
    // On failure, the rows say what the unexpected exception is about.
    const rows = (await server.testDb.db.query('SELECT kind, bank_line_ids, payment_id, details FROM recon_exceptions'))
      .rows;
    expect({ open, rows }).toEqual({ open: Object.fromEntries(kinds.map((k) => [k, 0])), rows: [] });
    // A debit on the bank statement that no payment explains.
    const line = await server.admin('POST', '/admin/v1/sandbox/bank/lines', {
      direction: 'debit',
      amountMinor: '4321',
      reference: 'nobody-knows',
    });
    expect(line.status).toBe(201);
    const after = await waitFor(async () => {
      const m = await freshScrape();
      return m.value('dispersa_reconciliation_open_exceptions', { kind: 'orphan_debit' }) === 1 ? m : undefined;
    }, 'the orphan debit exception');
    expect(after.value('dispersa_reconciliation_bank_balance_minor', { currency: 'VES' })).toEqual(expect.any(Number));
    expect(after.value('dispersa_reconciliation_ledger_balance_minor', { currency: 'VES' })).toEqual(
      expect.any(Number),
    );
    const difference = after.value('dispersa_reconciliation_balance_difference_minor', { currency: 'VES' })!;
    expect(difference).toBe(
      after.value('dispersa_reconciliation_bank_balance_minor', { currency: 'VES' })! -
        after.value('dispersa_reconciliation_ledger_balance_minor', { currency: 'VES' })!,
    );
    expect(after.value('dispersa_reconciliation_balance_unexplained_minor', { currency: 'VES' })).toBe(0);
  });
});
