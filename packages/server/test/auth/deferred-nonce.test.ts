import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectLedgerSound } from '../support/ledger.ts';
import { balanceOf, newKey, PM } from '../support/payments.ts';
import { startTestServer, type TestClient, type TestServer } from '../support/test-server.ts';

/**
 * Nonces consumed later than the authentication step (auth/deferred-nonce.ts): POST /v2/payments consumes its nonce
 * inside the reserve transaction, and a signed GET reads while its nonce is flushed. Seen from outside nothing may
 * differ from consuming it first: the mark is committed when any answer leaves, a replayed nonce is 401 whatever
 * else is wrong with the request, and one nonce never pays twice.
 */

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await expectLedgerSound(server.testDb.db);
  await server.stop();
});

const body = (amountMinor: string) => ({ amountMinor, currency: 'VES', ...PM });

async function markOf(c: TestClient): Promise<string> {
  const { rows } = await server.testDb.db.query<{ m: string }>(
    'SELECT nonce_mark::text AS m FROM api_keys WHERE id = $1',
    [c.keyId],
  );
  return rows[0]!.m;
}

async function paymentCount(c: TestClient): Promise<number> {
  const { rows } = await server.testDb.db.query<{ n: string }>(
    'SELECT count(*)::text AS n FROM payments WHERE client_id = $1',
    [c.clientId],
  );
  return Number(rows[0]!.n);
}

describe('the nonce of a payment', () => {
  it('is committed when the 201 leaves, and cannot pay again', async () => {
    const c = await server.newClient({ fundMinor: 1_000_000n });
    const nonce = c.api.nonces.take();
    const first = await c.api.post('/v2/payments', body('10000'), { idempotencyKey: newKey(), nonce });
    expect(first.status).toBe(201);
    expect(await markOf(c)).toBe(nonce);

    const again = await c.api.post('/v2/payments', body('10000'), { idempotencyKey: newKey(), nonce });
    expect(again).toMatchObject({ status: 401, body: { error: 'nonce replay' } });
    expect(Object.keys(again.body)).toEqual(['error']);
    expect(await paymentCount(c)).toBe(1);
    expect(await balanceOf(c)).toBe(990_000n);
  });

  it('is checked before the idempotency key: the same request with a used nonce is 401, not a 200 replay', async () => {
    const c = await server.newClient({ fundMinor: 1_000_000n });
    const nonce = c.api.nonces.take();
    const key = newKey();
    expect((await c.api.post('/v2/payments', body('10000'), { idempotencyKey: key, nonce })).status).toBe(201);
    const replayed = await c.api.post('/v2/payments', body('10000'), { idempotencyKey: key, nonce });
    expect(replayed).toMatchObject({ status: 401, body: { error: 'nonce replay' } });
    // With a fresh nonce it is the idempotent replay.
    expect((await c.api.post('/v2/payments', body('10000'), { idempotencyKey: key })).status).toBe(200);
  });

  it('answers 401 for a replayed nonce whatever is wrong with the body or headers', async () => {
    const c = await server.newClient({ fundMinor: 1_000_000n });
    const nonce = c.api.nonces.take();
    expect((await c.api.post('/v2/payments', body('10000'), { idempotencyKey: newKey(), nonce })).status).toBe(201);
    const wrong = [
      await c.api.post('/v2/payments', body('-1'), { idempotencyKey: newKey(), nonce }),
      await c.api.post('/v2/payments', { ...body('10000'), extra: 1 }, { idempotencyKey: newKey(), nonce }),
      await c.api.post('/v2/payments', body('10000'), { nonce }),
      await c.api.post(
        '/v2/payments',
        { amountMinor: '10000', currency: 'VES', beneficiaryId: 'ben_0000000000000000' },
        { idempotencyKey: newKey(), nonce },
      ),
    ];
    for (const a of wrong) {
      expect(a.status).toBe(401);
      expect(a.body).toEqual({ error: 'nonce replay' });
      expect(a.headers.get('location')).toBeNull();
    }
    expect(await paymentCount(c)).toBe(1);
  });

  it('is consumed by a request refused before the batch: the refusal leaves with the mark committed', async () => {
    const c = await server.newClient({ fundMinor: 1_000_000n });
    const refusedNonce = c.api.nonces.take();
    const invalid = await c.api.post('/v2/payments', body('-1'), { idempotencyKey: newKey(), nonce: refusedNonce });
    expect(invalid.status).toBe(400);
    expect(await markOf(c)).toBe(refusedNonce);

    const unknownBeneficiary = c.api.nonces.take();
    const notFound = await c.api.post(
      '/v2/payments',
      { amountMinor: '10000', currency: 'VES', beneficiaryId: 'ben_0000000000000000' },
      { idempotencyKey: newKey(), nonce: unknownBeneficiary },
    );
    expect(notFound.status).toBe(404);
    expect(await markOf(c)).toBe(unknownBeneficiary);

    // Either nonce, now with a valid body: 401, nothing paid.
    for (const nonce of [refusedNonce, unknownBeneficiary]) {
      const valid = await c.api.post('/v2/payments', body('10000'), { idempotencyKey: newKey(), nonce });
      expect(valid).toMatchObject({ status: 401, body: { error: 'nonce replay' } });
    }
    expect(await paymentCount(c)).toBe(0);
    expect(await balanceOf(c)).toBe(1_000_000n);
  });

  it('pays once when several requests carry it at the same time', async () => {
    const c = await server.newClient({ fundMinor: 1_000_000n });
    const nonce = c.api.nonces.take();
    const answers = await Promise.all(
      Array.from({ length: 6 }, () => c.api.post('/v2/payments', body('10000'), { idempotencyKey: newKey(), nonce })),
    );
    const statuses = answers.map((a) => a.status).sort();
    expect(statuses).toEqual([201, 401, 401, 401, 401, 401]);
    for (const a of answers) if (a.status === 401) expect(a.body).toEqual({ error: 'nonce replay' });
    expect(await markOf(c)).toBe(nonce);
    expect(await paymentCount(c)).toBe(1);
    expect(await balanceOf(c)).toBe(990_000n);
  });

  it('malformed is the replay 401, the mark unmoved and nothing created', async () => {
    const c = await server.newClient({ fundMinor: 1_000_000n });
    const mark = await markOf(c);
    for (const nonce of ['0', '01', '-5', '1'.repeat(39), '12a']) {
      const res = await c.api.post('/v2/payments', body('10000'), { idempotencyKey: newKey(), nonce });
      expect(res, nonce).toMatchObject({ status: 401, body: { error: 'nonce replay' } });
    }
    expect(await markOf(c)).toBe(mark);
    expect(await paymentCount(c)).toBe(0);
  });

  it('below the mark is a replay even when no payment used it', async () => {
    const c = await server.newClient({ fundMinor: 1_000_000n });
    const low = c.api.nonces.take();
    const high = c.api.nonces.take();
    expect((await c.api.get('/v2/me', { nonce: high })).status).toBe(200);
    const below = await c.api.post('/v2/payments', body('10000'), { idempotencyKey: newKey(), nonce: low });
    expect(below).toMatchObject({ status: 401, body: { error: 'nonce replay' } });
    expect(await paymentCount(c)).toBe(0);
  });
});

describe('the nonce of a signed GET', () => {
  it('is committed when the answer leaves', async () => {
    const c = await server.newClient({ fundMinor: 1_000_000n });
    const paid = await c.api.post('/v2/payments', body('10000'), { idempotencyKey: newKey() });
    expect(paid.status).toBe(201);
    for (const target of [`/v2/payments/${paid.body.payload.id}`, '/v2/payments/pay_0000000000009999', '/v2/me']) {
      const nonce = c.api.nonces.take();
      const read = await c.api.get(target, { nonce });
      expect(read.status).toBeLessThan(500);
      expect(await markOf(c)).toBe(nonce);
    }
  });

  it('answers 401 for a replayed nonce whatever the read would have answered', async () => {
    const c = await server.newClient({ fundMinor: 1_000_000n });
    const paid = await c.api.post('/v2/payments', body('10000'), { idempotencyKey: newKey() });
    const nonce = c.api.nonces.take();
    expect((await c.api.get('/v2/me', { nonce })).status).toBe(200);
    for (const target of [
      `/v2/payments/${paid.body.payload.id}`,
      '/v2/payments/pay_0000000000009999',
      '/v2/payments?limit=0',
      '/v2/balance',
    ]) {
      const again = await c.api.get(target, { nonce });
      expect(again.status, target).toBe(401);
      expect(again.body).toEqual({ error: 'nonce replay' });
    }
  });

  it('of a payment read: malformed is the replay 401 with the mark unmoved; HEAD takes no window', async () => {
    const c = await server.newClient({ fundMinor: 1_000_000n });
    const paid = await c.api.post('/v2/payments', body('10000'), { idempotencyKey: newKey() });
    const path = `/v2/payments/${paid.body.payload.id}`;
    const mark = await markOf(c);
    for (const bad of ['0', '007', '12a', '1'.repeat(39)]) {
      expect(await c.api.get(path, { nonce: bad }), bad).toMatchObject({
        status: 401,
        body: { error: 'nonce replay' },
      });
    }
    expect(await markOf(c)).toBe(mark);
    // Below the mark and never used: a GET may take it, a HEAD (strict, as the spec says) may not.
    const unused = c.api.nonces.take();
    expect((await c.api.get(path)).status).toBe(200);
    expect((await c.api.request('HEAD', path, { nonce: unused })).status).toBe(401);
    expect((await c.api.get(path, { nonce: unused })).status).toBe(200);
  });

  it('answers 401 "api key is inactive" once the key is deactivated, whatever the read', async () => {
    const c = await server.newClient({ fundMinor: 1_000_000n });
    expect((await c.api.get('/v2/me')).status).toBe(200);
    expect((await server.admin('POST', `/admin/v1/keys/${c.keyId}/deactivate`)).status).toBe(200);
    const read = await c.api.get('/v2/payments/pay_0000000000009999');
    expect(read).toMatchObject({ status: 401, body: { error: 'api key is inactive' } });
  });
});
