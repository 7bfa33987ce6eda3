import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectLedgerSound } from '../support/ledger.ts';
import { balanceOf, CCE, newKey, PM, pay } from '../support/payments.ts';
import { startTestServer, type TestClient, type TestServer } from '../support/test-server.ts';
import { INVALID_BODIES } from './body-cases.ts';

let server: TestServer;
let c: TestClient;

beforeAll(async () => {
  server = await startTestServer();
  c = await server.newClient({ fundMinor: 10_000_000n });
});
afterAll(async () => {
  await expectLedgerSound(server.testDb.db);
  await server.stop();
});

const base = { amountMinor: '150000', currency: 'VES' };

describe('POST /v2/payments: every 400 creates nothing and leaves the key free', () => {
  for (const [name, body, message] of INVALID_BODIES) {
    it(name, async () => {
      const key = newKey('v');
      const before = await balanceOf(c);
      const res = await c.api.post('/v2/payments', body, { idempotencyKey: key });
      expect(res.status).toBe(400);
      expect(Object.keys(res.body)).toEqual(['error']);
      expect(res.body.error).toBe(message);
      expect(await balanceOf(c)).toBe(before);
      // The key stays free: a corrected request under the same key creates the payment.
      const fixed = await pay(c, '150000', PM, key);
      expect(fixed.status).toBe(201);
    });
  }

  it('accepts the largest amount (a 422 for the balance, not a 400) and a beneficiaryName on PM (unused)', async () => {
    const largest = await pay(c, '9223372036854775807');
    expect(largest.status).toBe(422);
    const named = await pay(c, '1000', { ...PM, beneficiaryName: 'ignored on PM' });
    expect(named.status).toBe(201);
  });

  it('accepts exactly 35 characters on CCE, counted as characters, never truncated', async () => {
    const name = 'Ñ'.repeat(35);
    const res = await pay(c, '1000', { ...CCE, beneficiaryName: name });
    expect(res.status).toBe(201);
  });

  it('a body that is not a JSON object is 400', async () => {
    for (const raw of ['[]', '"x"', '12', 'null']) {
      const res = await c.api.request('POST', '/v2/payments', { rawBody: raw, idempotencyKey: newKey() });
      expect(res, raw).toMatchObject({ status: 400, body: { error: 'body must be object' } });
    }
    const broken = await c.api.request('POST', '/v2/payments', {
      rawBody: '{"amountMinor":',
      idempotencyKey: newKey(),
    });
    expect(broken.status).toBe(400);
    const empty = await c.api.request('POST', '/v2/payments', { idempotencyKey: newKey() });
    expect(empty).toMatchObject({ status: 400, body: { error: 'body must be object' } });
  });

  it('a missing idempotency-key is 400 and creates nothing', async () => {
    const before = await balanceOf(c);
    const res = await c.api.post('/v2/payments', { ...base, ...PM });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatch(/idempotency-key/);
    expect(await balanceOf(c)).toBe(before);
  });

  it('an unknown beneficiaryId is 404 with nothing created', async () => {
    const before = await balanceOf(c);
    const res = await c.api.post('/v2/payments', { ...base, beneficiaryId: 'ben_nope' }, { idempotencyKey: newKey() });
    expect(res.status).toBe(404);
    expect(await balanceOf(c)).toBe(before);
  });
});
