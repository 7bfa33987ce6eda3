import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectLedgerSound } from '../support/ledger.ts';
import { balanceOf, CCE, newKey, PM, pay } from '../support/payments.ts';
import { startTestServer, type TestClient, type TestServer } from '../support/test-server.ts';

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
  const cases: [string, Record<string, unknown>, RegExp][] = [
    ['amount as a number', { ...PM, amountMinor: 150000, currency: 'VES' }, /amountMinor must be a string/],
    ['amount missing', { ...PM, currency: 'VES' }, /amountMinor is required/],
    ['amount zero', { ...PM, ...base, amountMinor: '0' }, /amountMinor/],
    ['amount negative', { ...PM, ...base, amountMinor: '-5' }, /amountMinor/],
    ['amount decimal', { ...PM, ...base, amountMinor: '1500.00' }, /amountMinor/],
    ['amount with leading zero', { ...PM, ...base, amountMinor: '0150' }, /amountMinor/],
    ['amount beyond 64 bits', { ...PM, ...base, amountMinor: '99999999999999999999' }, /amountMinor/],
    ['currency missing', { ...PM, amountMinor: '100' }, /currency is required/],
    ['currency USD', { ...PM, ...base, currency: 'USD' }, /currency must be VES/],
    ['no destination', { ...base }, /destination is required/],
    [
      'rail without beneficiary',
      { ...base, rail: 'PM', bankCode: '0102', docType: 'V', docNumber: '1' },
      /beneficiary is required/,
    ],
    ['beneficiary without rail', { ...base, beneficiary: '04141234567' }, /rail is required/],
    [
      'beneficiary of a megabyte',
      { ...base, ...PM, beneficiary: '0'.repeat(1_000_000) },
      /beneficiary must be at most 64/,
    ],
    ['beneficiary of 65 characters', { ...base, ...PM, beneficiary: '0'.repeat(65) }, /beneficiary must be at most 64/],
    ['unknown rail', { ...base, ...PM, rail: 'ACH' }, /rail must be one of PM, CCE/],
    ['bankCode missing on PM', { ...base, ...PM, bankCode: undefined }, /bankCode is required/],
    ['bankCode of 3 digits', { ...base, ...PM, bankCode: '102' }, /bankCode must be a string of 4 digits/],
    ['CCE bankCode not the account prefix', { ...base, ...CCE, bankCode: '0102' }, /first 4 digits/],
    ['docType missing', { ...base, ...PM, docType: undefined }, /docType is required/],
    ['docType X', { ...base, ...PM, docType: 'X' }, /docType must be one of V, E, J, P, G/],
    ['docNumber with prefix', { ...base, ...PM, docNumber: 'V12345678' }, /docNumber/],
    ['docNumber of 16 digits', { ...base, ...PM, docNumber: '1234567890123456' }, /docNumber/],
    ['docNumber missing', { ...base, ...PM, docNumber: undefined }, /docNumber is required/],
    ['CCE without beneficiaryName', { ...base, ...CCE, beneficiaryName: undefined }, /beneficiaryName is required/],
    ['CCE beneficiaryName of 36 characters', { ...base, ...CCE, beneficiaryName: 'A'.repeat(36) }, /at most 35/],
    [
      'beneficiaryId with an inline field',
      { ...base, beneficiaryId: 'ben_1', bankCode: '0102' },
      /bankCode is superfluous/,
    ],
    ['beneficiaryId with rail', { ...base, beneficiaryId: 'ben_1', rail: 'PM' }, /rail is superfluous/],
    ['beneficiaryId not a string', { ...base, beneficiaryId: 5 }, /beneficiaryId must be a string/],
  ];

  for (const [name, body, message] of cases) {
    it(name, async () => {
      const key = newKey('v');
      const before = await balanceOf(c);
      const res = await c.api.post('/v2/payments', body, { idempotencyKey: key });
      expect(res.status).toBe(400);
      expect(Object.keys(res.body)).toEqual(['error']);
      expect(res.body.error).toMatch(message);
      expect(await balanceOf(c)).toBe(before);
      // The key stays free: a corrected request under the same key creates the payment.
      const fixed = await pay(c, '150000', PM, key);
      expect(fixed.status).toBe(201);
    });
  }

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
