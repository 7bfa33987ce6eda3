import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestClient, type TestServer } from '../support/test-server.ts';
import { archive, cceBody, patch, pmBody } from './helpers.ts';

let server: TestServer;
let alice: TestClient;
let bob: TestClient;

beforeAll(async () => {
  server = await startTestServer();
  alice = await server.newClient();
  bob = await server.newClient();
});
afterAll(async () => {
  await server.stop();
});

const BENEFICIARY_KEYS = [
  'id',
  'alias',
  'rail',
  'account',
  'bankCode',
  'docType',
  'docNumber',
  'beneficiaryName',
  'status',
  'createdAt',
].sort();

describe('POST /v2/beneficiaries', () => {
  it('creates a CCE beneficiary: 201, the whole object, ACTIVE, readable by id', async () => {
    const body = cceBody();
    const res = await alice.api.post('/v2/beneficiaries', body);
    expect(res.status).toBe(201);
    expect(res.body.status).toBe('success');
    expect(typeof res.body.traceId).toBe('string');
    const b = res.body.payload;
    expect(Object.keys(b).sort()).toEqual(BENEFICIARY_KEYS);
    expect(b).toMatchObject({
      alias: body.alias,
      rail: 'CCE',
      account: body.account,
      bankCode: '0105',
      docType: 'J',
      docNumber: '301234567',
      beneficiaryName: 'Comercial Maria CA',
      status: 'ACTIVE',
    });
    expect(b.id).toMatch(/^ben_[0-9]{16}$/);
    expect(b.createdAt).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);

    const read = await alice.api.get(`/v2/beneficiaries/${b.id}`);
    expect(read.status).toBe(200);
    expect(read.body.payload).toEqual(b);
  });

  it('creates a PM beneficiary; beneficiaryName is ignored with PM and stored as null', async () => {
    const res = await alice.api.post('/v2/beneficiaries', pmBody({ beneficiaryName: 'Ignored Name' }));
    expect(res.status).toBe(201);
    expect(res.body.payload).toMatchObject({ rail: 'PM', bankCode: '0102', beneficiaryName: null });
    const read = await alice.api.get(`/v2/beneficiaries/${res.body.payload.id}`);
    expect(read.body.payload.beneficiaryName).toBeNull();
  });

  it('does not validate the account format (the rail judges it later)', async () => {
    const pm = await alice.api.post('/v2/beneficiaries', pmBody({ account: 'not-a-phone' }));
    expect(pm.status).toBe(201);
    expect(pm.body.payload.account).toBe('not-a-phone');
    // CCE: only the bank prefix rule relates the account to another field.
    const cce = await alice.api.post('/v2/beneficiaries', cceBody({ account: '0105-short', bankCode: '0105' }));
    expect(cce.status).toBe(201);
  });

  it('accepts the limits exactly: docNumber of 15 digits, beneficiaryName of 35, alias of 100', async () => {
    const res = await alice.api.post(
      '/v2/beneficiaries',
      cceBody({ docNumber: '123456789012345', beneficiaryName: 'N'.repeat(35), alias: 'A'.repeat(100) }),
    );
    expect(res.status).toBe(201);
    expect(res.body.payload.beneficiaryName).toBe('N'.repeat(35));
    // Characters, not bytes: 35 accented letters are 70 UTF-8 bytes and still fit.
    const accented = await alice.api.post('/v2/beneficiaries', cceBody({ beneficiaryName: 'é'.repeat(35) }));
    expect(accented.status).toBe(201);
    for (const docType of ['V', 'E', 'J', 'P', 'G']) {
      expect((await alice.api.post('/v2/beneficiaries', pmBody({ docType }))).status).toBe(201);
    }
  });

  describe('validation: 400 naming the rule, nothing created', () => {
    const without = (body: Record<string, unknown>, field: string) => {
      const copy = { ...body };
      delete copy[field];
      return copy;
    };
    const cases: [string, Record<string, unknown>, string][] = [
      ['rail missing', without(pmBody(), 'rail'), 'rail is required'],
      ['rail unknown', pmBody({ rail: 'ACH' }), 'rail must be one of PM, CCE'],
      ['account missing', without(pmBody(), 'account'), 'account is required'],
      ['account empty', pmBody({ account: '' }), 'account must be 1 to 64 characters'],
      ['account a number', pmBody({ account: 4141234567 }), 'account must be a string'],
      ['bankCode missing on PM', without(pmBody(), 'bankCode'), 'bankCode is required'],
      ['bankCode missing on CCE', without(cceBody(), 'bankCode'), 'bankCode is required'],
      ['bankCode of 3 digits', pmBody({ bankCode: '102' }), 'bankCode must be 4 digits'],
      ['bankCode of 5 digits', pmBody({ bankCode: '01020' }), 'bankCode must be 4 digits'],
      ['bankCode not digits', pmBody({ bankCode: '01a2' }), 'bankCode must be 4 digits'],
      ['bankCode a number', pmBody({ bankCode: 102 }), 'bankCode must be a string'],
      [
        'CCE bankCode not the account prefix',
        cceBody({ account: '01020000000000000001', bankCode: '0105' }),
        'bankCode must equal the first 4 digits of account with CCE',
      ],
      ['docType missing', without(pmBody(), 'docType'), 'docType is required'],
      ['docType unknown', pmBody({ docType: 'X' }), 'docType must be one of V, E, J, P, G'],
      ['docType lower case', pmBody({ docType: 'v' }), 'docType must be one of V, E, J, P, G'],
      ['docNumber missing', without(pmBody(), 'docNumber'), 'docNumber is required'],
      ['docNumber with prefix', pmBody({ docNumber: 'V12345678' }), 'docNumber must be 1 to 15 digits, no prefix'],
      [
        'docNumber of 16 digits',
        pmBody({ docNumber: '1234567890123456' }),
        'docNumber must be 1 to 15 digits, no prefix',
      ],
      ['docNumber empty', pmBody({ docNumber: '' }), 'docNumber must be 1 to 15 digits, no prefix'],
      ['docNumber a number', pmBody({ docNumber: 12345678 }), 'docNumber must be a string'],
      ['beneficiaryName missing on CCE', without(cceBody(), 'beneficiaryName'), 'beneficiaryName is required with CCE'],
      ['beneficiaryName null on CCE', cceBody({ beneficiaryName: null }), 'beneficiaryName is required with CCE'],
      [
        'beneficiaryName of 36 characters',
        cceBody({ beneficiaryName: 'N'.repeat(36) }),
        'beneficiaryName must be 1 to 35 characters and not blank (never truncated)',
      ],
      [
        'beneficiaryName blank',
        cceBody({ beneficiaryName: '   ' }),
        'beneficiaryName must be 1 to 35 characters and not blank (never truncated)',
      ],
      ['beneficiaryName a number', cceBody({ beneficiaryName: 7 }), 'beneficiaryName must be a string'],
      ['alias missing', without(pmBody(), 'alias'), 'alias is required'],
      ['alias empty', pmBody({ alias: '' }), 'alias must be 1 to 100 characters and not blank'],
      ['alias blank', pmBody({ alias: '    ' }), 'alias must be 1 to 100 characters and not blank'],
      [
        'alias of 101 characters',
        pmBody({ alias: 'A'.repeat(101) }),
        'alias must be 1 to 100 characters and not blank',
      ],
      ['alias a number', pmBody({ alias: 1 }), 'alias must be a string'],
    ];

    it.each(cases)('%s', async (_name, body, message) => {
      const res = await bob.api.post('/v2/beneficiaries', body);
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ error: message });
    });

    it('a body that is not an object is 400', async () => {
      const res = await bob.api.request('POST', '/v2/beneficiaries', { rawBody: '[1]' });
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ error: 'body must be object' });
    });

    it('none of the rejected bodies created anything', async () => {
      const list = await bob.api.get('/v2/beneficiaries');
      expect(list.status).toBe(200);
      expect(list.body.payload.data).toEqual([]);
    });
  });
});

describe('uniqueness of ACTIVE destinations and the replace flow', () => {
  it('POST first is 409 naming the holder; DELETE then POST replaces; the old one stays readable', async () => {
    const first = await alice.api.post('/v2/beneficiaries', cceBody());
    expect(first.status).toBe(201);
    const old = first.body.payload;

    // Same rail and account, everything else different: still the same destination for the uniqueness rule.
    const clash = await alice.api.post(
      '/v2/beneficiaries',
      cceBody({ account: old.account, docType: 'V', docNumber: '999', beneficiaryName: 'Other', alias: 'new' }),
    );
    expect(clash.status).toBe(409);
    expect(Object.keys(clash.body)).toEqual(['error']);
    expect(clash.body.error).toContain(old.id);

    const archived = await archive(alice.api, old.id);
    expect(archived.status).toBe(200);
    expect(archived.body.status).toBe('success');
    expect(archived.body.payload).toEqual({ ...old, status: 'INACTIVE' });

    const replacement = await alice.api.post(
      '/v2/beneficiaries',
      cceBody({ account: old.account, docNumber: '999', alias: 'replacement' }),
    );
    expect(replacement.status).toBe(201);
    expect(replacement.body.payload.id > old.id).toBe(true);
    expect(replacement.body.payload).toMatchObject({ account: old.account, docNumber: '999', status: 'ACTIVE' });

    const readOld = await alice.api.get(`/v2/beneficiaries/${old.id}`);
    expect(readOld.status).toBe(200);
    expect(readOld.body.payload).toEqual({ ...old, status: 'INACTIVE' });

    // Never revived: the archived one cannot be edited, and archiving it again changes nothing.
    const edit = await patch(alice.api, old.id, { alias: 'revive me' });
    expect(edit.status).toBe(404);
    expect(Object.keys(edit.body)).toEqual(['error']);
    const again = await archive(alice.api, old.id);
    expect(again.status).toBe(200);
    expect(again.body.payload).toEqual({ ...old, status: 'INACTIVE' });

    // The replacement is now the ACTIVE holder, so yet another POST is 409 naming it.
    const clash2 = await alice.api.post('/v2/beneficiaries', cceBody({ account: old.account }));
    expect(clash2.status).toBe(409);
    expect(clash2.body.error).toContain(replacement.body.payload.id);
  });

  it('the same account on the other rail is another destination', async () => {
    const pm = pmBody();
    expect((await alice.api.post('/v2/beneficiaries', pm)).status).toBe(201);
    const cce = cceBody({ account: pm.account, bankCode: String(pm.account).slice(0, 4) });
    expect((await alice.api.post('/v2/beneficiaries', cce)).status).toBe(201);
  });

  it('uniqueness is per client: another client may store the same destination', async () => {
    const body = pmBody();
    expect((await alice.api.post('/v2/beneficiaries', body)).status).toBe(201);
    expect((await bob.api.post('/v2/beneficiaries', body)).status).toBe(201);
    expect((await bob.api.post('/v2/beneficiaries', body)).status).toBe(409);
  });
});

describe('PATCH /v2/beneficiaries/{id}', () => {
  it('changes only the alias; destination fields in the body are ignored', async () => {
    const created = (await alice.api.post('/v2/beneficiaries', cceBody())).body.payload;
    const res = await patch(alice.api, created.id, {
      alias: 'Renamed',
      rail: 'PM',
      account: '04149999999',
      bankCode: '0999',
      docType: 'E',
      docNumber: '1',
      beneficiaryName: 'Somebody Else',
      status: 'INACTIVE',
      id: 'ben_0000000000000001',
      createdAt: '2000-01-01T00:00:00.000Z',
    });
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('success');
    expect(res.body.payload).toEqual({ ...created, alias: 'Renamed' });
    const read = await alice.api.get(`/v2/beneficiaries/${created.id}`);
    expect(read.body.payload).toEqual({ ...created, alias: 'Renamed' });
  });

  it('validates the alias like creation does', async () => {
    const created = (await alice.api.post('/v2/beneficiaries', pmBody())).body.payload;
    const cases: [unknown, string][] = [
      [{ account: '04140000000' }, 'alias is required'],
      [{ alias: '' }, 'alias must be 1 to 100 characters and not blank'],
      [{ alias: ' ' }, 'alias must be 1 to 100 characters and not blank'],
      [{ alias: 'A'.repeat(101) }, 'alias must be 1 to 100 characters and not blank'],
      [{ alias: null }, 'alias must be a string'],
    ];
    for (const [body, message] of cases) {
      const res = await patch(alice.api, created.id, body);
      expect(res.status, message).toBe(400);
      expect(res.body).toEqual({ error: message });
    }
    expect((await alice.api.get(`/v2/beneficiaries/${created.id}`)).body.payload).toEqual(created);
  });

  it('an archived beneficiary is 404 and keeps its alias', async () => {
    const created = (await alice.api.post('/v2/beneficiaries', pmBody())).body.payload;
    await archive(alice.api, created.id);
    const res = await patch(alice.api, created.id, { alias: 'x' });
    expect(res.status).toBe(404);
    expect((await alice.api.get(`/v2/beneficiaries/${created.id}`)).body.payload.alias).toBe(created.alias);
  });
});

describe('ids that are not the caller’s', () => {
  it('another client’s id is 404 on GET, PATCH and DELETE, and stays untouched', async () => {
    const mine = (await alice.api.post('/v2/beneficiaries', cceBody())).body.payload;
    const get = await bob.api.get(`/v2/beneficiaries/${mine.id}`);
    const edit = await patch(bob.api, mine.id, { alias: 'stolen' });
    const del = await archive(bob.api, mine.id);
    for (const res of [get, edit, del]) {
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ error: 'beneficiary not found' });
    }
    expect((await alice.api.get(`/v2/beneficiaries/${mine.id}`)).body.payload).toEqual(mine);
    const bobs = await bob.api.get('/v2/beneficiaries?limit=100');
    expect(bobs.body.payload.data.map((b: { id: string }) => b.id)).not.toContain(mine.id);
  });

  it('unknown and malformed ids are 404', async () => {
    for (const id of ['ben_9999999999999999', 'ben_1', 'nope', '%27%20OR%201%3D1']) {
      expect((await alice.api.get(`/v2/beneficiaries/${id}`)).status, id).toBe(404);
      expect((await patch(alice.api, id, { alias: 'x' })).status, id).toBe(404);
      expect((await archive(alice.api, id)).status, id).toBe(404);
    }
  });
});

describe('contract', () => {
  it('the OpenAPI document declares the five routes and the whole Beneficiary object', async () => {
    const res = await fetch(`${server.baseUrl}/v2/openapi.json`);
    const doc = (await res.json()) as any;
    expect(Object.keys(doc.paths['/v2/beneficiaries']).sort()).toEqual(['get', 'post']);
    expect(Object.keys(doc.paths['/v2/beneficiaries/{id}']).sort()).toEqual(['delete', 'get', 'patch']);
    const created = doc.paths['/v2/beneficiaries'].post.responses['201'];
    const schema = created.content['application/json'].schema.properties.payload;
    expect(Object.keys(schema.properties).sort()).toEqual(BENEFICIARY_KEYS);
    expect(doc.paths['/v2/beneficiaries'].post.responses['409']).toBeDefined();
  });
});
