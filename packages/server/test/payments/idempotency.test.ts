import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectLedgerSound } from '../support/ledger.ts';
import { balanceOf, CCE, newKey, PM, pay } from '../support/payments.ts';
import { startTestServer, type TestClient, type TestServer } from '../support/test-server.ts';

let server: TestServer;
let c: TestClient;

beforeAll(async () => {
  server = await startTestServer();
  c = await server.newClient({ fundMinor: 100_000_000n });
});
afterAll(async () => {
  await expectLedgerSound(server.testDb.db);
  await server.stop();
});

describe('idempotency of POST /v2/payments', () => {
  it('a replay answers 200 with the original payment and moves no money again', async () => {
    const key = newKey();
    const first = await pay(c, '150000', PM, key);
    expect(first.status).toBe(201);
    const after = await balanceOf(c);
    const again = await pay(c, '150000', PM, key);
    expect(again.status).toBe(200);
    expect(again.body.payload).toEqual(first.body.payload);
    expect(await balanceOf(c)).toBe(after);
  });

  it('the same key with different content is 409: amount, destination, bank, document, name', async () => {
    const key = newKey();
    expect((await pay(c, '150000', CCE, key)).status).toBe(201);
    const variants: Record<string, unknown>[] = [
      { ...CCE, amountMinor: '150001' },
      { ...CCE, beneficiary: '01050000000000000002' },
      { ...CCE, beneficiary: '01080000000000000001', bankCode: '0108' },
      { ...CCE, docType: 'V' },
      { ...CCE, docNumber: '987654321' },
      { ...CCE, beneficiaryName: 'Otro Nombre' },
      { ...PM },
    ];
    for (const v of variants) {
      const { amountMinor = '150000', ...dest } = v as { amountMinor?: string };
      const res = await pay(c, amountMinor, dest, key);
      expect(res.status, JSON.stringify(v)).toBe(409);
      expect(res.body.error).toMatch(/idempotency-key/);
    }
    // Still the original under that key.
    expect((await pay(c, '150000', CCE, key)).status).toBe(200);
  });

  it('ignores beneficiaryName on PM for the comparison (it is unused there)', async () => {
    const key = newKey();
    expect((await pay(c, '1000', PM, key)).status).toBe(201);
    expect((await pay(c, '1000', { ...PM, beneficiaryName: 'whatever' }, key)).status).toBe(200);
  });

  it('concurrent duplicates create exactly one payment', async () => {
    const key = newKey('race');
    const before = await balanceOf(c);
    // One key per request: POST nonces must rise strictly per key, so parallel POSTs of one key could be refused.
    const keys = [
      c,
      ...(await Promise.all([0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1].map((i) => server.addKey(c.clientId, i)))),
    ];
    const answers = await Promise.all(keys.map((k) => pay(k, '20000', PM, key)));
    const statuses = answers.map((a) => a.status).sort();
    expect(statuses.filter((s) => s === 201)).toHaveLength(1);
    expect(statuses.filter((s) => s === 200)).toHaveLength(11);
    expect(new Set(answers.map((a) => a.body.payload.id)).size).toBe(1);
    expect(await balanceOf(c)).toBe(before - 20000n);
    const { rows } = await server.testDb.db.query<{ n: string }>(
      'SELECT count(*)::text AS n FROM payments WHERE idempotency_key = $1',
      [key],
    );
    expect(rows[0]!.n).toBe('1');
  });

  it('keys are per client: another client may use the same key', async () => {
    const other = await server.newClient({ fundMinor: 1_000_000n });
    const key = newKey('shared');
    expect((await pay(c, '1000', PM, key)).status).toBe(201);
    expect((await pay(other, '2000', PM, key)).status).toBe(201);
  });
});
