import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import { compactVerify, createLocalJWKSet, flattenedVerify } from 'jose';
import { describe, expect, it } from 'vitest';
import { type Jwks, lookupInJwks, signDetached, signDetachedAsync, verifyDetached } from '../../src/webhooks/jws.ts';

function rsaKey(): { privateKey: KeyObject; publicKey: KeyObject; jwks: (kid: string) => Jwks } {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const { n, e } = publicKey.export({ format: 'jwk' });
  return {
    privateKey,
    publicKey,
    jwks: (kid) => ({ keys: [{ kty: 'RSA', use: 'sig', alg: 'RS256', kid, n: n!, e: e! }] }),
  };
}

const key = rsaKey();
const other = rsaKey();
const body = Buffer.from('{"id":"evt_1","type":"payment.state_changed","test":false,"data":{"amount":"150000"}}');

describe('signDetached', () => {
  it('produces header..signature with the exact protected header of the contract', () => {
    const jws = signDetached(body, { kid: 'k1', privateKey: key.privateKey, iat: 1767225600 });
    const [header, payload, signature] = jws.split('.');
    expect(payload).toBe('');
    expect(Buffer.from(header!, 'base64url').toString('utf8')).toBe('{"alg":"RS256","kid":"k1","iat":1767225600}');
    // RS256 over a 2048-bit key: 256 bytes, 342 base64url characters without padding.
    expect(signature).toMatch(/^[A-Za-z0-9_-]{342}$/);
  });

  it('refuses an iat that is not whole seconds', () => {
    expect(() => signDetached(body, { kid: 'k1', privateKey: key.privateKey, iat: 1.5 })).toThrow(RangeError);
  });

  it('signDetachedAsync (thread pool) gives the very same bytes: RS256 signatures are deterministic', async () => {
    const options = { kid: 'k1', privateKey: key.privateKey, iat: 1767225600 };
    const signatures = await Promise.all(Array.from({ length: 8 }, () => signDetachedAsync(body, options)));
    for (const s of signatures) expect(s).toBe(signDetached(body, options));
    expect(() => signDetachedAsync(body, { ...options, iat: -1 })).toThrow(RangeError);
  });
});

describe('verifyDetached (node:crypto)', () => {
  const jws = signDetached(body, { kid: 'k1', privateKey: key.privateKey, iat: 1767225600 });

  it('verifies over the raw body and reports kid and iat', () => {
    expect(verifyDetached(body, jws, lookupInJwks(key.jwks('k1')))).toEqual({
      ok: true,
      kid: 'k1',
      iat: 1767225600,
    });
  });

  it('rejects a body changed by one byte, or re-serialised', () => {
    const changed = Buffer.from(body.toString().replace('150000', '150001'));
    expect(verifyDetached(changed, jws, lookupInJwks(key.jwks('k1')))).toEqual({
      ok: false,
      reason: 'bad_signature',
    });
    const reserialised = Buffer.from(JSON.stringify(JSON.parse(body.toString()), null, 1));
    expect(verifyDetached(reserialised, jws, lookupInJwks(key.jwks('k1'))).ok).toBe(false);
  });

  it('rejects a signature by another key under the same kid, and an unknown kid', () => {
    expect(verifyDetached(body, jws, lookupInJwks(other.jwks('k1')))).toEqual({
      ok: false,
      reason: 'bad_signature',
    });
    expect(verifyDetached(body, jws, lookupInJwks(key.jwks('k2')))).toEqual({
      ok: false,
      reason: 'unknown_kid',
    });
  });

  it('rejects malformed values and other algorithms', () => {
    const lookup = lookupInJwks(key.jwks('k1'));
    const [header, , signature] = jws.split('.');
    expect(verifyDetached(body, 'abc', lookup).ok).toBe(false);
    expect(verifyDetached(body, `${header}.${body.toString('base64url')}.${signature}`, lookup)).toEqual({
      ok: false,
      reason: 'malformed',
    });
    const none = Buffer.from('{"alg":"none","kid":"k1","iat":1}').toString('base64url');
    expect(verifyDetached(body, `${none}..${signature}`, lookup)).toEqual({
      ok: false,
      reason: 'unsupported_alg',
    });
    const hs = Buffer.from('{"alg":"HS256","kid":"k1","iat":1}').toString('base64url');
    expect(verifyDetached(body, `${hs}..${signature}`, lookup)).toEqual({
      ok: false,
      reason: 'unsupported_alg',
    });
    const crit = Buffer.from('{"alg":"RS256","kid":"k1","iat":1,"b64":false,"crit":["b64"]}').toString('base64url');
    expect(verifyDetached(body, `${crit}..${signature}`, lookup)).toEqual({
      ok: false,
      reason: 'unsupported_alg',
    });
  });
});

describe('interoperability with jose', () => {
  const jws = signDetached(body, { kid: 'k1', privateKey: key.privateKey, iat: 1767225600 });
  const [protectedHeader = '', , signature = ''] = jws.split('.');

  it('compactVerify accepts it with the raw body re-attached, picking the key from the JWKS by kid', async () => {
    const jwks = createLocalJWKSet(key.jwks('k1'));
    const compact = `${protectedHeader}.${body.toString('base64url')}.${signature}`;
    const result = await compactVerify(compact, jwks, { algorithms: ['RS256'] });
    expect(Buffer.from(result.payload).equals(body)).toBe(true);
    expect(result.protectedHeader).toEqual({ alg: 'RS256', kid: 'k1', iat: 1767225600 });
  });

  it('flattenedVerify accepts it with the detached payload', async () => {
    const result = await flattenedVerify(
      { protected: protectedHeader, payload: body.toString('base64url'), signature },
      key.publicKey,
    );
    expect(Buffer.from(result.payload).equals(body)).toBe(true);
  });

  it('jose rejects a changed body or the wrong key', async () => {
    const changed = Buffer.from(body.toString().replace('150000', '150001'));
    await expect(
      flattenedVerify({ protected: protectedHeader, payload: changed.toString('base64url'), signature }, key.publicKey),
    ).rejects.toThrow();
    await expect(
      compactVerify(
        `${protectedHeader}.${body.toString('base64url')}.${signature}`,
        createLocalJWKSet(other.jwks('k1')),
      ),
    ).rejects.toThrow();
  });
});
