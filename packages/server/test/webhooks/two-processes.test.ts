import { fork } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/shared/clock.ts';
import { randomId } from '../../src/shared/ids.ts';
import { createSigningKeys } from '../../src/webhooks/signing-keys.ts';
import { createTestDb, type TestDb, usingPostgres } from '../support/test-db.ts';
import { insertPaymentEvent } from './e2e.ts';
import { insertClient, type Receiver, startReceiver } from './helpers.ts';
import { type JwksDocument, verifyWithNodeCrypto } from './independent-verifier.ts';

/**
 * Two delivery workers in two OS processes over one PostgreSQL database (the embedded database belongs to
 * one process, so this runs only with DATABASE_URL; the in-process variant with two connection pools is in
 * delivery-worker.test.ts). No attempt is ever sent twice, every event is delivered once, and each
 * payment's events arrive in order, with failures forcing retries along the way.
 */

const WORKER = fileURLToPath(new URL('./fixtures/delivery-process.ts', import.meta.url));

describe.skipIf(!usingPostgres())('two worker processes', () => {
  let testDb: TestDb;
  let receiver: Receiver;
  const masterKey = randomBytes(32);

  beforeAll(async () => {
    testDb = await createTestDb();
    // Created here so both processes find the one active key and unseal it with the shared master key.
    await createSigningKeys({ db: testDb.db, clock: systemClock, environment: 'sandbox', masterKey });
  });
  afterAll(async () => {
    await receiver?.close();
    await testDb.close();
  });

  it('never deliver one attempt twice, deliver every event, and keep each payment in order', async () => {
    let n = 0;
    const acknowledged: string[] = [];
    receiver = await startReceiver((req, res) => {
      if (req.headers['x-dispersa-delivery-attempt'] === '1' && ++n % 4 === 0) return void res.writeHead(500).end();
      acknowledged.push(String(req.headers['x-dispersa-event-id']));
      res.writeHead(200).end();
    });
    const clientId = await insertClient(testDb.db);
    await testDb.db.query('INSERT INTO webhook_configs (client_id, url, updated_at) VALUES ($1, $2, now())', [
      clientId,
      receiver.url,
    ]);
    const order = new Map<string, string[]>();
    const payments = Array.from({ length: 30 }, () => randomId('pay'));
    await testDb.db.tx(async (q) => {
      for (let round = 0; round < 10; round++) {
        for (const p of payments) {
          const e = await insertPaymentEvent(q, { clientId, paymentId: p, state: 'completed', previousState: null });
          order.set(p, [...(order.get(p) ?? []), e.id]);
        }
      }
    });

    const children = [0, 1].map(() =>
      fork(WORKER, [], {
        execArgv: ['--import', 'tsx'],
        env: {
          ...process.env,
          WORKER_DATABASE_URL: testDb.url!,
          WORKER_MASTER_KEY: masterKey.toString('base64'),
        },
        stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      }),
    );
    const results = children.map(
      (child) =>
        new Promise<{ posts: number }>((resolve, reject) => {
          let report: { posts: number } | undefined;
          child.on('message', (m) => {
            report = m as { posts: number };
          });
          child.on('exit', (code) =>
            code === 0 && report ? resolve(report) : reject(new Error(`worker exit ${code}`)),
          );
        }),
    );
    await Promise.all(children.map((c) => new Promise((r) => (c.connected ? r(null) : c.once('spawn', r)))));
    for (const c of children) c.send('go');
    const reports = await Promise.all(results);

    const sent = receiver.requests.map(
      (r) => `${r.headers['x-dispersa-event-id']}#${r.headers['x-dispersa-delivery-attempt']}`,
    );
    expect(new Set(sent).size).toBe(sent.length);
    const all = [...order.values()].flat();
    expect([...acknowledged].sort()).toEqual([...all].sort());
    const { rows } = await testDb.db.query<{ delivery_status: string; n: string }>(
      'SELECT delivery_status, count(*) AS n FROM events GROUP BY delivery_status',
    );
    expect(rows.map((r) => [r.delivery_status, Number(r.n)])).toEqual([['delivered', all.length]]);
    const { rows: logged } = await testDb.db.query<{ n: string }>('SELECT count(*) AS n FROM webhook_attempts');
    expect(Number(logged[0]!.n)).toBe(sent.length);
    expect(reports[0]!.posts + reports[1]!.posts).toBe(sent.length);
    expect(reports[0]!.posts).toBeGreaterThan(0);
    expect(reports[1]!.posts).toBeGreaterThan(0);
    for (const ids of order.values()) expect(acknowledged.filter((id) => ids.includes(id))).toEqual(ids);

    // Both processes signed with the deployment's key: every request verifies against the served JWKS shape.
    const { rows: keyRows } = await testDb.db.query<{ public_jwk: unknown }>(
      `SELECT public_jwk FROM webhook_signing_keys WHERE status = 'active'`,
    );
    const jwk =
      typeof keyRows[0]!.public_jwk === 'string' ? JSON.parse(keyRows[0]!.public_jwk) : keyRows[0]!.public_jwk;
    const jwks: JwksDocument = { keys: [jwk] };
    for (const r of receiver.requests) {
      expect(verifyWithNodeCrypto(r.body, String(r.headers['x-dispersa-signature']), jwks)).not.toBeNull();
    }
  });
});
