import { type ChildProcess, fork } from 'node:child_process';
import { generateKeyPairSync, randomBytes, sign } from 'node:crypto';
import { availableParallelism } from 'node:os';
import { fileURLToPath, pathToFileURL } from 'node:url';
import pg from 'pg';
import type { Db } from '../src/db/db.ts';
import { createEmbeddedDb } from '../src/db/embedded.ts';
import { migrate } from '../src/db/migrate.ts';
import { createPostgresDb } from '../src/db/postgres.ts';
import { systemClock } from '../src/shared/clock.ts';
import { randomId } from '../src/shared/ids.ts';
import { createDeliveryWorker } from '../src/webhooks/delivery-worker.ts';
import { DELIVERY_BATCH, DELIVERY_CONCURRENCY } from '../src/webhooks/domain.ts';
import { eventBody } from '../src/webhooks/outbox.ts';
import { createSafePost } from '../src/webhooks/safe-post.ts';
import { createSigningKeys } from '../src/webhooks/signing-keys.ts';

/**
 * Webhook delivery throughput: N payment events seeded in the outbox, delivered by the service's own
 * delivery worker (same batch and concurrency as the service, one RS256 signature per attempt) to a
 * receiver in a separate process that verifies every signature. Runs on the embedded database, and also
 * on PostgreSQL when DATABASE_URL is set. Bounded: each run stops at its deadline whatever happened.
 */

export interface DeliveryRun {
  db: 'embedded' | 'postgres';
  events: number;
  delivered: number;
  seconds: number;
  eventsPerSecond: number;
  /** Requests whose signature the receiver verified against the JWKS (must equal delivered). */
  verified: number;
  timedOut: boolean;
}

export interface WebhookDeliveryBench {
  name: 'webhook-delivery';
  /** Signed events per second on the embedded database (the default deployment). */
  eventsPerSecond: number;
  target: number;
  cores: number;
  runs: DeliveryRun[];
  /** Raw RS256-2048 signing rate on this machine: on the event loop, and on libuv's thread pool. */
  signaturesPerSecond: { eventLoop: number; threadPool: number };
}

const RECEIVER = fileURLToPath(new URL('./webhook-receiver.ts', import.meta.url));
const TARGET = 4000;

function sampleBody(id: string, paymentId: string, state: string, previousState: string, at: Date): string {
  const time = at.toISOString();
  return eventBody(id, 'payment.state_changed', false, at, {
    payment: {
      intentId: paymentId,
      id: paymentId,
      state,
      subStatus: null,
      amountMinor: '150000',
      currency: 'VES',
      rail: 'PM',
      beneficiary: '04141234567',
      createdAt: time,
      updatedAt: time,
      failureCode: null,
    },
    previousState,
  });
}

/** Two transitions per payment (processing → completed style), interleaved as a busy day would. */
async function seed(db: Db, events: number): Promise<string> {
  const clientId = randomId('cli');
  await db.query('INSERT INTO clients (id, name, currency) VALUES ($1, $2, $3)', [clientId, 'bench', 'VES']);
  const payments = Array.from({ length: Math.ceil(events / 2) }, () => randomId('pay'));
  const at = new Date();
  const rows: { id: string; paymentId: string; body: string }[] = [];
  for (const [state, previous] of [
    ['processing', 'pending'],
    ['completed', 'processing'],
  ] as const) {
    for (const p of payments) {
      if (rows.length === events) break;
      const id = randomId('evt');
      rows.push({ id, paymentId: p, body: sampleBody(id, p, state, previous, at) });
    }
  }
  for (let i = 0; i < rows.length; i += 1000) {
    const chunk = rows.slice(i, i + 1000);
    await db.query(
      `INSERT INTO events (id, client_id, type, payment_id, body, created_at, next_attempt_at)
       SELECT id, $1, 'payment.state_changed', payment_id, body, $2, $2
       FROM unnest($3::text[], $4::text[], $5::text[]) WITH ORDINALITY AS v(id, payment_id, body, n) ORDER BY n`,
      [clientId, at, chunk.map((r) => r.id), chunk.map((r) => r.paymentId), chunk.map((r) => r.body)],
    );
  }
  return clientId;
}

/** One IPC round trip with the receiver, bounded so a receiver that died cannot hang the bench. */
function request<T>(child: ChildProcess, message: unknown, timeoutMs = 15_000): Promise<T> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('the bench receiver did not answer')), timeoutMs);
    child.once('message', (m) => {
      clearTimeout(timer);
      resolve(m as T);
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`the bench receiver exited (${code})`));
    });
    child.send(message as never);
  });
}

interface RunOptions {
  events: number;
  deadlineMs: number;
  batchSize: number;
  concurrency: number;
}

async function runOn(kind: DeliveryRun['db'], db: Db, options: RunOptions): Promise<DeliveryRun> {
  const { events, deadlineMs } = options;
  await migrate(db);
  const clientId = await seed(db, events);
  const keys = await createSigningKeys({ db, clock: systemClock, environment: 'sandbox', masterKey: randomBytes(32) });
  const receiver = fork(RECEIVER, [], {
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const poster = createSafePost({ allowInsecure: true });
  try {
    const { port } = await request<{ port: number }>(receiver, { jwks: await keys.jwks() });
    const url = `http://127.0.0.1:${port}/hook`;
    await db.query('INSERT INTO webhook_configs (client_id, url, updated_at) VALUES ($1, $2, now())', [clientId, url]);
    const worker = createDeliveryWorker({
      db,
      clock: systemClock,
      signer: keys,
      post: poster.post,
      config: { retryBaseMs: 1000, maxAttempts: 12, batchSize: options.batchSize, concurrency: options.concurrency },
    });
    const started = performance.now();
    const deadline = started + deadlineMs;
    let timedOut = false;
    for (;;) {
      if (performance.now() > deadline) {
        timedOut = true;
        break;
      }
      if ((await worker.processNext()) !== undefined) continue;
      await worker.drain();
      const { rows } = await db.query<{ n: string }>(
        `SELECT count(*) AS n FROM events WHERE delivery_status = 'pending'`,
      );
      if (Number(rows[0]!.n) === 0) break;
    }
    await worker.drain();
    const seconds = (performance.now() - started) / 1000;
    const { rows } = await db.query<{ n: string }>(
      `SELECT count(*) AS n FROM events WHERE delivery_status = 'delivered'`,
    );
    const delivered = Number(rows[0]!.n);
    const report = await request<{ verified: number }>(receiver, 'report');
    return {
      db: kind,
      events,
      delivered,
      seconds: Math.round(seconds * 100) / 100,
      eventsPerSecond: Math.round(delivered / seconds),
      verified: report.verified,
      timedOut,
    };
  } finally {
    await poster.close();
    if (receiver.connected) receiver.kill();
  }
}

async function signingRate(): Promise<{ eventLoop: number; threadPool: number }> {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const data = Buffer.from(sampleBody('evt_x', 'pay_x', 'completed', 'processing', new Date()));
  let n = 0;
  let t0 = performance.now();
  while (performance.now() - t0 < 1000) {
    sign('sha256', data, privateKey);
    n++;
  }
  const eventLoop = Math.round(n / ((performance.now() - t0) / 1000));
  n = 0;
  t0 = performance.now();
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (performance.now() - t0 < 1000) {
        await new Promise((resolve, reject) =>
          sign('sha256', data, privateKey, (err, sig) => (err ? reject(err) : resolve(sig))),
        );
        n++;
      }
    }),
  );
  return { eventLoop, threadPool: Math.round(n / ((performance.now() - t0) / 1000)) };
}

async function withPostgres<T>(baseUrl: string, fn: (db: Db) => Promise<T>): Promise<T> {
  const name = `dispersa_bench_${randomBytes(6).toString('hex')}`;
  const admin = async (sql: string) => {
    const c = new pg.Client({ connectionString: baseUrl });
    await c.connect();
    try {
      await c.query(sql);
    } finally {
      await c.end();
    }
  };
  await admin(`CREATE DATABASE ${name}`);
  const url = new URL(baseUrl);
  url.pathname = `/${name}`;
  const db = createPostgresDb(url.toString(), { max: 8 });
  try {
    return await fn(db);
  } finally {
    await db.close();
    await admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  }
}

export async function benchWebhookDelivery(
  options: {
    events?: number;
    deadlineMs?: number;
    databaseUrl?: string | null;
    /** Default: the service's own settings (domain.ts). */
    batchSize?: number;
    concurrency?: number;
  } = {},
): Promise<WebhookDeliveryBench> {
  const run: RunOptions = {
    events: options.events ?? 20_000,
    deadlineMs: options.deadlineMs ?? 60_000,
    batchSize: options.batchSize ?? DELIVERY_BATCH,
    concurrency: options.concurrency ?? DELIVERY_CONCURRENCY,
  };
  const databaseUrl = options.databaseUrl === undefined ? (process.env['DATABASE_URL'] ?? null) : options.databaseUrl;
  const signaturesPerSecond = await signingRate();
  const runs: DeliveryRun[] = [];
  const embedded = await createEmbeddedDb(null);
  try {
    runs.push(await runOn('embedded', embedded, run));
  } finally {
    await embedded.close();
  }
  if (databaseUrl) runs.push(await withPostgres(databaseUrl, (db) => runOn('postgres', db, run)));
  return {
    name: 'webhook-delivery',
    eventsPerSecond: runs[0]!.eventsPerSecond,
    target: TARGET,
    cores: availableParallelism(),
    runs,
    signaturesPerSecond,
  };
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const events = process.argv[2] === undefined ? undefined : Number(process.argv[2]);
  benchWebhookDelivery({ events }).then(
    (result) => process.stdout.write(`${JSON.stringify(result, null, 2)}\n`),
    (err: unknown) => {
      process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
      process.exit(1);
    },
  );
}
