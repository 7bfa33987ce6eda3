import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type BeneficiaryDomain, createBeneficiaryDomain } from '../../src/beneficiaries/domain.ts';
import { isUniqueViolation, type Queryable } from '../../src/db/db.ts';
import { startTestServer, type TestClient, type TestServer } from '../support/test-server.ts';
import { archive, cceBody, patch, pmBody } from './helpers.ts';

/** The guarantees the database itself gives, whatever code runs against it. */

let server: TestServer;
let alice: TestClient;
let bob: TestClient;
let db: Queryable;
let domain: BeneficiaryDomain;

beforeAll(async () => {
  server = await startTestServer();
  alice = await server.newClient();
  bob = await server.newClient();
  db = server.testDb.db;
  domain = createBeneficiaryDomain(server.running.ctx);
});
afterAll(async () => {
  await server.stop();
});

async function createVia(api: TestClient['api'], body: Record<string, unknown>) {
  const res = await api.post('/v2/beneficiaries', body);
  if (res.status !== 201) throw new Error(`create failed: ${JSON.stringify(res.body)}`);
  return res.body.payload;
}

/** A row as a release before bankCode and beneficiaryName existed would have left it: written straight in SQL. */
async function insertLegacyRow(clientId: string, row: Record<string, string | null>): Promise<string> {
  const { rows } = await db.query<{ id: string }>(
    `INSERT INTO beneficiaries (id, seq, client_id, alias, rail, account, bank_code, doc_type, doc_number,
                                beneficiary_name, status, created_at)
     SELECT 'ben_' || lpad(n::text, 16, '0'), n, $1, $2, $3, $4, $5, $6, $7, $8, 'ACTIVE', '2024-03-01T10:00:00Z'
       FROM nextval('beneficiaries_seq') AS n
     RETURNING id`,
    [
      clientId,
      row['alias'],
      row['rail'],
      row['account'],
      row['bankCode'] ?? null,
      row['docType'],
      row['docNumber'],
      row['beneficiaryName'] ?? null,
    ],
  );
  return rows[0]!.id;
}

async function sqlError(sql: string, params: unknown[] = []): Promise<{ code?: string; message: string }> {
  try {
    await db.query(sql, params);
  } catch (err) {
    return err as { code?: string; message: string };
  }
  throw new Error(`expected this statement to fail: ${sql}`);
}

describe('legacy records (created before bankCode and beneficiaryName)', () => {
  it('are read through the API with null fields, by id and in the listing', async () => {
    const pmId = await insertLegacyRow(alice.clientId, {
      alias: 'old phone',
      rail: 'PM',
      account: '04140000001',
      docType: 'V',
      docNumber: '1234567',
    });
    const cceId = await insertLegacyRow(alice.clientId, {
      alias: 'old account',
      rail: 'CCE',
      account: '01020000000000000009',
      bankCode: '0102',
      docType: 'J',
      docNumber: '301234567',
    });

    const pm = await alice.api.get(`/v2/beneficiaries/${pmId}`);
    expect(pm.status).toBe(200);
    expect(pm.body.payload).toEqual({
      id: pmId,
      alias: 'old phone',
      rail: 'PM',
      account: '04140000001',
      bankCode: null,
      docType: 'V',
      docNumber: '1234567',
      beneficiaryName: null,
      status: 'ACTIVE',
      createdAt: '2024-03-01T10:00:00.000Z',
    });
    const cce = await alice.api.get(`/v2/beneficiaries/${cceId}`);
    expect(cce.body.payload).toMatchObject({ rail: 'CCE', bankCode: '0102', beneficiaryName: null });

    const list = await alice.api.get('/v2/beneficiaries?limit=100');
    const listed = list.body.payload.data.filter((b: { id: string }) => b.id === pmId || b.id === cceId);
    expect(listed).toEqual([cce.body.payload, pm.body.payload]);

    // The payment side sees the same nulls (and refuses to pay them on the affected rail, in src/payments).
    expect(await domain.resolveForPayment(db, alice.clientId, pmId)).toEqual({
      kind: 'ok',
      beneficiaryId: pmId,
      active: true,
      destination: {
        rail: 'PM',
        account: '04140000001',
        bankCode: null,
        docType: 'V',
        docNumber: '1234567',
        beneficiaryName: null,
      },
    });

    // The replace flow of the breaking change: archive the old one, create a complete one.
    expect((await alice.api.post('/v2/beneficiaries', pmBody({ account: '04140000001' }))).status).toBe(409);
    expect((await archive(alice.api, pmId)).status).toBe(200);
    expect((await alice.api.post('/v2/beneficiaries', pmBody({ account: '04140000001' }))).status).toBe(201);
  });
});

describe('the frozen destination (trigger)', () => {
  const frozen: [string, string][] = [
    ['rail', "'PM'"],
    ['account', "'01059999999999999999'"],
    ['bank_code', "'0999'"],
    ['bank_code', 'NULL'],
    ['doc_type', "'E'"],
    ['doc_number', "'1'"],
    ['beneficiary_name', "'Someone Else'"],
    ['beneficiary_name', 'NULL'],
    ['created_at', "'2000-01-01T00:00:00Z'"],
    ['id', "'ben_9999999999999998'"],
    ['seq', '9999999999999998'],
  ];

  it.each(frozen)('a direct UPDATE of %s = %s fails', async (column, value) => {
    const b = await createVia(alice.api, cceBody());
    const err = await sqlError(`UPDATE beneficiaries SET ${column} = ${value} WHERE id = $1`, [b.id]);
    expect(err.message).toMatch(/destination is frozen/);
    expect((await alice.api.get(`/v2/beneficiaries/${b.id}`)).body.payload).toEqual(b);
  });

  it('a direct UPDATE moving it to another client fails', async () => {
    const b = await createVia(alice.api, pmBody());
    const err = await sqlError('UPDATE beneficiaries SET client_id = $2 WHERE id = $1', [b.id, bob.clientId]);
    expect(err.message).toMatch(/destination is frozen/);
    expect((await bob.api.get(`/v2/beneficiaries/${b.id}`)).status).toBe(404);
  });

  it('allows exactly the alias change and the archive', async () => {
    const b = await createVia(alice.api, pmBody());
    await db.query("UPDATE beneficiaries SET alias = 'renamed in SQL' WHERE id = $1", [b.id]);
    await db.query("UPDATE beneficiaries SET status = 'INACTIVE', archived_at = now() WHERE id = $1", [b.id]);
    expect((await alice.api.get(`/v2/beneficiaries/${b.id}`)).body.payload).toEqual({
      ...b,
      alias: 'renamed in SQL',
      status: 'INACTIVE',
    });
  });

  it('an archived row never changes again: not revived, not renamed', async () => {
    const b = await createVia(alice.api, cceBody());
    expect((await archive(alice.api, b.id)).status).toBe(200);
    const revive = await sqlError("UPDATE beneficiaries SET status = 'ACTIVE', archived_at = NULL WHERE id = $1", [
      b.id,
    ]);
    expect(revive.message).toMatch(/archived and cannot change/);
    const rename = await sqlError("UPDATE beneficiaries SET alias = 'x' WHERE id = $1", [b.id]);
    expect(rename.message).toMatch(/archived and cannot change/);
    expect((await patch(alice.api, b.id, { alias: 'x' })).status).toBe(404);
  });

  it('archiving stamps archived_at (CHECK), and rows cannot be deleted', async () => {
    const b = await createVia(alice.api, pmBody());
    const unstamped = await sqlError("UPDATE beneficiaries SET status = 'INACTIVE' WHERE id = $1", [b.id]);
    expect(unstamped.code).toBe('23514');
    const del = await sqlError('DELETE FROM beneficiaries WHERE id = $1', [b.id]);
    expect(del.message).toMatch(/cannot be deleted/);
    expect((await alice.api.get(`/v2/beneficiaries/${b.id}`)).status).toBe(200);
  });
});

describe('one ACTIVE destination per client (partial unique index)', () => {
  const insert = (clientId: string, account: string, status: 'ACTIVE' | 'INACTIVE') =>
    db.query(
      `INSERT INTO beneficiaries (id, seq, client_id, alias, rail, account, bank_code, doc_type, doc_number,
                                  status, created_at, archived_at)
       SELECT 'ben_' || lpad(n::text, 16, '0'), n, $1, 'sql', 'PM', $2, '0102', 'V', '1', $3, now(),
              CASE WHEN $3 = 'INACTIVE' THEN now() END
         FROM nextval('beneficiaries_seq') AS n`,
      [clientId, account, status],
    );

  it('refuses a second ACTIVE row for the same client, rail and account, whatever code writes it', async () => {
    await insert(alice.clientId, '04145550001', 'ACTIVE');
    let error: unknown;
    await insert(alice.clientId, '04145550001', 'ACTIVE').catch((e: unknown) => {
      error = e;
    });
    expect(isUniqueViolation(error, 'beneficiaries_active_destination')).toBe(true);
  });

  it('archived rows do not count, and other clients do not count', async () => {
    await insert(alice.clientId, '04145550002', 'INACTIVE');
    await insert(alice.clientId, '04145550002', 'INACTIVE');
    await insert(alice.clientId, '04145550002', 'ACTIVE');
    await insert(bob.clientId, '04145550002', 'ACTIVE');
    const { rows } = await db.query<{ n: string }>(
      "SELECT count(*) AS n FROM beneficiaries WHERE account = '04145550002'",
    );
    expect(rows[0]!.n).toBe('4');
  });

  it('CHECK constraints refuse a CCE bank code that is not the account prefix and a name on PM', async () => {
    const mismatch = await sqlError(
      `INSERT INTO beneficiaries (id, seq, client_id, alias, rail, account, bank_code, doc_type, doc_number,
                                  beneficiary_name, created_at)
       SELECT 'ben_' || lpad(n::text, 16, '0'), n, $1, 'a', 'CCE', '01020000000000000001', '0105', 'V', '1', 'N', now()
         FROM nextval('beneficiaries_seq') AS n`,
      [alice.clientId],
    );
    expect(mismatch.code).toBe('23514');
    const pmName = await sqlError(
      `INSERT INTO beneficiaries (id, seq, client_id, alias, rail, account, bank_code, doc_type, doc_number,
                                  beneficiary_name, created_at)
       SELECT 'ben_' || lpad(n::text, 16, '0'), n, $1, 'a', 'PM', '04140000000', '0102', 'V', '1', 'N', now()
         FROM nextval('beneficiaries_seq') AS n`,
      [alice.clientId],
    );
    expect(pmName.code).toBe('23514');
  });
});

describe('resolveForPayment', () => {
  it('answers the frozen destination of an own beneficiary, active or archived', async () => {
    const b = await createVia(alice.api, cceBody());
    const destination = {
      rail: 'CCE',
      account: b.account,
      bankCode: '0105',
      docType: 'J',
      docNumber: '301234567',
      beneficiaryName: 'Comercial Maria CA',
    };
    expect(await domain.resolveForPayment(db, alice.clientId, b.id)).toEqual({
      kind: 'ok',
      beneficiaryId: b.id,
      active: true,
      destination,
    });
    await archive(alice.api, b.id);
    expect(await domain.resolveForPayment(db, alice.clientId, b.id)).toEqual({
      kind: 'ok',
      beneficiaryId: b.id,
      active: false,
      destination,
    });
  });

  it('is not_found for another client’s, an unknown or a malformed id', async () => {
    const b = await createVia(alice.api, pmBody());
    for (const [clientId, id] of [
      [bob.clientId, b.id],
      [alice.clientId, 'ben_9999999999999999'],
      [alice.clientId, 'garbage'],
    ] as const) {
      expect(await domain.resolveForPayment(db, clientId, id)).toEqual({ kind: 'not_found' });
    }
  });

  it('inside a transaction, holds off an archive until that transaction ends', async () => {
    const b = await createVia(alice.api, pmBody());
    let archived = false;
    let pendingArchive: Promise<unknown> | undefined;
    await server.testDb.db.tx(async (q) => {
      const seen = await domain.resolveForPayment(q, alice.clientId, b.id);
      expect(seen).toMatchObject({ kind: 'ok', active: true });
      pendingArchive = archive(alice.api, b.id).then((res) => {
        archived = true;
        return res;
      });
      await new Promise((r) => setTimeout(r, 300));
      expect(archived).toBe(false);
    });
    const res = (await pendingArchive) as { status: number; body: { payload: { status: string } } };
    expect(res.status).toBe(200);
    expect(res.body.payload.status).toBe('INACTIVE');
  });
});
