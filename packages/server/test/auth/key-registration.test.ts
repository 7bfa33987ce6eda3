import { createPublicKey, generateKeyPairSync } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fingerprintOf } from '../../src/auth/public-key.ts';
import { testKeyPair } from '../support/keys.ts';
import { startTestServer, type TestServer } from '../support/test-server.ts';

let server: TestServer;
let clientId: string;

beforeAll(async () => {
  server = await startTestServer();
  const c = await server.admin('POST', '/admin/v1/clients', { name: 'keys', currency: 'VES' });
  clientId = c.body.payload.clientId;
});
afterAll(async () => {
  await server.stop();
});

const register = (publicKeyPem: unknown) =>
  server.admin('POST', `/admin/v1/clients/${clientId}/keys`, { publicKeyPem });

describe('public key registration rules', () => {
  it('accepts SPKI and PKCS#1 PEM of the same key with the same OpenSSH-style fingerprint', async () => {
    const pair = testKeyPair(0);
    const spki = await register(pair.publicPem);
    const pkcs1 = await register(pair.publicKey.export({ type: 'pkcs1', format: 'pem' }).toString());
    expect(spki.status).toBe(201);
    expect(pkcs1.status).toBe(201);
    expect(spki.body.payload.publicKeyFingerprint).toMatch(/^SHA256:[A-Za-z0-9+/]{43}$/);
    expect(pkcs1.body.payload.publicKeyFingerprint).toBe(spki.body.payload.publicKeyFingerprint);
    expect(spki.body.payload).toMatchObject({ environment: 'sandbox', limitsConfigured: false });
    expect(spki.body.payload.apiKey).toMatch(/^sk_test_/);
    // Independent computation: SHA-256 over the SPKI DER, unpadded base64.
    const { createHash } = await import('node:crypto');
    const der = pair.publicKey.export({ type: 'spki', format: 'der' });
    expect(spki.body.payload.publicKeyFingerprint).toBe(
      `SHA256:${createHash('sha256').update(der).digest('base64').replace(/=+$/, '')}`,
    );
  });

  it('accepts 3072 and 4096 bit keys', async () => {
    for (const bits of [3072, 4096]) {
      const { publicKey } = generateKeyPairSync('rsa', { modulusLength: bits });
      expect((await register(publicKey.export({ type: 'spki', format: 'pem' }))).status).toBe(201);
    }
  });

  it('rejects each broken rule with 400 naming it', async () => {
    const small = generateKeyPairSync('rsa', { modulusLength: 1024 }).publicKey.export({ type: 'spki', format: 'pem' });
    const e3 = generateKeyPairSync('rsa', { modulusLength: 2048, publicExponent: 3 }).publicKey.export({
      type: 'spki',
      format: 'pem',
    });
    const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey.export({ type: 'spki', format: 'pem' });
    const pair = testKeyPair(0);
    const der = pair.publicKey.export({ type: 'spki', format: 'der' });
    const cases: [unknown, RegExp][] = [
      [small, /at least 2048/],
      [e3, /65537/],
      [ec, /only RSA/],
      [JSON.stringify(pair.publicKey.export({ format: 'jwk' })), /JWK/],
      [der.toString('base64'), /DER and bare base64/],
      [der.toString('latin1'), /DER and bare base64/],
      [pair.privatePem, /private key block/],
      [pair.privateKey.export({ type: 'pkcs1', format: 'pem' }), /private key block/],
      [`${pair.publicPem}\n${pair.privatePem}`, /private key block/],
      ['-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----', /not accepted/],
      ['', /required/],
      [42, /required/],
    ];
    for (const [pem, rule] of cases) {
      const res = await register(pem);
      expect(res.status, String(rule)).toBe(400);
      expect(res.body.error).toMatch(rule);
      expect(Object.keys(res.body)).toEqual(['error']);
    }
  });

  it('never returns the API key again and stores only its hash', async () => {
    const res = await register(testKeyPair(1).publicPem);
    const apiKey = res.body.payload.apiKey as string;
    const view = await server.admin('GET', `/admin/v1/clients/${clientId}`);
    expect(view.status).toBe(200);
    expect(JSON.stringify(view.body)).not.toContain(apiKey);
    const { rows } = await server.testDb.db.query('SELECT * FROM api_keys');
    expect(JSON.stringify(rows)).not.toContain(apiKey);
  });
});

describe('operator API basics', () => {
  it('requires the bearer token', async () => {
    const res = await fetch(`${server.adminUrl}/admin/v1/clients/${clientId}`);
    expect(res.status).toBe(401);
    expect(await res.json()).toEqual({ error: 'missing or invalid bearer token' });
    const wrong = await fetch(`${server.adminUrl}/admin/v1/clients/${clientId}`, {
      headers: { authorization: 'Bearer nope' },
    });
    expect(wrong.status).toBe(401);
  });

  it('validates client creation and answers 404 for unknown ids', async () => {
    expect((await server.admin('POST', '/admin/v1/clients', { name: 'x', currency: 'usd' })).status).toBe(400);
    expect((await server.admin('POST', '/admin/v1/clients', { currency: 'USD' })).status).toBe(400);
    expect((await server.admin('GET', '/admin/v1/clients/cli_nope')).status).toBe(404);
    expect(
      (await server.admin('POST', '/admin/v1/clients/cli_nope/keys', { publicKeyPem: testKeyPair(0).publicPem }))
        .status,
    ).toBe(404);
    expect((await server.admin('PUT', '/admin/v1/keys/key_nope/limits', { limits: [] })).status).toBe(404);
  });

  it('validates limits and shows them in /v2/me with limitsConfigured', async () => {
    const c = await server.newClient({ limits: null });
    let me = await c.api.get('/v2/me');
    expect(me.body.payload).toMatchObject({
      keyType: 'secret',
      environment: 'sandbox',
      limits: [],
      limitsConfigured: false,
    });
    const bad = await server.admin('PUT', `/admin/v1/keys/${c.keyId}/limits`, {
      limits: [{ rail: 'PM', perPaymentMaxMinor: 100, dailyMaxMinor: '1000' }],
    });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toMatch(/perPaymentMaxMinor/);
    const partial = await server.admin('PUT', `/admin/v1/keys/${c.keyId}/limits`, {
      limits: [{ rail: 'PM', perPaymentMaxMinor: '100000', dailyMaxMinor: '1000000' }],
    });
    expect(partial.body.payload.limitsConfigured).toBe(false);
    me = await c.api.get('/v2/me');
    expect(me.body.payload.limitsConfigured).toBe(false);
    await server.admin('PUT', `/admin/v1/keys/${c.keyId}/limits`, {
      limits: [
        { rail: 'PM', perPaymentMaxMinor: '100000', dailyMaxMinor: '1000000' },
        { rail: 'CCE', perPaymentMaxMinor: '200000', dailyMaxMinor: '2000000' },
      ],
    });
    me = await c.api.get('/v2/me');
    expect(me.body.payload.limitsConfigured).toBe(true);
    expect(me.body.payload.limits).toContainEqual({
      rail: 'PM',
      perPaymentMaxMinor: '100000',
      dailyMaxMinor: '1000000',
      client: { perPaymentMaxMinor: '100000', dailyMaxMinor: '1000000' },
      service: null,
    });
    expect(me.body.payload.publicKeyFingerprint).toMatch(/^SHA256:/);
    expect(me.body.payload.webhook).toEqual({ url: null, pendingChange: null });
    expect(JSON.stringify(me.body)).not.toContain(c.apiKey);
  });
});

describe('service limits', () => {
  it("the effective limit is the lower of the key's and the service's", async () => {
    const s = await startTestServer({
      env: { DISPERSA_SERVICE_LIMITS: '[{"rail":"PM","perPaymentMaxMinor":"50000","dailyMaxMinor":"5000000"}]' },
    });
    try {
      const c = await s.newClient({
        limits: [
          { rail: 'PM', perPaymentMaxMinor: '100000', dailyMaxMinor: '1000000' },
          { rail: 'CCE', perPaymentMaxMinor: '100000', dailyMaxMinor: '1000000' },
        ],
      });
      const me = await c.api.get('/v2/me');
      const pm = me.body.payload.limits.find((l: { rail: string }) => l.rail === 'PM');
      expect(pm).toEqual({
        rail: 'PM',
        perPaymentMaxMinor: '50000',
        dailyMaxMinor: '1000000',
        client: { perPaymentMaxMinor: '100000', dailyMaxMinor: '1000000' },
        service: { perPaymentMaxMinor: '50000', dailyMaxMinor: '5000000' },
      });
    } finally {
      await s.stop();
    }
  });
});

it('fingerprintOf agrees for a key read back from SPKI PEM', () => {
  const pair = testKeyPair(0);
  expect(fingerprintOf(createPublicKey(pair.publicPem))).toBe(fingerprintOf(pair.publicKey));
});
