import { constants, generateKeyPairSync } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSignedClient } from '../support/signed-client.ts';
import { startTestServer, type TestClient, type TestServer } from '../support/test-server.ts';

let server: TestServer;
let alice: TestClient;

async function markOf(keyId: string): Promise<string> {
  const { rows } = await server.testDb.db.query<{ m: string }>(
    'SELECT nonce_mark::text AS m FROM api_keys WHERE id = $1',
    [keyId],
  );
  return rows[0]!.m;
}

beforeAll(async () => {
  server = await startTestServer();
  alice = await server.newClient();
});
afterAll(async () => {
  await server.stop();
});

describe('authentication order and messages', () => {
  it('accepts a correctly signed request', async () => {
    const res = await alice.api.get('/v2/me');
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('success');
    expect(typeof res.body.traceId).toBe('string');
    expect(res.headers.get('x-trace-id')).toBe(res.body.traceId);
  });

  it('reports missing headers one at a time, x-api-key first, then x-nonce, then x-signature', async () => {
    const all = await alice.api.get('/v2/me', { omit: ['x-api-key', 'x-nonce', 'x-signature'] });
    expect(all).toMatchObject({ status: 401, body: { error: 'missing x-api-key header' } });
    const nonceAndSig = await alice.api.get('/v2/me', { omit: ['x-nonce', 'x-signature'] });
    expect(nonceAndSig).toMatchObject({ status: 401, body: { error: 'missing x-nonce header' } });
    const sig = await alice.api.get('/v2/me', { omit: ['x-signature'] });
    expect(sig).toMatchObject({ status: 401, body: { error: 'missing x-signature header' } });
    expect(Object.keys(sig.body)).toEqual(['error']);
  });

  it('rejects the other environment prefix with its own message, before key lookup', async () => {
    const live = createSignedClient(
      server.baseUrl,
      `sk_live_${'x'.repeat(43)}`,
      generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey,
    );
    const res = await live.get('/v2/me');
    expect(res.status).toBe(401);
    expect(res.body.error).toMatch(/environment/);
    const other = createSignedClient(
      server.baseUrl,
      'pk_test_abc',
      generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey,
    );
    const res2 = await other.get('/v2/me');
    expect(res2).toMatchObject({ status: 401, body: { error: 'invalid api key' } });
    expect(res.body.error).not.toBe(res2.body.error);
  });

  it('rejects an unknown key', async () => {
    const ghost = createSignedClient(
      server.baseUrl,
      `sk_test_${'y'.repeat(43)}`,
      generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey,
    );
    expect(await ghost.get('/v2/me')).toMatchObject({ status: 401, body: { error: 'invalid api key' } });
  });

  it('rejects a signature made with another key, a PSS signature, an altered body and a filled idempotency slot', async () => {
    const other = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey;
    const impostor = createSignedClient(server.baseUrl, alice.apiKey, other);
    expect(await impostor.get('/v2/me')).toMatchObject({ status: 401, body: { error: 'bad signature' } });
    expect(await alice.api.get('/v2/me', { padding: constants.RSA_PKCS1_PSS_PADDING })).toMatchObject({
      status: 401,
      body: { error: 'bad signature' },
    });
    expect(await alice.api.get('/v2/me', { signIdempotencySlot: 'k1', idempotencyKey: 'k1' })).toMatchObject({
      status: 401,
      body: { error: 'bad signature' },
    });
    expect(await alice.api.get('/v2/me', { signature: 'not base64 at all!' })).toMatchObject({ status: 401 });
  });

  it('tolerates an idempotency-key header on other routes when the slot stays empty', async () => {
    const res = await alice.api.get('/v2/me', { idempotencyKey: 'ignored-here' });
    expect(res.status).toBe(200);
  });

  it('treats a mismatch between x-nonce and the signed nonce as a bad signature', async () => {
    const n = alice.api.nonces.take();
    const res = await alice.api.get('/v2/me', { nonce: n, signedNonce: (BigInt(n) + 1n).toString() });
    expect(res.status).toBe(401);
  });

  it('verifies the raw request-target exactly as sent, query string included', async () => {
    const res = await alice.api.get('/v2/me?b=2&a=1');
    expect(res.status).toBe(200);
  });
});

describe('nonce window', () => {
  it('rejects malformed nonces with the replay message', async () => {
    for (const bad of ['0', '007', '-5', '12a', '1'.repeat(39), '1.5']) {
      const res = await alice.api.get('/v2/me', { nonce: bad });
      expect(res, bad).toMatchObject({ status: 401, body: { error: 'nonce replay' } });
    }
  });

  it('accepts a 38-digit nonce', async () => {
    const c = await server.newClient();
    const res = await c.api.get('/v2/me', { nonce: '9'.repeat(37) + '0' });
    expect(res.status).toBe(200);
    expect(await markOf(c.keyId)).toBe('9'.repeat(37) + '0');
  });

  it('GET: 64 below the mark once, never 65 below, never a used one; writes strictly above', async () => {
    const c = await server.newClient();
    const mark = 1_000_000n;
    expect((await c.api.get('/v2/me', { nonce: mark.toString() })).status).toBe(200);
    expect((await c.api.get('/v2/me', { nonce: (mark - 64n).toString() })).status).toBe(200);
    expect(await c.api.get('/v2/me', { nonce: (mark - 64n).toString() })).toMatchObject({
      status: 401,
      body: { error: 'nonce replay' },
    });
    expect(await c.api.get('/v2/me', { nonce: (mark - 65n).toString() })).toMatchObject({
      status: 401,
      body: { error: 'nonce replay' },
    });
    expect(await c.api.get('/v2/me', { nonce: mark.toString() })).toMatchObject({
      status: 401,
      body: { error: 'nonce replay' },
    });
    expect((await c.api.get('/v2/me', { nonce: (mark - 1n).toString() })).status).toBe(200);
    // A write below the mark is a replay even inside the window.
    const below = await c.api.request('DELETE', '/v2/beneficiaries/ben_x', { nonce: (mark - 2n).toString() });
    expect(below).toMatchObject({ status: 401, body: { error: 'nonce replay' } });
    expect(await markOf(c.keyId)).toBe(mark.toString());
  });

  it('keeps window and mark across a restart of the service', async () => {
    const c = await server.newClient();
    expect((await c.api.get('/v2/me', { nonce: '5000' })).status).toBe(200);
    expect((await c.api.get('/v2/me', { nonce: '4990' })).status).toBe(200);
    const second = await startTestServer({ testDb: server.testDb, dataDir: server.dataDir });
    try {
      const again = createSignedClient(
        second.baseUrl,
        c.apiKey,
        (await import('../support/keys.ts')).testKeyPair(await keyIndexOf(c)).privateKey,
      );
      expect(await again.get('/v2/me', { nonce: '4990' })).toMatchObject({
        status: 401,
        body: { error: 'nonce replay' },
      });
      expect(await again.get('/v2/me', { nonce: '5000' })).toMatchObject({
        status: 401,
        body: { error: 'nonce replay' },
      });
      expect((await again.get('/v2/me', { nonce: '4991' })).status).toBe(200);
      expect((await again.get('/v2/me', { nonce: '5001' })).status).toBe(200);
    } finally {
      await second.stop();
    }
  });

  it('serialises parallel reads with consecutive nonces without losing any', async () => {
    const c = await server.newClient();
    const base = 10_000n;
    const results = await Promise.all(
      Array.from({ length: 40 }, (_, i) => c.api.get('/v2/me', { nonce: (base + BigInt(i)).toString() })),
    );
    expect(results.map((r) => r.status)).toEqual(Array(40).fill(200));
    expect(await markOf(c.keyId)).toBe((base + 39n).toString());
  });
});

async function keyIndexOf(c: TestClient): Promise<number> {
  const { testKeyPair } = await import('../support/keys.ts');
  const { rows } = await server.testDb.db.query<{ f: string }>(
    'SELECT public_key_fingerprint AS f FROM api_keys WHERE id = $1',
    [c.keyId],
  );
  const { fingerprintOf } = await import('../../src/auth/public-key.ts');
  for (let i = 0; i < 3; i++) if (fingerprintOf(testKeyPair(i).publicKey) === rows[0]!.f) return i;
  throw new Error('key not from the pool');
}

describe('content-type and body checks', () => {
  it('415 before authentication leaves the nonce mark unmoved', async () => {
    const c = await server.newClient();
    await c.api.get('/v2/me', { nonce: '100' });
    const res = await c.api.request('POST', '/v2/payments', {
      rawBody: '<x/>',
      contentType: 'application/xml',
      nonce: '200',
      idempotencyKey: 'k-415',
    });
    expect(res).toMatchObject({ status: 415, body: { error: 'body content-type must be application/json' } });
    expect(await markOf(c.keyId)).toBe('100');
    const unsigned = await c.api.request('POST', '/v2/payments', {
      rawBody: '{}',
      contentType: 'application/x-www-form-urlencoded',
      omit: ['x-api-key', 'x-signature', 'x-nonce'],
    });
    expect(unsigned.status).toBe(415);
  });

  it('text/plain, with or without charset, on a body route is 400 body must be object', async () => {
    for (const ct of ['text/plain', 'text/plain; charset=utf-8']) {
      for (const [method, target] of [
        ['POST', '/v2/payments'],
        ['POST', '/v2/quotes'],
        ['POST', '/v2/beneficiaries'],
        ['PATCH', '/v2/beneficiaries/ben_x'],
        ['PUT', '/v2/webhook'],
      ] as const) {
        const res = await alice.api.request(method, target, {
          rawBody: '{"a":1}',
          contentType: ct,
          idempotencyKey: 'k',
        });
        expect(res, `${method} ${target} ${ct}`).toMatchObject({ status: 400, body: { error: 'body must be object' } });
      }
    }
  });

  it('a body on POST /v2/webhook/test is part of the envelope: signed as empty, it is a bad signature', async () => {
    const n = alice.api.nonces.take();
    const { buildEnvelope } = await import('../../src/auth/envelope.ts');
    const { signEnvelope } = await import('../support/signed-client.ts');
    const { testKeyPair } = await import('../support/keys.ts');
    const sig = signEnvelope(
      buildEnvelope({
        method: 'POST',
        target: '/v2/webhook/test',
        apiKey: alice.apiKey,
        idempotencySlot: '',
        body: Buffer.alloc(0),
        nonce: n,
      }),
      testKeyPair(await keyIndexOf(alice)).privateKey,
    );
    const res = await alice.api.request('POST', '/v2/webhook/test', { rawBody: '{"x":1}', nonce: n, signature: sig });
    expect(res).toMatchObject({ status: 401, body: { error: 'bad signature' } });
  });
});

describe('key lifecycle', () => {
  it('a deactivated key gets 401 at once', async () => {
    const c = await server.newClient();
    expect((await c.api.get('/v2/me')).status).toBe(200);
    expect((await server.admin('POST', `/admin/v1/keys/${c.keyId}/deactivate`)).status).toBe(200);
    expect(await c.api.get('/v2/me')).toMatchObject({ status: 401, body: { error: 'api key is inactive' } });
    expect((await server.admin('POST', '/admin/v1/keys/key_nope/deactivate')).status).toBe(404);
  });
});
