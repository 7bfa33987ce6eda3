import { randomBytes } from 'node:crypto';
import { compactVerify, createLocalJWKSet } from 'jose';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Db } from '../../src/db/db.ts';
import { ManualClock } from '../../src/shared/clock.ts';
import { randomId } from '../../src/shared/ids.ts';
import { createDeliveryWorker, type DeliveryConfig, type DeliveryWorker } from '../../src/webhooks/delivery-worker.ts';
import { type Jwks, lookupInJwks, verifyDetached } from '../../src/webhooks/jws.ts';
import { createSafePost, type PostFn, type SafePoster } from '../../src/webhooks/safe-post.ts';
import { createSigningKeys, type SigningKeys } from '../../src/webhooks/signing-keys.ts';
import { withQuery } from '../support/test-db.ts';
import { waitFor } from './e2e.ts';
import {
  insertClient,
  insertEvent,
  openTestDb,
  type ReceivedRequest,
  type Receiver,
  startReceiver,
  type TestEvent,
  type WebhookTestDb,
} from './helpers.ts';

let t: WebhookTestDb;
let keys: SigningKeys;
let receiver: Receiver;
let poster: SafePoster;
let clock: ManualClock;
let clientId: string;
let silentClientId: string;

/** The client's active webhook URL (webhook_configs, as a proven change leaves it); null: none. */
async function setUrl(client: string, url: string | null): Promise<void> {
  await t.db.query(
    `INSERT INTO webhook_configs (client_id, url, updated_at) VALUES ($1, $2, now())
     ON CONFLICT (client_id) DO UPDATE SET url = EXCLUDED.url`,
    [client, url],
  );
}

beforeAll(async () => {
  t = await openTestDb();
  clock = new ManualClock(Date.UTC(2026, 0, 1));
  keys = await createSigningKeys({ db: t.db, clock, environment: 'sandbox', masterKey: randomBytes(32) });
  receiver = await startReceiver();
  poster = createSafePost({ allowInsecure: true, timeoutMs: 2000 });
  clientId = await insertClient(t.db, 'with webhook');
  silentClientId = await insertClient(t.db, 'without webhook');
});
afterAll(async () => {
  await poster.close();
  await receiver.close();
  await t.close();
});
beforeEach(async () => {
  await t.db.query('DELETE FROM webhook_attempts');
  await t.db.query('DELETE FROM events');
  clock.set(new Date(Date.UTC(2026, 0, 1)));
  await t.db.query('DELETE FROM webhook_configs');
  await setUrl(clientId, receiver.url);
  receiver.requests.length = 0;
});
afterEach(() => {
  receiver.setHandler((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{}'));
});

function worker(config: Partial<DeliveryConfig> = {}, options: { db?: Db; post?: PostFn } = {}): DeliveryWorker {
  return createDeliveryWorker({
    db: options.db ?? t.db,
    clock,
    signer: keys,
    post: options.post ?? poster.post,
    config: { retryBaseMs: 1000, maxAttempts: 4, ...config },
    // No jitter: the n-th retry waits exactly half of base × 2^(n−1).
    random: () => 0,
  });
}

async function eventRow(id: string) {
  const { rows } = await t.db.query<{
    delivery_status: string;
    attempts: number;
    next_attempt_at: Date;
    last_error: string | null;
    delivered_at: Date | null;
  }>('SELECT delivery_status, attempts, next_attempt_at, last_error, delivered_at FROM events WHERE id = $1', [id]);
  return rows[0]!;
}

function failFirst(n: number): void {
  let left = n;
  receiver.setHandler((_req, res) => {
    if (left-- > 0) res.writeHead(500).end('not yet');
    else res.writeHead(200).end('{}');
  });
}

async function verifies(req: ReceivedRequest, jwks: Jwks): Promise<boolean> {
  const signature = String(req.headers['x-dispersa-signature']);
  const ours = verifyDetached(req.body, signature, lookupInJwks(jwks)).ok;
  const [h, , s] = signature.split('.');
  const theirs = await compactVerify(`${h}.${req.body.toString('base64url')}.${s}`, createLocalJWKSet(jwks)).then(
    () => true,
    () => false,
  );
  return ours && theirs;
}

describe('delivery worker', () => {
  it('delivers a due event: exact body, contract headers, a signature the JWKS verifies, recorded', async () => {
    const e = await insertEvent(t.db, { clientId, dueAt: clock.now() });
    const w = worker();
    expect(await w.processNext()).toBe(e.id);
    expect(await w.processNext()).toBeUndefined();

    expect(receiver.requests).toHaveLength(1);
    const [req] = receiver.requests;
    expect(req!.body.toString('utf8')).toBe(e.body);
    expect(req!.headers['x-dispersa-event-id']).toBe(e.id);
    expect(req!.headers['x-dispersa-delivery-attempt']).toBe('1');
    expect(req!.headers['content-type']).toBe('application/json');
    expect(await verifies(req!, await keys.jwks())).toBe(true);
    const iat = JSON.parse(
      Buffer.from(String(req!.headers['x-dispersa-signature']).split('.')[0]!, 'base64url').toString(),
    );
    expect(iat).toEqual({
      alg: 'RS256',
      kid: (await keys.activeSigner()).kid,
      iat: Date.UTC(2026, 0, 1) / 1000,
    });

    const row = await eventRow(e.id);
    expect(row).toMatchObject({ delivery_status: 'delivered', attempts: 1, last_error: null });
    expect(new Date(row.delivered_at!).getTime()).toBe(clock.now().getTime());
    const list = await w.listAttempts({ limit: 10 });
    expect(list.ok && list.items).toEqual([
      expect.objectContaining({
        eventId: e.id,
        clientId,
        url: receiver.url,
        attempt: 1,
        statusCode: 200,
        error: null,
      }),
    ]);
  });

  it('does not take an event before it is due', async () => {
    const e = await insertEvent(t.db, { clientId, dueAt: new Date(clock.now().getTime() + 5000) });
    const w = worker();
    expect(await w.processNext()).toBeUndefined();
    clock.advance(5000);
    expect(await w.processNext()).toBe(e.id);
  });

  it('retries with the same event id, increasing attempt numbers and doubling back-off', async () => {
    failFirst(2);
    const e = await insertEvent(t.db, { clientId, dueAt: clock.now() });
    const w = worker();
    const t0 = clock.now().getTime();

    expect(await w.processNext()).toBe(e.id);
    let row = await eventRow(e.id);
    expect(row).toMatchObject({ delivery_status: 'pending', attempts: 1, last_error: 'HTTP 500' });
    expect(new Date(row.next_attempt_at).getTime()).toBe(t0 + 500);
    clock.advance(499);
    expect(await w.processNext()).toBeUndefined();
    clock.advance(1);
    expect(await w.processNext()).toBe(e.id);
    row = await eventRow(e.id);
    expect(new Date(row.next_attempt_at).getTime()).toBe(t0 + 500 + 1000);
    clock.advance(1000);
    expect(await w.processNext()).toBe(e.id);
    expect(await eventRow(e.id)).toMatchObject({
      delivery_status: 'delivered',
      attempts: 3,
      last_error: null,
    });

    expect(receiver.requests.map((r) => r.headers['x-dispersa-event-id'])).toEqual([e.id, e.id, e.id]);
    expect(receiver.requests.map((r) => r.headers['x-dispersa-delivery-attempt'])).toEqual(['1', '2', '3']);
    for (const r of receiver.requests) expect(r.body.toString()).toBe(e.body);
    const list = await w.listAttempts({ limit: 10 });
    expect(list.ok && list.items.map((a) => [a.attempt, a.statusCode, a.error])).toEqual([
      [3, 200, null],
      [2, 500, 'HTTP 500'],
      [1, 500, 'HTTP 500'],
    ]);
  });

  it('dead-letters after maxAttempts; redeliver puts it back and numbering continues', async () => {
    receiver.setHandler((_req, res) => res.writeHead(500).end());
    const e = await insertEvent(t.db, { clientId, dueAt: clock.now() });
    const w = worker({ maxAttempts: 3 });
    for (let i = 0; i < 3; i++) {
      expect(await w.processNext()).toBe(e.id);
      clock.advance(3_600_000);
    }
    expect(await eventRow(e.id)).toMatchObject({
      delivery_status: 'dead',
      attempts: 3,
      last_error: 'HTTP 500',
    });
    expect(await w.processNext()).toBeUndefined();
    expect(receiver.requests).toHaveLength(3);

    expect(await w.redeliver(randomId('evt'))).toEqual({ ok: false, error: 'not_found' });
    expect(await w.redeliver(e.id)).toEqual({ ok: true });
    expect(await w.redeliver(e.id)).toEqual({ ok: false, error: 'not_dead' });
    receiver.setHandler((_req, res) => res.writeHead(200).end());
    expect(await w.processNext()).toBe(e.id);
    expect(receiver.requests.map((r) => r.headers['x-dispersa-delivery-attempt'])).toEqual(['1', '2', '3', '4']);
    expect(await eventRow(e.id)).toMatchObject({ delivery_status: 'delivered', attempts: 4 });
  });

  it('a redelivered event that fails again is dead again at once', async () => {
    receiver.setHandler((_req, res) => res.writeHead(500).end());
    const e = await insertEvent(t.db, { clientId, dueAt: clock.now() });
    const w = worker({ maxAttempts: 1 });
    await w.processNext();
    expect((await eventRow(e.id)).delivery_status).toBe('dead');
    await w.redeliver(e.id);
    await w.processNext();
    expect(await eventRow(e.id)).toMatchObject({ delivery_status: 'dead', attempts: 2 });
  });

  it('marks an event of a client without a webhook no_webhook, with no attempt and no request', async () => {
    const e = await insertEvent(t.db, { clientId: silentClientId, dueAt: clock.now() });
    const w = worker();
    expect(await w.processNext()).toBe(e.id);
    expect(await eventRow(e.id)).toMatchObject({ delivery_status: 'no_webhook', attempts: 0 });
    expect(receiver.requests).toHaveLength(0);
    expect(await w.listAttempts({ limit: 10 })).toEqual({ ok: true, items: [], nextCursor: null });
  });

  it('delivers the events of one payment in order; other payments are not held up', async () => {
    const paymentP = randomId('pay');
    const e1 = await insertEvent(t.db, {
      clientId,
      paymentId: paymentP,
      dueAt: clock.now(),
      state: 'unknown',
    });
    const e2 = await insertEvent(t.db, {
      clientId,
      paymentId: paymentP,
      dueAt: clock.now(),
      state: 'completed',
    });
    const q1 = await insertEvent(t.db, { clientId, dueAt: clock.now() });
    failFirst(1);
    const w = worker();
    expect(await w.processNext()).toBe(e1.id);
    // e1 waits for its retry; e2 must wait behind it; q1 belongs to another payment.
    expect(await w.processNext()).toBe(q1.id);
    expect(await w.processNext()).toBeUndefined();
    clock.advance(500);
    expect(await w.processNext()).toBe(e1.id);
    expect(await w.processNext()).toBe(e2.id);
    expect(receiver.requests.map((r) => r.headers['x-dispersa-event-id'])).toEqual([e1.id, q1.id, e1.id, e2.id]);
  });

  it('a dead-lettered event does not hold back the later events of its payment', async () => {
    const paymentP = randomId('pay');
    const e1 = await insertEvent(t.db, { clientId, paymentId: paymentP, dueAt: clock.now() });
    const e2 = await insertEvent(t.db, { clientId, paymentId: paymentP, dueAt: clock.now() });
    failFirst(1);
    const w = worker({ maxAttempts: 1 });
    expect(await w.processNext()).toBe(e1.id);
    expect((await eventRow(e1.id)).delivery_status).toBe('dead');
    expect(await w.processNext()).toBe(e2.id);
    expect((await eventRow(e2.id)).delivery_status).toBe('delivered');
  });

  it('records a refused target as a failed attempt without a status code', async () => {
    const connectionsBefore = receiver.connections;
    const guarded = createSafePost({
      allowInsecure: false,
      resolve: async () => [{ address: '127.0.0.1', family: 4 }],
    });
    try {
      await setUrl(clientId, `https://evil.test:${receiver.port}/hook`);
      const e = await insertEvent(t.db, { clientId, dueAt: clock.now() });
      const w = worker({}, { post: guarded.post });
      expect(await w.processNext()).toBe(e.id);
      const list = await w.listAttempts({ clientId, limit: 1 });
      expect(list.ok && list.items[0]).toMatchObject({
        statusCode: null,
        error: expect.stringMatching(/127\.0\.0\.1/),
      });
      expect((await eventRow(e.id)).delivery_status).toBe('pending');
      expect(receiver.connections).toBe(connectionsBefore);
    } finally {
      await guarded.close();
    }
  });

  it('a claim whose worker stalls past its lease is taken over with the next attempt number', async () => {
    const e = await insertEvent(t.db, { clientId, dueAt: clock.now() });
    let release!: () => void;
    const gate = new Promise<void>((r) => {
      release = r;
    });
    let claimed!: () => void;
    const claimedSignal = new Promise<void>((r) => {
      claimed = r;
    });
    const stalled = worker(
      { leaseMs: 60_000 },
      {
        post: async (ev) => {
          claimed();
          await gate;
          return poster.post(ev);
        },
      },
    );
    const other = worker({ leaseMs: 60_000 }, { db: t.openAnother() ?? t.db });

    const first = stalled.processNext();
    await claimedSignal;
    // The post is outside any transaction: the other worker is not blocked, only kept off by the lease.
    expect(await other.processNext()).toBeUndefined();
    clock.advance(60_000);
    expect(await other.processNext()).toBe(e.id);
    expect(await eventRow(e.id)).toMatchObject({ delivery_status: 'delivered', attempts: 2 });
    release();
    expect(await first).toBe(e.id);
    // The late first attempt is logged, but does not overwrite the outcome of the newer claim.
    expect(await eventRow(e.id)).toMatchObject({ delivery_status: 'delivered', attempts: 2 });
    expect(receiver.requests.map((r) => r.headers['x-dispersa-delivery-attempt'])).toEqual(['2', '1']);
    const list = await other.listAttempts({ limit: 10 });
    expect(list.ok && list.items.map((a) => a.attempt).sort()).toEqual([1, 2]);
  });

  it('pages the attempt log newest first and filters by client', async () => {
    receiver.setHandler((_req, res) => res.writeHead(500).end());
    const w = worker({ maxAttempts: 10 });
    const e = await insertEvent(t.db, { clientId, dueAt: clock.now() });
    for (let i = 0; i < 5; i++) {
      await w.processNext();
      clock.advance(3_600_000);
    }
    const page1 = await w.listAttempts({ clientId, limit: 2 });
    if (!page1.ok) throw new Error('page 1');
    expect(page1.items.map((a) => a.attempt)).toEqual([5, 4]);
    const page2 = await w.listAttempts({ clientId, limit: 2, cursor: page1.nextCursor! });
    if (!page2.ok) throw new Error('page 2');
    expect(page2.items.map((a) => a.attempt)).toEqual([3, 2]);
    const page3 = await w.listAttempts({ clientId, limit: 2, cursor: page2.nextCursor! });
    expect(page3.ok && page3.items.map((a) => a.attempt)).toEqual([1]);
    expect(page3.ok && page3.nextCursor).toBeNull();
    expect(page1.items[0]!.eventId).toBe(e.id);
    expect(await w.listAttempts({ clientId: silentClientId, limit: 10 })).toMatchObject({
      ok: true,
      items: [],
    });
    expect(await w.listAttempts({ limit: 1000 })).toMatchObject({ ok: true });
    expect(await w.listAttempts({ limit: 10, cursor: 'abc' })).toEqual({
      ok: false,
      error: 'invalid_cursor',
    });
    expect(await w.listAttempts({ limit: 10, cursor: '-1' })).toEqual({ ok: false, error: 'invalid_cursor' });
  });
});

describe('two delivery workers over one database', () => {
  it('never send one attempt twice, deliver each event once, and keep each payment in order', async () => {
    const payments = Array.from({ length: 8 }, () => randomId('pay'));
    const order = new Map<string, string[]>();
    const inserted = [];
    for (let round = 0; round < 4; round++) {
      for (const p of payments) {
        const ev = await insertEvent(t.db, { clientId, paymentId: p, dueAt: clock.now() });
        inserted.push(ev.id);
        order.set(p, [...(order.get(p) ?? []), ev.id]);
      }
    }
    const paymentOf = new Map<string, string>();
    for (const [p, ids] of order) for (const id of ids) paymentOf.set(id, p);

    // Every third request fails, so retries and back-off race as well.
    let n = 0;
    const acknowledged: string[] = [];
    receiver.setHandler((req, res) => {
      if (++n % 3 === 0) return void res.writeHead(503).end();
      acknowledged.push(String(req.headers['x-dispersa-event-id']));
      res.writeHead(200).end();
    });

    const posts = { a: 0, b: 0 };
    const counted =
      (name: 'a' | 'b'): PostFn =>
      (ev) => {
        posts[name]++;
        return poster.post(ev);
      };
    const a = worker({ maxAttempts: 50 }, { post: counted('a') });
    const b = worker({ maxAttempts: 50 }, { db: t.openAnother() ?? t.db, post: counted('b') });
    const drain = async (w: DeliveryWorker) => {
      while ((await w.processNext()) !== undefined) {}
    };
    for (let round = 0; round < 40; round++) {
      await Promise.all([drain(a), drain(b), drain(a), drain(b)]);
      const { rows } = await t.db.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM events WHERE delivery_status = 'pending'`,
      );
      if (Number(rows[0]!.n) === 0) break;
      clock.advance(3_600_000);
    }

    const { rows } = await t.db.query<{ delivery_status: string; n: number }>(
      'SELECT delivery_status, count(*)::int AS n FROM events GROUP BY delivery_status',
    );
    expect(rows.map((r) => [r.delivery_status, Number(r.n)])).toEqual([['delivered', inserted.length]]);

    const sent = receiver.requests.map(
      (r) => `${r.headers['x-dispersa-event-id']}#${r.headers['x-dispersa-delivery-attempt']}`,
    );
    expect(new Set(sent).size).toBe(sent.length);
    expect([...acknowledged].sort()).toEqual([...inserted].sort());
    const { rows: attempts } = await t.db.query<{ n: number }>('SELECT count(*)::int AS n FROM webhook_attempts');
    expect(Number(attempts[0]!.n)).toBe(sent.length);

    expect(posts.a).toBeGreaterThan(0);
    expect(posts.b).toBeGreaterThan(0);
    for (const [p, ids] of order) {
      expect(acknowledged.filter((id) => paymentOf.get(id) === p)).toEqual(ids);
    }
  });
});

describe('pipelined delivery (the service runs it this way)', () => {
  function pipelined(post: PostFn, config: Partial<DeliveryConfig> = {}): DeliveryWorker {
    return worker({ batchSize: 4, concurrency: 8, ...config }, { post });
  }

  it('keeps at most `concurrency` posts in flight and claims whole batches, never two events of a payment', async () => {
    const payments = Array.from({ length: 10 }, () => randomId('pay'));
    for (let round = 0; round < 3; round++) {
      for (const p of payments) await insertEvent(t.db, { clientId, paymentId: p, dueAt: clock.now() });
    }
    let inFlight = 0;
    let peak = 0;
    let open = false;
    const blocked: (() => void)[] = [];
    const inFlightPayments = new Set<string>();
    const overlaps: string[] = [];
    const w = pipelined(async (ev) => {
      const payment = JSON.parse(String(ev.body)).data.payment.id as string;
      if (inFlightPayments.has(payment)) overlaps.push(payment);
      inFlightPayments.add(payment);
      peak = Math.max(peak, ++inFlight);
      if (!open) await new Promise<void>((r) => blocked.push(r));
      inFlight--;
      inFlightPayments.delete(payment);
      return poster.post(ev);
    });
    // Two claims of a whole batch each fill the eight slots; the posts hang until released.
    expect(await w.processNext()).toBeDefined();
    expect(await w.processNext()).toBeDefined();
    for (let i = 0; i < 100 && blocked.length < 8; i++) await new Promise((r) => setTimeout(r, 10));
    expect(blocked).toHaveLength(8);
    // No slot: the next step claims nothing (it gives up after its bounded wait).
    expect(await w.processNext()).toBeUndefined();
    const { rows: claimed } = await t.db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM events WHERE attempts > 0',
    );
    expect(Number(claimed[0]!.n)).toBe(8);

    open = true;
    for (const release of blocked) release();
    for (let i = 0; i < 200; i++) {
      if ((await w.processNext()) === undefined) {
        await w.drain();
        const { rows } = await t.db.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM events WHERE delivery_status = 'pending'`,
        );
        if (Number(rows[0]!.n) === 0) break;
      }
    }
    await w.drain();
    expect(overlaps).toEqual([]);
    expect(peak).toBe(8);
    expect(receiver.requests).toHaveLength(30);
    const { rows } = await t.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM events WHERE delivery_status = 'delivered'`,
    );
    expect(Number(rows[0]!.n)).toBe(30);
  });

  it('one slow receiver holds one slot; the other events keep flowing past it', async () => {
    const slowClient = await insertClient(t.db, 'slow receiver');
    await setUrl(slowClient, `${receiver.url}?slow`);
    let release!: () => void;
    const gate = new Promise<void>((r) => {
      release = r;
    });
    const slow = await insertEvent(t.db, { clientId: slowClient, dueAt: clock.now() });
    const fast: TestEvent[] = [];
    for (let i = 0; i < 12; i++) fast.push(await insertEvent(t.db, { clientId, dueAt: clock.now() }));
    const w = pipelined(async (ev) => {
      if (ev.url.endsWith('?slow')) await gate;
      return poster.post(ev);
    });
    for (let i = 0; i < 20; i++) await w.processNext();
    await waitFor(async () => {
      for (const e of fast) if ((await eventRow(e.id)).delivery_status !== 'delivered') return false;
      return true;
    }, 'every other event delivered while the slow one hangs');
    expect((await eventRow(slow.id)).delivery_status).toBe('pending');
    release();
    await w.drain();
    expect((await eventRow(slow.id)).delivery_status).toBe('delivered');
  });

  it('writes the outcomes of a burst of answers together, not one statement per event', async () => {
    for (let i = 0; i < 20; i++) await insertEvent(t.db, { clientId, dueAt: clock.now() });
    let recordStatements = 0;
    const counting: Db = {
      ...t.db,
      query: (sql, params) => {
        if (sql.includes('INSERT INTO webhook_attempts')) recordStatements++;
        return t.db.query(sql, params);
      },
    };
    // The receiver answers all twenty at once, as a burst.
    const held: (() => void)[] = [];
    receiver.setHandler((_req, res) => {
      held.push(() => res.writeHead(200).end());
      if (held.length === 20) for (const answer of held) answer();
    });
    const w = createDeliveryWorker({
      db: counting,
      clock,
      signer: keys,
      post: poster.post,
      config: { retryBaseMs: 1000, maxAttempts: 4, batchSize: 20 },
    });
    await w.processNext();
    expect(receiver.requests).toHaveLength(20);
    expect(recordStatements).toBeLessThan(10);
    const { rows } = await t.db.query<{ n: number }>('SELECT count(*)::int AS n FROM webhook_attempts');
    expect(Number(rows[0]!.n)).toBe(20);
  });
});

describe('a claimed batch', () => {
  it('settles the events of a client without a webhook in the claim itself, and delivers the others', async () => {
    const delivered: TestEvent[] = [];
    for (let i = 0; i < 3; i++) delivered.push(await insertEvent(t.db, { clientId, dueAt: clock.now() }));
    const silent: TestEvent[] = [];
    for (let i = 0; i < 2; i++) silent.push(await insertEvent(t.db, { clientId: silentClientId, dueAt: clock.now() }));
    const statements: string[] = [];
    const counting = withQuery(t.db, (sql, params) => {
      statements.push(sql);
      return t.db.query(sql, params);
    });
    await worker({ batchSize: 10 }, { db: counting }).processNext();
    expect(receiver.requests).toHaveLength(3);
    const { rows } = await t.db.query<{ id: string; delivery_status: string; attempts: number; last_error: string }>(
      'SELECT id, delivery_status, attempts, last_error FROM events',
    );
    const byId = new Map(rows.map((r) => [r.id, r]));
    for (const e of delivered) expect(byId.get(e.id)).toMatchObject({ delivery_status: 'delivered', attempts: 1 });
    // Nothing was attempted: no attempt number, and no attempt row.
    for (const e of silent) {
      expect(byId.get(e.id)).toMatchObject({
        delivery_status: 'no_webhook',
        attempts: 0,
        last_error: 'no webhook URL',
      });
    }
    const attempts = await t.db.query<{ event_id: string }>('SELECT event_id FROM webhook_attempts');
    expect(attempts.rows.map((r) => r.event_id).sort()).toEqual(delivered.map((e) => e.id).sort());
    // One claim, and no statement of its own to settle the silent events.
    expect(statements.filter((sql) => sql.includes('claim_due_events('))).toHaveLength(1);
    expect(statements.filter((sql) => sql.includes('no_webhook'))).toEqual([]);
  });
});

describe('the claim with a backlog', () => {
  // However the planner sees the events table (a fresh database has no statistics, the embedded one never gathers
  // them on its own), a claim reads about as many events as it takes, not the whole backlog.
  it('reads a bounded number of events, not every pending one', async () => {
    await t.db.query(
      `INSERT INTO events (id, client_id, type, payment_id, body, created_at, next_attempt_at)
       SELECT 'evt_backlog' || g, $1, 'payment.state_changed', 'pay_backlog' || g, '{}', $2, $2
       FROM generate_series(1, 2000) g`,
      [silentClientId, clock.now()],
    );
    const reads: number[] = [];
    const watched = withQuery(t.db, async (sql, params) => {
      if (!sql.includes('claim_due_events(')) return t.db.query(sql, params);
      return t.db.tx(async (q) => {
        const fetched = async () => {
          const { rows } = await q.query<{ n: string }>(
            `SELECT (coalesce(idx_tup_fetch, 0) + seq_tup_read)::text AS n
             FROM pg_stat_xact_user_tables WHERE relname = 'events'`,
          );
          return Number(rows[0]?.n ?? 0);
        };
        const before = await fetched();
        const result = await q.query(sql, params);
        reads.push((await fetched()) - before);
        return result as never;
      });
    });
    await worker({ batchSize: 10 }, { db: watched }).processNext();
    expect(reads).toHaveLength(1);
    expect(reads[0]).toBeGreaterThanOrEqual(10);
    expect(reads[0]).toBeLessThan(100);
  });
});
