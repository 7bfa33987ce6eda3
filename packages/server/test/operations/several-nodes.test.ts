import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../src/db/db.ts';
import { createPostgresDb } from '../../src/db/postgres.ts';
import { ledgerViolations } from '../../src/ledger/invariants.ts';
import { BIN } from '../cli/cli-process.ts';
import { testKeyPair } from '../support/keys.ts';
import { CCE, PM } from '../support/payments.ts';
import { createSignedClient, NonceCounter } from '../support/signed-client.ts';
import { createTestDatabaseUrl, usingPostgres } from '../support/test-db.ts';
import { ADMIN_TOKEN } from '../support/test-server.ts';
import { echoChallenge, eventOf, waitFor } from '../webhooks/e2e.ts';
import { type Receiver, startReceiver } from '../webhooks/helpers.ts';
import { REPO, type ServiceProcess, startService } from './service-process.ts';

/**
 * The shape for deployments that outgrow one process (docs/operations.md): two API processes and one
 * `dispersa worker` on one PostgreSQL database, every process running the loops, under a stream of payments with
 * every sandbox outcome and a webhook receiver that fails some first attempts. No payment reaches the bank twice,
 * every event is delivered, in order per payment, and the ledger is exact. The embedded database belongs to one
 * process, so this runs only with DATABASE_URL (CI runs it).
 *
 * Each process has its own data directory, as separate machines would; they share the webhook master key that seals
 * the signing keys through DISPERSA_MASTER_KEY, not through a file copied between data directories.
 */

const skip = !usingPostgres();
if (skip)
  console.info('several-nodes.test.ts skipped: set DATABASE_URL to run the several-processes test on PostgreSQL');

// Every outcome of the sandbox: [amount suffix, destination].
const OUTCOMES: [string, Record<string, unknown>][] = [
  ['00', PM], // completed
  ['01', PM], // declined
  ['02', PM], // unknown, then under_review: a person resolves it
  ['03', PM], // unknown with money moved: reconciliation completes it
  ['04', PM], // duplicate report: reconciliation completes it
  ['05', PM], // wrong beneficiary
  ['00', CCE], // another bank: pending, then completed
  ['06', CCE], // at_rail, resolves by itself
  ['07', CCE], // at_rail, then failed with the money returned
];
const ROUNDS = 4;
const FUNDING = 10_000_000_00n;

describe.skipIf(skip)('two API processes and a worker on one PostgreSQL database', () => {
  let dir: string;
  let url: string;
  let drop: () => Promise<void>;
  let db: Db;
  let receiver: Receiver;
  const apis: ServiceProcess[] = [];
  let worker: ChildProcess | undefined;

  beforeAll(async () => {
    ({ url, drop } = await createTestDatabaseUrl());
    db = createPostgresDb(url, { max: 4 });
    dir = await mkdtemp(path.join(tmpdir(), 'dispersa-nodes-'));
  });
  afterAll(async () => {
    worker?.kill('SIGKILL');
    for (const a of apis) a.child.kill('SIGKILL');
    await Promise.all(apis.map((a) => a.exited));
    await receiver?.close();
    await db?.close();
    await drop?.();
    await rm(dir, { recursive: true, force: true });
  });

  it('no payment dispatched twice, every event delivered in order, the ledger exact', async () => {
    const shared = {
      DATABASE_URL: url,
      DISPERSA_MASTER_KEY: randomBytes(32).toString('base64'),
      DISPERSA_ADMIN_TOKEN: ADMIN_TOKEN,
      DISPERSA_PORT: '0',
      DISPERSA_ADMIN_PORT: '0',
      DISPERSA_LOG_LEVEL: 'info',
      DISPERSA_WEBHOOK_ALLOW_INSECURE: 'true',
      DISPERSA_WEBHOOK_RETRY_BASE_MS: '50',
      DISPERSA_SANDBOX_SETTLE_MS: '200',
      DISPERSA_RECONCILE_INTERVAL_MS: '200',
      DISPERSA_UNKNOWN_BUDGET_SECONDS: '3',
    };
    const envOf = (node: string) => ({ ...shared, DISPERSA_DATA_DIR: path.join(dir, node) });
    // The first process migrates and seeds; the others then start together on the prepared database.
    apis.push(startService(envOf('api-1')));
    const started = (s: ServiceProcess) =>
      s.waitFor('stdout', /"dispersa started"/).then((l) => JSON.parse(l) as { baseUrl: string; adminUrl: string });
    const first = await started(apis[0]!);
    // The second runs on a pool of three connections: nothing on its paths holds one while it waits for another.
    apis.push(startService({ ...envOf('api-2'), DISPERSA_DB_POOL_MAX: '3' }));
    worker = spawn(process.execPath, [BIN, 'worker'], {
      cwd: REPO,
      env: { PATH: process.env['PATH'], ...envOf('worker') },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let workerErr = '';
    worker.stderr!.setEncoding('utf8').on('data', (d: string) => {
      workerErr += d;
    });
    const second = await started(apis[1]!);
    await waitFor(() => /workers running/.test(workerErr), 'the worker process', 30_000);
    const nodes = [first, second];
    const poolMax = async (node: number) => {
      const res = await fetch(`${nodes[node]!.adminUrl}/metrics`, {
        headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      });
      return /^dispersa_db_pool_max (\d+)$/m.exec(await res.text())?.[1];
    };
    expect([await poolMax(0), await poolMax(1)]).toEqual(['10', '3']);

    const admin = async (node: number, method: string, target: string, body?: unknown) => {
      const res = await fetch(nodes[node]!.adminUrl + target, {
        method,
        headers: {
          authorization: `Bearer ${ADMIN_TOKEN}`,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      return { status: res.status, body: (await res.json()) as any };
    };

    // A client, its key and limits made through one node, funded through the other.
    const client = await admin(0, 'POST', '/admin/v1/clients', { name: 'several nodes', currency: 'VES' });
    const clientId = client.body.payload.clientId as string;
    const pair = testKeyPair(0);
    const key = await admin(1, 'POST', `/admin/v1/clients/${clientId}/keys`, { publicKeyPem: pair.publicPem });
    const limits = ['PM', 'CCE'].map((rail) => ({
      rail,
      perPaymentMaxMinor: '100000000',
      dailyMaxMinor: '10000000000',
    }));
    expect((await admin(0, 'PUT', `/admin/v1/keys/${key.body.payload.keyId}/limits`, { limits })).status).toBe(200);
    const funded = await admin(1, 'POST', `/admin/v1/clients/${clientId}/fundings`, {
      amountMinor: FUNDING.toString(),
      reference: 'several-nodes',
    });
    expect(funded.status).toBe(201);

    // A receiver that fails one first attempt in four, so retries cross processes too.
    let n = 0;
    const acknowledged: ReturnType<typeof eventOf>[] = [];
    receiver = await startReceiver((req, res) => {
      const event = eventOf(req);
      if (event.type === 'webhook.verification') return echoChallenge(req, res);
      if (req.headers['x-dispersa-delivery-attempt'] === '1' && ++n % 4 === 0) return void res.writeHead(503).end();
      acknowledged.push(event);
      echoChallenge(req, res);
    });
    const nonces = new NonceCounter();
    const apiOf = (node: number) =>
      createSignedClient(nodes[node]!.baseUrl, key.body.payload.apiKey, pair.privateKey, nonces);
    const put = await apiOf(0).request('PUT', '/v2/webhook', { body: { webhookUrl: receiver.url } });
    expect(put.body.payload.changed).toBe(true);

    // The stream: one payment after another, alternating between the two API processes.
    const ids: string[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      for (const [i, [suffix, destination]] of OUTCOMES.entries()) {
        const amountMinor = `${1000 + round * OUTCOMES.length + i}${suffix}`;
        const res = await apiOf(ids.length % 2).post(
          '/v2/payments',
          { amountMinor, currency: 'VES', ...destination },
          { idempotencyKey: `nodes-${round}-${i}` },
        );
        expect(res.status, JSON.stringify(res.body)).toBe(201);
        ids.push(res.body.payload.intentId);
      }
    }

    // Under review ones are decided by a person, through either node; everything else by the loops.
    const states = async () =>
      (
        await db.query<{ id: string; state: string; sub_status: string | null; amount_minor: string }>(
          'SELECT id, state, sub_status, amount_minor FROM payments WHERE client_id = $1',
          [clientId],
        )
      ).rows;
    const resolved = new Set<string>();
    await waitFor(
      async () => {
        const rows = await states();
        for (const p of rows.filter((r) => r.sub_status === 'under_review' && !resolved.has(r.id))) {
          const outcome = resolved.size % 2 === 0 ? 'completed' : 'failed';
          const r = await admin(resolved.size % 2, 'POST', `/admin/v1/payments/${p.id}/resolve`, {
            outcome,
            note: 'checked with the bank',
          });
          expect(r.status).toBe(200);
          resolved.add(p.id);
        }
        return rows.length === ids.length && rows.every((r) => r.state === 'completed' || r.state === 'failed');
      },
      'every payment final',
      60_000,
    );
    expect(resolved.size).toBe(ROUNDS);

    // No payment reached the bank twice.
    const transfers = await db.query<{ payment_id: string; n: string; resubmissions: string }>(
      `SELECT payment_id, count(*)::text AS n, sum(resubmissions)::text AS resubmissions
         FROM sandbox_bank_transfers GROUP BY payment_id`,
    );
    const dispatched = new Map(transfers.rows.map((t) => [t.payment_id, t]));
    for (const id of ids) {
      expect(dispatched.get(id), id).toMatchObject({ n: '1', resubmissions: '0' });
    }

    // Every event delivered, each once acknowledged, in the order of its payment's transitions.
    await waitFor(
      async () =>
        (
          await db.query<{ n: string }>(
            `SELECT count(*)::text AS n FROM events WHERE client_id = $1 AND delivery_status <> 'delivered'`,
            [clientId],
          )
        ).rows[0]!.n === '0',
      'every event delivered',
      60_000,
    );
    const events = await db.query<{ id: string; payment_id: string | null }>(
      'SELECT id, payment_id FROM events WHERE client_id = $1 ORDER BY seq',
      [clientId],
    );
    // No attempt was sent twice (two processes never claim the same attempt).
    const attempts = receiver.requests
      .filter((r) => eventOf(r).type === 'payment.state_changed')
      .map((r) => `${r.headers['x-dispersa-event-id']}#${r.headers['x-dispersa-delivery-attempt']}`);
    expect(new Set(attempts).size).toBe(attempts.length);
    expect(n).toBeGreaterThan(0);
    // Each event acknowledged exactly once, and each payment's events in the order they were written.
    expect(acknowledged.map((e) => e.id).sort()).toEqual(events.rows.map((e) => e.id).sort());
    expect(events.rows.length).toBeGreaterThan(ids.length);
    for (const id of ids) {
      const written = events.rows.filter((e) => e.payment_id === id).map((e) => e.id);
      expect(
        acknowledged.filter((e) => e.data.payment.intentId === id).map((e) => e.id),
        id,
      ).toEqual(written);
    }

    // The ledger is sound, and the client's balance is its funding less exactly what was paid out.
    expect(await ledgerViolations(db)).toEqual([]);
    const rows = await states();
    const paid = rows.filter((r) => r.state === 'completed').reduce((sum, r) => sum + BigInt(r.amount_minor), 0n);
    const balance = await apiOf(1).get('/v2/balance');
    expect(BigInt(balance.body.payload.availableMinor)).toBe(FUNDING - paid);
    const held = await db.query<{ n: string }>(`SELECT count(*)::text AS n FROM holds WHERE status = 'held'`);
    expect(held.rows[0]!.n).toBe('0');

    // Each process stops cleanly.
    worker.kill('SIGTERM');
    for (const a of apis) a.child.kill('SIGTERM');
    expect(await Promise.all(apis.map((a) => a.exited))).toEqual([0, 0]);
  }, 150_000);
});
