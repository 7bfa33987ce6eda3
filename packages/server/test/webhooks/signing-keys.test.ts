import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { calculateJwkThumbprint, compactVerify, createLocalJWKSet } from 'jose';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/shared/clock.ts';
import { lookupInJwks, signDetached, verifyDetached } from '../../src/webhooks/jws.ts';
import { MasterKeyError, masterKeyPath } from '../../src/webhooks/master-key.ts';
import { createSigningKeys, SigningKeyEnvironmentError } from '../../src/webhooks/signing-keys.ts';
import { openTestDb, type WebhookTestDb } from './helpers.ts';

let t: WebhookTestDb;
let clock: ManualClock;
const masterKey = randomBytes(32);

beforeAll(async () => {
  t = await openTestDb();
});
afterAll(async () => {
  await t.close();
});
beforeEach(async () => {
  await t.db.query('DELETE FROM webhook_signing_keys');
  clock = new ManualClock(Date.UTC(2026, 0, 1));
});

const body = Buffer.from('{"id":"evt_1","type":"payment.state_changed","test":false,"createdAt":"x","data":{}}');
const iat = () => Math.floor(clock.now().getTime() / 1000);

describe('signing keys', () => {
  it('creates one RSA 2048 key at first start and only one, whichever process starts first', async () => {
    const keys = await createSigningKeys({ db: t.db, clock, environment: 'sandbox', masterKey });
    const again = await createSigningKeys({ db: t.db, clock, environment: 'sandbox', masterKey });
    const { rows } = await t.db.query<{ n: string }>('SELECT count(*)::int AS n FROM webhook_signing_keys');
    expect(Number(rows[0]!.n)).toBe(1);
    const jwks = await keys.jwks();
    expect(jwks).toEqual(await again.jwks());
    expect(jwks.keys).toHaveLength(1);
    const [jwk] = jwks.keys;
    expect(Object.keys(jwk!).sort()).toEqual(['alg', 'e', 'kid', 'kty', 'n', 'use']);
    expect(jwk).toMatchObject({ kty: 'RSA', use: 'sig', alg: 'RS256', e: 'AQAB' });
    expect(Buffer.from(jwk!.n, 'base64url').length).toBe(256);
    // kid is the RFC 7638 thumbprint, as jose computes it.
    expect(jwk!.kid).toBe(await calculateJwkThumbprint({ kty: 'RSA', n: jwk!.n, e: jwk!.e }));
  });

  it('concurrent first starts still leave exactly one active key', async () => {
    const other = t.openAnother() ?? t.db;
    await Promise.all([
      createSigningKeys({ db: t.db, clock, environment: 'sandbox', masterKey }),
      createSigningKeys({ db: other, clock, environment: 'sandbox', masterKey }),
      createSigningKeys({ db: other, clock, environment: 'sandbox', masterKey }),
    ]);
    const { rows } = await t.db.query('SELECT kid FROM webhook_signing_keys');
    expect(rows).toHaveLength(1);
  });

  it('signs with the active key; the JWKS verifies it with node:crypto and with jose', async () => {
    const keys = await createSigningKeys({ db: t.db, clock, environment: 'sandbox', masterKey });
    const signer = await keys.activeSigner();
    const jws = signDetached(body, { ...signer, iat: iat() });
    const jwks = await keys.jwks();
    expect(verifyDetached(body, jws, lookupInJwks(jwks))).toMatchObject({ ok: true, kid: signer.kid });
    const [h, , s] = jws.split('.');
    await expect(
      compactVerify(`${h}.${body.toString('base64url')}.${s}`, createLocalJWKSet(jwks)),
    ).resolves.toBeDefined();
  });

  it('rotation: the old kid keeps verifying while retiring, and stops once retired', async () => {
    const keys = await createSigningKeys({ db: t.db, clock, environment: 'sandbox', masterKey });
    const old = await keys.activeSigner();
    const oldSignature = signDetached(body, { ...old, iat: iat() });

    const { kid, previousKid } = await keys.rotate();
    expect(previousKid).toBe(old.kid);
    expect(kid).not.toBe(old.kid);
    expect((await keys.activeSigner()).kid).toBe(kid);
    const both = await keys.jwks();
    expect(both.keys.map((k) => k.kid)).toEqual([kid, old.kid]);
    expect(verifyDetached(body, oldSignature, lookupInJwks(both)).ok).toBe(true);
    const newSignature = signDetached(body, { ...(await keys.activeSigner()), iat: iat() });
    expect(verifyDetached(body, newSignature, lookupInJwks(both))).toMatchObject({ ok: true, kid });

    expect(await keys.retire(kid)).toEqual({ ok: false, error: 'is_active' });
    expect(await keys.retire('no-such-kid')).toEqual({ ok: false, error: 'not_found' });
    expect(await keys.retire(old.kid)).toEqual({ ok: true });
    expect(await keys.retire(old.kid)).toEqual({ ok: false, error: 'already_retired' });
    const after = await keys.jwks();
    expect(after.keys.map((k) => k.kid)).toEqual([kid]);
    expect(verifyDetached(body, oldSignature, lookupInJwks(after))).toEqual({
      ok: false,
      reason: 'unknown_kid',
    });
    expect(verifyDetached(body, newSignature, lookupInJwks(after)).ok).toBe(true);

    const { rows } = await t.db.query<{ private_key_enc: string | null }>(
      'SELECT private_key_enc FROM webhook_signing_keys WHERE kid = $1',
      [old.kid],
    );
    expect(rows[0]!.private_key_enc).toBeNull();
    expect((await keys.list()).map((k) => [k.kid, k.status])).toEqual(
      expect.arrayContaining([
        [kid, 'active'],
        [old.kid, 'retired'],
      ]),
    );
  });

  it('another process sees a rotation after its recheck interval', async () => {
    const a = await createSigningKeys({ db: t.db, clock, environment: 'sandbox', masterKey });
    const b = await createSigningKeys({
      db: t.openAnother() ?? t.db,
      clock,
      environment: 'sandbox',
      masterKey,
      recheckMs: 1000,
    });
    const first = (await b.activeSigner()).kid;
    const { kid } = await a.rotate();
    // Within the interval b may still sign with the old key: harmless, it stays in the JWKS as retiring.
    expect((await b.activeSigner()).kid).toBe(first);
    clock.advance(1000);
    expect((await b.activeSigner()).kid).toBe(kid);
    expect((await b.jwks()).keys.map((k) => k.kid)).toEqual([kid, first]);
  });

  it('stores the private key sealed, never as PEM or DER, and the public JWK without private members', async () => {
    await createSigningKeys({ db: t.db, clock, environment: 'sandbox', masterKey });
    const { rows } = await t.db.query<{ private_key_enc: string; public_jwk: unknown }>(
      'SELECT private_key_enc, public_jwk FROM webhook_signing_keys',
    );
    const stored = rows[0]!.private_key_enc;
    expect(stored).toMatch(/^v1\.[\w-]{16}\.[\w-]+\.[\w-]{22}$/);
    expect(stored).not.toContain('BEGIN');
    // PKCS#8 DER of an RSA key starts 30 82 .. .. 02 01 00 30 0d 06 09 2a 86 48 86 f7 0d 01 01 01.
    const ciphertext = Buffer.from(stored.split('.')[2]!, 'base64url');
    expect(ciphertext.includes(Buffer.from('2a864886f70d010101', 'hex'))).toBe(false);
    const jwk = (
      typeof rows[0]!.public_jwk === 'string' ? JSON.parse(rows[0]!.public_jwk) : rows[0]!.public_jwk
    ) as object;
    expect(Object.keys(jwk).sort()).toEqual(['alg', 'e', 'kid', 'kty', 'n', 'use']);
  });

  it('a wrong master key fails to load', async () => {
    await createSigningKeys({ db: t.db, clock, environment: 'sandbox', masterKey });
    await expect(
      createSigningKeys({ db: t.db, clock, environment: 'sandbox', masterKey: randomBytes(32) }),
    ).rejects.toThrow(MasterKeyError);
  });

  it('refuses keys of the other environment, even when the row is relabelled', async () => {
    await createSigningKeys({ db: t.db, clock, environment: 'sandbox', masterKey });
    await expect(createSigningKeys({ db: t.db, clock, environment: 'production', masterKey })).rejects.toThrow(
      SigningKeyEnvironmentError,
    );
    // The environment is bound into the sealed value: editing the column does not make it usable.
    await t.db.query(`UPDATE webhook_signing_keys SET environment = 'production'`);
    await expect(createSigningKeys({ db: t.db, clock, environment: 'production', masterKey })).rejects.toThrow(
      MasterKeyError,
    );
  });

  it('a rotation refuses to demote a key of the other environment', async () => {
    const keys = await createSigningKeys({ db: t.db, clock, environment: 'sandbox', masterKey });
    const before = (await keys.activeSigner()).kid;
    await t.db.query(`UPDATE webhook_signing_keys SET environment = 'production'`);
    await expect(keys.rotate()).rejects.toThrow(SigningKeyEnvironmentError);
    const { rows } = await t.db.query<{ kid: string; status: string }>('SELECT kid, status FROM webhook_signing_keys');
    expect(rows).toEqual([{ kid: before, status: 'active' }]);
  });

  describe('master key from the data dir', () => {
    let dataDir: string;
    beforeEach(async () => {
      dataDir = await mkdtemp(path.join(tmpdir(), 'dispersa-keys-'));
    });
    afterEach(async () => {
      await rm(dataDir, { recursive: true, force: true });
    });

    it('creates the master key file at first start and loads the keys with it afterwards', async () => {
      const first = await createSigningKeys({ db: t.db, clock, environment: 'sandbox', dataDir });
      expect((await stat(masterKeyPath(dataDir))).mode & 0o777).toBe(0o600);
      const second = await createSigningKeys({ db: t.db, clock, environment: 'sandbox', dataDir });
      expect((await second.activeSigner()).kid).toBe((await first.activeSigner()).kid);
      await expect(createSigningKeys({ db: t.db, clock, environment: 'sandbox' })).rejects.toThrow(TypeError);
    });
  });
});
