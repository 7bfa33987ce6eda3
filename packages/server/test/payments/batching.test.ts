import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../src/db/db.ts';
import { scrape } from '../support/metrics.ts';
import { balanceOf, CCE, CCE_SAME_BANK, newKey, PM } from '../support/payments.ts';
import type { Answer } from '../support/signed-client.ts';
import { withQuery } from '../support/test-db.ts';
import type { TestClient, TestServer } from '../support/test-server.ts';
import { startWrappedServer } from '../support/wrapped-server.ts';

/**
 * Batching keeps every guarantee: requests that share a batch get exactly the answers they get one at a time, and
 * a batch that cannot commit answers 5xx to each of its requests, every one of which a retry with the same
 * idempotency key repairs.
 */

/**
 * A Db that can hold the next reserving step's lane for a while after it committed (so the requests behind it
 * queue into one batch, as under load) and make a later one fail: it runs in a transaction that is rolled back, as
 * a statement whose commit failed leaves nothing behind.
 */
function withCommitFault(inner: Db): Db & {
  holdNext(ms: number, afterKeyReads?: number): Promise<void>;
  failNth(n: number): void;
  failedBatch(): number;
} {
  let holdMs = 0;
  let holdForReads = 0;
  let keyReads = 0;
  let keyRead: () => void = () => {};
  let holding: () => void = () => {};
  let failIn = 0;
  let failed = 0;
  const query: Db['query'] = async (sql, params) => {
    // A step that reserves (payments/advance.ts: alone, or with bookings on PostgreSQL).
    const joint = sql.includes('advance_payments(');
    if (!joint && !sql.includes('reserve_payments(')) {
      const result = await inner.query(sql, params);
      if (sql.includes('WHERE k.key_hash = $1')) {
        keyReads++;
        keyRead();
      }
      return result as never;
    }
    const items = (JSON.parse(String(params![0])) as unknown[]).length;
    if (failIn > 0 && --failIn === 0) {
      // Bookings that shared the step fail with it.
      failed = items + (joint ? (JSON.parse(String(params![2])) as unknown[]).length : 0);
      return inner.tx(async (q) => {
        await q.query(sql, params);
        throw new Error('injected: the commit of this batch failed');
      });
    }
    const result = await inner.query(sql, params);
    // Held after the commit: the lane stays busy while the database serves the requests queueing behind it.
    if (holdMs > 0) {
      const ms = holdMs;
      const reads = holdForReads;
      holdMs = 0;
      holdForReads = 0;
      keyReads = 0;
      holding();
      // Until the requests behind have read their keys (on a loaded machine that can take longer than any fixed
      // wait), then long enough for them to verify and join the queue.
      const deadline = Date.now() + 30_000;
      while (keyReads < reads && Date.now() < deadline) {
        await new Promise<void>((r) => {
          keyRead = r;
          setTimeout(r, 100);
        });
      }
      await new Promise((r) => setTimeout(r, ms));
    }
    return result as never;
  };
  return {
    ...withQuery(inner, query),
    /**
     * Resolves once the next reserving step has committed and its hold begins; the hold lasts until afterKeyReads
     * API keys have been read from the database since, then ms more.
     */
    holdNext(ms, afterKeyReads = 0) {
      holdMs = ms;
      holdForReads = afterKeyReads;
      return new Promise<void>((resolve) => {
        holding = resolve;
      });
    },
    failNth(n) {
      failIn = n;
    },
    failedBatch: () => failed,
  };
}

let server: TestServer;
let db: ReturnType<typeof withCommitFault>;

/** The statements the server ran, in order (its own queries only: not those inside a transaction). */
const statements: string[] = [];

let close: () => Promise<void>;
beforeAll(async () => {
  ({ server, close } = await startWrappedServer((inner) => {
    db = withCommitFault(
      withQuery(inner, (sql, params) => {
        statements.push(sql);
        return inner.query(sql, params);
      }),
    );
    return db;
  }));
});
afterAll(() => close());

/** One client with a key per request (writes of one key go one at a time), funded the same way each time. */
async function clientWithKeys(keys: number): Promise<TestClient[]> {
  const first = await server.newClient({ fundMinor: 1_000_000n });
  const all = [first];
  for (let i = 1; i < keys; i++) all.push(await server.addKey(first.clientId, 3 + i));
  return all;
}

type Request = (c: TestClient, shared: { replayKey: string }) => Promise<Answer>;

const post = (c: TestClient, body: Record<string, unknown>, key = newKey('b'), nonce?: string) =>
  c.api.post('/v2/payments', { currency: 'VES', ...body }, { idempotencyKey: key, ...(nonce && { nonce }) });

/** Every kind of answer, none depending on the order of the others (amounts fit the balance together). */
const MIX: [string, Request][] = [
  ['PM completed', (c) => post(c, { amountMinor: '10000', ...PM })],
  ['CCE same bank completed', (c) => post(c, { amountMinor: '20000', ...CCE_SAME_BANK })],
  ['CCE pending', (c) => post(c, { amountMinor: '30000', ...CCE })],
  ['PM 01 declined by the bank', (c) => post(c, { amountMinor: '10001', ...PM })],
  ['PM 02 unknown', (c) => post(c, { amountMinor: '10002', ...PM })],
  ['PM 05 wrong beneficiary', (c) => post(c, { amountMinor: '10005', ...PM })],
  ['replay', (c, s) => post(c, { amountMinor: '11100', ...PM }, s.replayKey)],
  ['changed content on a used key', (c, s) => post(c, { amountMinor: '11200', ...PM }, s.replayKey)],
  ['overdraft', (c) => post(c, { amountMinor: '5000000', ...PM })],
  ['over the per-payment limit', (c) => post(c, { amountMinor: '200000000000', ...PM })],
  ['invalid body', (c) => post(c, { amountMinor: '-1', ...PM })],
  ['PM completed again', (c) => post(c, { amountMinor: '12300', ...PM })],
];

function shapeOf(a: Answer): unknown {
  if (a.status >= 400) return { status: a.status, error: a.body.error };
  const p = a.body.payload;
  return { status: a.status, state: p.state, subStatus: p.subStatus, failureCode: p.failureCode };
}

async function runMix(
  concurrently: boolean,
): Promise<{ answers: unknown[]; raw: Answer[]; clients: TestClient[]; balance: bigint }> {
  const clients = await clientWithKeys(MIX.length);
  const replayKey = newKey('replayed');
  const original = await post(clients[0]!, { amountMinor: '11100', ...PM }, replayKey);
  expect(original.status).toBe(201);
  const send = (i: number) => MIX[i]![1](clients[i]!, { replayKey });
  let answers: Answer[];
  if (concurrently) {
    // The first request's batch is held open, so the others arrive while it is in flight and share the next.
    void db.holdNext(1500);
    answers = await Promise.all(MIX.map((_, i) => send(i)));
  } else {
    answers = [];
    for (let i = 0; i < MIX.length; i++) answers.push(await send(i));
  }
  return { answers: answers.map(shapeOf), raw: answers, clients, balance: await balanceOf(clients[0]!) };
}

describe('a batch mixing every kind of request', () => {
  it('gives each request exactly the answer it gets alone', async () => {
    const alone = await runMix(false);
    const before = await scrape(server.adminUrl);
    const together = await runMix(true);
    const after = await scrape(server.adminUrl);

    // Every payment a 2xx answered with is exactly what the database holds.
    for (const [i, a] of together.raw.entries()) {
      if (a.status < 300) {
        const read = await together.clients[i]!.api.get(`/v2/payments/${a.body.payload.id}`);
        if (read.body.payload.state === a.body.payload.state)
          expect(read.body.payload, MIX[i]![0]).toEqual(a.body.payload);
      }
    }
    const named = (answers: unknown[]) => Object.fromEntries(MIX.map(([name], i) => [name, answers[i]]));
    expect(named(together.answers)).toEqual(named(alone.answers));
    expect(together.balance).toBe(alone.balance);
    // The answers must not be trivially alike: every kind shows up.
    const statuses = new Set((alone.answers as { status: number }[]).map((a) => a.status));
    expect([...statuses].sort()).toEqual([200, 201, 400, 409, 422]);
    // And the requests did share batches: more requests reserved than batches run.
    const requests =
      (after.value('dispersa_payment_batch_size_sum', { phase: 'reserve' }) ?? 0) -
      (before.value('dispersa_payment_batch_size_sum', { phase: 'reserve' }) ?? 0);
    const batches =
      (after.value('dispersa_payment_batch_size_count', { phase: 'reserve' }) ?? 0) -
      (before.value('dispersa_payment_batch_size_count', { phase: 'reserve' }) ?? 0);
    expect(requests).toBeGreaterThan(batches);
  });
});

describe('a batch whose commit fails', () => {
  it('answers 5xx to each of its requests, and a retry with the same key repairs each', async () => {
    const clients = await clientWithKeys(8);
    const keys = clients.map(() => newKey('fault'));
    const nonces = clients.map((c) => c.api.nonces.take());
    const body = { amountMinor: '25000', ...PM };
    // The first request's batch is held open while the others queue (each reads its new key first); the second,
    // carrying them, fails at commit.
    const held = db.holdNext(500, clients.length - 1);
    db.failNth(2);
    const holder = post(clients[0]!, body, keys[0], nonces[0]);
    await held;
    // Sent while the hold lasts, so that they queue behind it (not once the holder has its answer).
    const others = clients.slice(1).map((c, i) => post(c, body, keys[i + 1], nonces[i + 1]));
    const first = [await holder, ...(await Promise.all(others))];
    db.failNth(0);
    const failed = first.flatMap((a, i) => (a.status >= 500 ? [i] : []));
    expect(failed.length).toBe(db.failedBatch());
    expect(failed.length).toBeGreaterThan(1);
    for (const [i, a] of first.entries()) {
      if (!failed.includes(i)) expect(a.status).toBe(201);
      else expect(Object.keys(a.body)).toEqual(['error']);
    }
    // Nothing of the failed batch was written: the balance lacks only the others.
    expect(await balanceOf(clients[0]!)).toBe(1_000_000n - 25_000n * BigInt(clients.length - failed.length));
    // But each nonce was consumed before its 5xx left (the batch's transaction, which would have, rolled back).
    for (const i of failed) {
      expect(await post(clients[i]!, body, keys[i], nonces[i])).toMatchObject({
        status: 401,
        body: { error: 'nonce replay' },
      });
    }

    const retried = await Promise.all(failed.map((i) => post(clients[i]!, body, keys[i])));
    for (const a of retried) {
      expect(a.status).toBe(201);
      expect(a.body.payload.state).toBe('completed');
    }
    expect(await balanceOf(clients[0]!)).toBe(1_000_000n - 25_000n * BigInt(clients.length));
    const replays = await Promise.all(clients.map((c, i) => post(c, body, keys[i])));
    expect(new Set(replays.map((a) => a.body.payload.id)).size).toBe(clients.length);
    for (const a of replays) expect(a.status).toBe(200);
  });
});

describe('a key deactivated while its payment waits for a batch', () => {
  it('answers 401 "api key is inactive" and creates nothing: the batch consumes the nonce first', async () => {
    const [holder, waiter] = await clientWithKeys(2);
    // The holder's batch is held open; the waiter authenticates (its key still active) and queues behind it.
    const holding = db.holdNext(1500);
    const held = post(holder!, { amountMinor: '10000', ...PM });
    await holding;
    const waiting = post(waiter!, { amountMinor: '10000', ...PM });
    await new Promise((r) => setTimeout(r, 300));
    expect((await server.admin('POST', `/admin/v1/keys/${waiter!.keyId}/deactivate`)).status).toBe(200);
    expect((await held).status).toBe(201);
    expect(await waiting).toMatchObject({ status: 401, body: { error: 'api key is inactive' } });
    const { rows } = await server.testDb.db.query<{ n: string }>(
      'SELECT count(*)::text AS n FROM payments WHERE key_id = $1',
      [waiter!.keyId],
    );
    expect(rows[0]!.n).toBe('0');
  });
});

describe('reads that share a query', () => {
  it('answer each client with its own payments only, whatever they are read with', async () => {
    const [mine] = await clientWithKeys(1);
    const [theirs] = await clientWithKeys(1);
    const own = await post(mine!, { amountMinor: '10000', ...PM });
    const other = await post(theirs!, { amountMinor: '10000', ...PM });
    const ownId = own.body.payload.id as string;
    const otherId = other.body.payload.id as string;
    // GETs may overlap on one key (reads use the nonce window): thirty at once, mixed.
    const targets = Array.from({ length: 30 }, (_, i) =>
      i % 3 === 0 ? ownId : i % 3 === 1 ? otherId : 'pay_9999999999999999',
    );
    statements.length = 0;
    const answers = await Promise.all(targets.map((id) => mine!.api.get(`/v2/payments/${id}`)));
    // Each GET's nonce went with its read (payments/signed-read.ts): none was flushed on its own.
    expect(statements.filter((sql) => sql.includes('read_payment_views_signed(')).length).toBeGreaterThan(0);
    expect(statements.filter((sql) => sql.includes('consume_nonces('))).toEqual([]);
    answers.forEach((a, i) => {
      if (targets[i] === ownId) {
        expect(a.status).toBe(200);
        expect(a.body.payload.id).toBe(ownId);
      } else {
        expect(a.status, targets[i]).toBe(404);
        expect(a.body).toEqual({ error: 'payment not found' });
      }
    });
  });

  it('answer concurrent GETs each by its own nonce: a replayed one is 401, the others read', async () => {
    const [mine] = await clientWithKeys(1);
    const paid = await post(mine!, { amountMinor: '10000', ...PM });
    const path = `/v2/payments/${paid.body.payload.id}`;
    // Ten GETs with fresh nonces, and three that carry the nonce of one of them, all at once.
    const nonces = Array.from({ length: 10 }, () => mine!.api.nonces.take());
    const sent = [...nonces, nonces[3]!, nonces[3]!, nonces[7]!];
    const answers = await Promise.all(sent.map((nonce) => mine!.api.get(path, { nonce })));
    for (const nonce of new Set(sent)) {
      const got = answers.filter((_, i) => sent[i] === nonce).map((a) => a.status);
      // Exactly one request per nonce reads; any other carrying it is the replay.
      expect(
        got.filter((s) => s === 200),
        nonce,
      ).toHaveLength(1);
      expect(got.filter((s) => s !== 200).every((s) => s === 401)).toBe(true);
    }
    for (const a of answers) {
      if (a.status === 200) expect(a.body.payload.id).toBe(paid.body.payload.id);
      else expect(a.body).toEqual({ error: 'nonce replay' });
    }
    // The window of a read: a nonce below the mark that no request used is good once.
    const unused = mine!.api.nonces.take();
    expect((await mine!.api.get(path, { nonce: mine!.api.nonces.take() })).status).toBe(200);
    expect((await mine!.api.get(path, { nonce: unused })).status).toBe(200);
    expect(await mine!.api.get(path, { nonce: unused })).toMatchObject({
      status: 401,
      body: { error: 'nonce replay' },
    });
  });
});
