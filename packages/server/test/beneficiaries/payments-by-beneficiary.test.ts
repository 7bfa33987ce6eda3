import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectLedgerSound } from '../support/ledger.ts';
import { balanceOf, CCE, newKey, PM } from '../support/payments.ts';
import { startTestServer, type TestClient, type TestServer } from '../support/test-server.ts';

let server: TestServer;
let c: TestClient;
let pmBen: string;
let cceBen: string;

beforeAll(async () => {
  server = await startTestServer({ env: { DISPERSA_UNKNOWN_BUDGET_SECONDS: '3600' } });
  c = await server.newClient({ fundMinor: 100_000_000n });
  const pm = await c.api.post('/v2/beneficiaries', {
    alias: 'Maria',
    rail: 'PM',
    account: PM.beneficiary,
    bankCode: PM.bankCode,
    docType: PM.docType,
    docNumber: PM.docNumber,
  });
  pmBen = pm.body.payload.id;
  const cce = await c.api.post('/v2/beneficiaries', {
    alias: 'Proveedor',
    rail: 'CCE',
    account: '01020000000000000009',
    bankCode: '0102',
    docType: CCE.docType,
    docNumber: CCE.docNumber,
    beneficiaryName: CCE.beneficiaryName,
  });
  cceBen = cce.body.payload.id;
});
afterAll(async () => {
  await expectLedgerSound(server.testDb.db);
  await server.stop();
});

const payBen = (beneficiaryId: string, amountMinor: string, key = newKey('b')) =>
  c.api.post('/v2/payments', { amountMinor, currency: 'VES', beneficiaryId }, { idempotencyKey: key });

describe('paying a stored beneficiary (way 1)', () => {
  const outcomes: [string, string, string | null][] = [
    ['00', 'completed', null],
    ['01', 'failed', 'declined'],
    ['02', 'unknown', 'reconciling'],
    ['03', 'unknown', 'reconciling'],
    ['04', 'unknown', 'reconciling'],
    ['05', 'failed', 'wrong_beneficiary'],
    ['09', 'failed', 'declined'],
  ];
  for (const [ending, state, sub] of outcomes) {
    it(`ending ${ending} on PM and CCE: ${state}/${sub}`, async () => {
      for (const [id, rail, account] of [
        [pmBen, 'PM', PM.beneficiary],
        [cceBen, 'CCE', '01020000000000000009'],
      ] as const) {
        const res = await payBen(id, `5000${ending}`);
        expect(res.status).toBe(201);
        expect(res.body.payload).toMatchObject({
          state,
          subStatus: sub,
          rail,
          beneficiary: account,
          beneficiaryId: id,
        });
      }
    });
  }

  it('CCE 06 and 07 are held at the clearing house', async () => {
    for (const ending of ['06', '07']) {
      const res = await payBen(cceBen, `7000${ending}`);
      expect(res.body.payload).toMatchObject({ state: 'unknown', subStatus: 'at_rail', beneficiaryId: cceBen });
    }
  });

  it('replays by key; the destination resolved from the record is part of the comparison', async () => {
    const key = newKey('bk');
    const first = await payBen(pmBen, '120000', key);
    expect(first.status).toBe(201);
    expect((await payBen(pmBen, '120000', key)).status).toBe(200);
    // The same destination sent inline under the same key is the same operation.
    const inline = await c.api.post(
      '/v2/payments',
      { amountMinor: '120000', currency: 'VES', ...PM },
      { idempotencyKey: key },
    );
    expect(inline.status).toBe(200);
    // Another beneficiary under the same key is a different operation.
    expect((await payBen(cceBen, '120000', key)).status).toBe(409);
  });

  it('an archived beneficiary is 404 with nothing created; a replay of an earlier payment still answers 200', async () => {
    const ben = await c.api.post('/v2/beneficiaries', {
      alias: 'temp',
      rail: 'PM',
      account: '04240000001',
      bankCode: '0102',
      docType: 'V',
      docNumber: '1',
    });
    const id = ben.body.payload.id;
    const key = newKey('arch');
    expect((await payBen(id, '1000', key)).status).toBe(201);
    expect((await c.api.request('DELETE', `/v2/beneficiaries/${id}`)).status).toBe(200);
    const before = await balanceOf(c);
    const res = await payBen(id, '1000');
    expect(res.status).toBe(404);
    expect(await balanceOf(c)).toBe(before);
    expect((await payBen(id, '1000', key)).status).toBe(200);
  });

  it("another client's beneficiary is 404", async () => {
    const other = await server.newClient({ fundMinor: 1_000_000n });
    const res = await other.api.post(
      '/v2/payments',
      { amountMinor: '1000', currency: 'VES', beneficiaryId: pmBen },
      { idempotencyKey: newKey() },
    );
    expect(res.status).toBe(404);
  });

  it('old records without bankCode (or CCE name) cannot pay on that rail: failed rejected_by_us, no debit', async () => {
    const { rows } = await server.testDb.db.query<{ id: string }>(
      `INSERT INTO beneficiaries (id, seq, client_id, alias, rail, account, bank_code, doc_type, doc_number,
                                  beneficiary_name, status, created_at)
       SELECT 'ben_' || lpad(n::text, 16, '0'), n, $1, 'legacy', 'PM', '04125550000', NULL, 'V', '7', NULL, 'ACTIVE',
              '2024-03-01T10:00:00Z'
         FROM nextval('beneficiaries_seq') AS n RETURNING id`,
      [c.clientId],
    );
    const before = await balanceOf(c);
    const res = await payBen(rows[0]!.id, '1000');
    expect(res.status).toBe(201);
    expect(res.body.payload).toMatchObject({
      state: 'failed',
      subStatus: 'rejected_by_us',
      failureCode: 'beneficiary_incomplete',
    });
    expect(await balanceOf(c)).toBe(before);
    const cce = await server.testDb.db.query<{ id: string }>(
      `INSERT INTO beneficiaries (id, seq, client_id, alias, rail, account, bank_code, doc_type, doc_number,
                                  beneficiary_name, status, created_at)
       SELECT 'ben_' || lpad(n::text, 16, '0'), n, $1, 'legacy cce', 'CCE', '01057777777777777777', '0105', 'J', '7', NULL,
              'ACTIVE', '2024-03-01T10:00:00Z'
         FROM nextval('beneficiaries_seq') AS n RETURNING id`,
      [c.clientId],
    );
    const res2 = await payBen(cce.rows[0]!.id, '1000');
    expect(res2.body.payload).toMatchObject({ state: 'failed', subStatus: 'rejected_by_us' });
    expect(await balanceOf(c)).toBe(before);
  });
});
