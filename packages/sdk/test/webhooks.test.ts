import { constants, generateKeyPairSync, type KeyObject, sign } from 'node:crypto';
import { CompactSign, compactVerify, importJWK } from 'jose';
import { describe, expect, it } from 'vitest';
import { SignatureVerificationError } from '../src/errors.ts';
import type { Jwk, Jwks } from '../src/types.ts';
import { createJwksCache, parseEvent, signWebhookForTest, verifyWebhook } from '../src/webhooks.ts';
import { rsaKeyPair } from './support/keys.ts';

const current = rsaKeyPair();
const next = rsaKeyPair();
const NOW = 1_767_225_600_000;
const now = () => NOW;
const IAT = NOW / 1000;

function jwkOf(publicKey: KeyObject, kid: string): Jwk {
  return { ...(publicKey.export({ format: 'jwk' }) as Jwk), kid, use: 'sig', alg: 'RS256' };
}
const jwks: Jwks = { keys: [jwkOf(current.publicKey, 'k1')] };

const body = Buffer.from(
  JSON.stringify({
    id: 'evt_1',
    type: 'payment.state_changed',
    test: false,
    createdAt: '2026-01-01T00:00:00.000Z',
    data: { payment: { intentId: 'pay_1', id: 'pay_1', state: 'completed' }, previousState: 'unknown' },
  }),
);

function failure(run: () => unknown): SignatureVerificationError {
  try {
    run();
  } catch (error) {
    if (error instanceof SignatureVerificationError) return error;
    throw error;
  }
  throw new Error('expected a SignatureVerificationError');
}

const b64url = (value: Buffer | string) => Buffer.from(value).toString('base64url');

describe('verifyWebhook', () => {
  it('accepts a delivery signed by the key its kid names, and reports kid and iat', () => {
    const header = signWebhookForTest(body, current.privateKey, 'k1', IAT);
    expect(header).toMatch(/^[A-Za-z0-9_-]+\.\.[A-Za-z0-9_-]+$/);
    expect(verifyWebhook(body, header, jwks, { now })).toEqual({ alg: 'RS256', kid: 'k1', iat: IAT });
    expect(verifyWebhook(body.toString('utf8'), header, jwks, { now }).kid).toBe('k1');
  });

  it('rejects a body changed by one byte', () => {
    const header = signWebhookForTest(body, current.privateKey, 'k1', IAT);
    const tampered = Buffer.from(body);
    const at = tampered.length - 3;
    tampered[at] = (tampered[at] ?? 0) ^ 0x01;
    expect(failure(() => verifyWebhook(tampered, header, jwks, { now })).reason).toBe('bad_signature');
  });

  it('rejects a body passed as a parsed object, saying why', () => {
    const header = signWebhookForTest(body, current.privateKey, 'k1', IAT);
    const parsed = JSON.parse(body.toString()) as unknown as string;
    const error = failure(() => verifyWebhook(parsed, header, jwks, { now }));
    expect(error.reason).toBe('parsed_body');
    expect(error.message).toMatch(/raw request body.*not a parsed object/);
  });

  it('rejects an iat outside the tolerance either way, accepts one inside', () => {
    const old = signWebhookForTest(body, current.privateKey, 'k1', IAT - 301);
    const future = signWebhookForTest(body, current.privateKey, 'k1', IAT + 301);
    const edge = signWebhookForTest(body, current.privateKey, 'k1', IAT - 300);
    expect(failure(() => verifyWebhook(body, old, jwks, { now })).reason).toBe('timestamp_outside_tolerance');
    expect(failure(() => verifyWebhook(body, future, jwks, { now })).reason).toBe('timestamp_outside_tolerance');
    expect(verifyWebhook(body, edge, jwks, { now }).iat).toBe(IAT - 300);
    expect(verifyWebhook(body, old, jwks, { now, toleranceSec: 600 }).iat).toBe(IAT - 301);
  });

  it('rejects a kid that is not in the key set', () => {
    const header = signWebhookForTest(body, next.privateKey, 'k2', IAT);
    expect(failure(() => verifyWebhook(body, header, jwks, { now })).reason).toBe('unknown_kid');
  });

  it('rejects an RSA-PSS signature, whether it claims RS256 or PS256', () => {
    const protectedRs = b64url(JSON.stringify({ alg: 'RS256', kid: 'k1', iat: IAT }));
    const pss = sign('sha256', Buffer.from(`${protectedRs}.${b64url(body)}`), {
      key: current.privateKey,
      padding: constants.RSA_PKCS1_PSS_PADDING,
    });
    expect(failure(() => verifyWebhook(body, `${protectedRs}..${b64url(pss)}`, jwks, { now })).reason).toBe(
      'bad_signature',
    );
    const protectedPs = b64url(JSON.stringify({ alg: 'PS256', kid: 'k1', iat: IAT }));
    const ps = sign('sha256', Buffer.from(`${protectedPs}.${b64url(body)}`), {
      key: current.privateKey,
      padding: constants.RSA_PKCS1_PSS_PADDING,
    });
    expect(failure(() => verifyWebhook(body, `${protectedPs}..${b64url(ps)}`, jwks, { now })).reason).toBe(
      'unsupported_alg',
    );
  });

  it('rejects other algorithms, attached payloads, extensions and garbage headers', () => {
    const good = signWebhookForTest(body, current.privateKey, 'k1', IAT);
    const [p, , s] = good.split('.');
    const withHeader = (fields: object) => `${b64url(JSON.stringify(fields))}..${s}`;
    const reason = (header: string) => failure(() => verifyWebhook(body, header, jwks, { now })).reason;
    expect(reason(withHeader({ alg: 'none', kid: 'k1', iat: IAT }))).toBe('unsupported_alg');
    expect(reason(withHeader({ alg: 'HS256', kid: 'k1', iat: IAT }))).toBe('unsupported_alg');
    expect(reason(withHeader({ alg: 'RS256', kid: 'k1', iat: IAT, b64: false, crit: ['b64'] }))).toBe(
      'malformed_header',
    );
    expect(reason(withHeader({ alg: 'RS256', iat: IAT }))).toBe('malformed_header');
    expect(reason(withHeader({ alg: 'RS256', kid: 'k1' }))).toBe('malformed_header');
    expect(reason(`${p}.${b64url(body)}.${s}`)).toBe('malformed_header');
    expect(reason('')).toBe('malformed_header');
    expect(reason('a.b')).toBe('malformed_header');
    expect(reason('!!..??')).toBe('malformed_header');
  });

  it('rejects a key set entry that is not a usable RS256 signing key', () => {
    const weak = generateKeyPairSync('rsa', { modulusLength: 1024 });
    const header = signWebhookForTest(body, weak.privateKey, 'weak', IAT);
    const set = { keys: [jwkOf(weak.publicKey, 'weak'), { ...jwkOf(current.publicKey, 'enc'), use: 'enc' }] };
    expect(failure(() => verifyWebhook(body, header, set, { now })).reason).toBe('invalid_key');
    const enc = signWebhookForTest(body, current.privateKey, 'enc', IAT);
    expect(failure(() => verifyWebhook(body, enc, set, { now })).reason).toBe('invalid_key');
  });
});

describe('agreement with jose (RFC 7515 appendix F, detached payload)', () => {
  it('jose verifies the header we make once the raw body is put back as the payload', async () => {
    const header = signWebhookForTest(body, current.privateKey, 'k1', IAT);
    const [p, , s] = header.split('.');
    const key = await importJWK(jwkOf(current.publicKey, 'k1'), 'RS256');
    const result = await compactVerify(`${p}.${b64url(body)}.${s}`, key);
    expect(result.protectedHeader).toEqual({ alg: 'RS256', kid: 'k1', iat: IAT });
    expect(Buffer.from(result.payload).equals(body)).toBe(true);
    await expect(compactVerify(`${p}.${b64url(Buffer.from('{}'))}.${s}`, key)).rejects.toThrow();
  });

  it('we verify what jose signs, with the payload detached', async () => {
    const jws = await new CompactSign(body)
      .setProtectedHeader({ alg: 'RS256', kid: 'k1', iat: IAT })
      .sign(current.privateKey);
    const [p, , s] = jws.split('.');
    expect(verifyWebhook(body, `${p}..${s}`, jwks, { now })).toEqual({ alg: 'RS256', kid: 'k1', iat: IAT });
    const ps256 = await new CompactSign(body)
      .setProtectedHeader({ alg: 'PS256', kid: 'k1', iat: IAT })
      .sign(current.privateKey);
    const [pp, , ps] = ps256.split('.');
    expect(failure(() => verifyWebhook(body, `${pp}..${ps}`, jwks, { now })).reason).toBe('unsupported_alg');
  });
});

describe('createJwksCache', () => {
  function counting(sets: Jwks[]) {
    let calls = 0;
    const fetchJwks = async () => sets[Math.min(calls++, sets.length - 1)] as Jwks;
    return { fetchJwks, calls: () => calls };
  }
  const rotated: Jwks = { keys: [jwkOf(current.publicKey, 'k1'), jwkOf(next.publicKey, 'k2')] };

  it('fetches once and then serves from the cache', async () => {
    const source = counting([jwks]);
    const cache = createJwksCache(source.fetchJwks, { now });
    const header = signWebhookForTest(body, current.privateKey, 'k1', IAT);
    await cache.verify(body, header, { now });
    await cache.verify(body, header, { now });
    await Promise.all([cache.get(), cache.get()]);
    expect(source.calls()).toBe(1);
  });

  it('refetches once on an unknown kid (a rotated key) and then verifies', async () => {
    const source = counting([jwks, rotated]);
    const cache = createJwksCache(source.fetchJwks, { now });
    await cache.get();
    const header = signWebhookForTest(body, next.privateKey, 'k2', IAT);
    expect((await cache.verify(body, header, { now })).kid).toBe('k2');
    expect(source.calls()).toBe(2);
  });

  it('refuses a kid still unknown after the refetch, and does not refetch again within minRefetchMs', async () => {
    const source = counting([jwks]);
    let clock = NOW;
    const cache = createJwksCache(source.fetchJwks, { now: () => clock, minRefetchMs: 10_000 });
    await cache.get();
    const forged = signWebhookForTest(body, next.privateKey, 'k9', IAT);
    await expect(cache.verify(body, forged, { now })).rejects.toMatchObject({ reason: 'unknown_kid' });
    expect(source.calls()).toBe(2);
    await expect(cache.verify(body, forged, { now })).rejects.toMatchObject({ reason: 'unknown_kid' });
    expect(source.calls()).toBe(2);
    clock += 10_000;
    await expect(cache.verify(body, forged, { now })).rejects.toMatchObject({ reason: 'unknown_kid' });
    expect(source.calls()).toBe(3);
  });

  it('does not refetch twice when the first fetch already lacked the kid', async () => {
    const source = counting([jwks]);
    const cache = createJwksCache(source.fetchJwks, { now });
    const header = signWebhookForTest(body, next.privateKey, 'k2', IAT);
    await expect(cache.verify(body, header, { now })).rejects.toMatchObject({ reason: 'unknown_kid' });
    expect(source.calls()).toBe(1);
  });

  it('fetches again once the ttl has passed', async () => {
    const source = counting([jwks, rotated]);
    let clock = NOW;
    const cache = createJwksCache(source.fetchJwks, { now: () => clock, ttlMs: 60_000 });
    expect((await cache.get()).keys).toHaveLength(1);
    clock += 60_000;
    expect((await cache.get()).keys).toHaveLength(2);
  });

  it('shares one fetch between concurrent callers', async () => {
    let calls = 0;
    const cache = createJwksCache(async () => {
      calls++;
      await new Promise((resolve) => setTimeout(resolve, 20));
      return jwks;
    });
    await Promise.all(Array.from({ length: 5 }, () => cache.get()));
    expect(calls).toBe(1);
  });
});

describe('parseEvent', () => {
  const base = { id: 'evt_9', test: true, createdAt: '2026-01-01T00:00:00.000Z' };

  it('types a payment state change', () => {
    const event = parseEvent(body);
    expect(event.type).toBe('payment.state_changed');
    if (event.type !== 'payment.state_changed') throw new Error('narrowing');
    expect(event.data.payment.state).toBe('completed');
    expect(event.data.previousState).toBe('unknown');
    expect(event.test).toBe(false);
  });

  it('types a verification challenge', () => {
    const event = parseEvent(JSON.stringify({ ...base, type: 'webhook.verification', data: { challenge: 'c1' } }));
    expect(event).toEqual({ ...base, type: 'webhook.verification', data: { challenge: 'c1' } });
  });

  it('keeps an event type it does not know as unrecognized, with the original name', () => {
    const event = parseEvent(JSON.stringify({ ...base, type: 'payout.batch_done', data: { n: 1 } }));
    expect(event).toEqual({
      ...base,
      type: 'unrecognized',
      originalType: 'payout.batch_done',
      data: { n: 1 },
    });
  });

  it('refuses bodies that are not events', () => {
    expect(() => parseEvent('not json')).toThrow(/not JSON/);
    expect(() => parseEvent('[]')).toThrow(/not a JSON object/);
    expect(() => parseEvent(JSON.stringify({ ...base, id: '' }))).toThrow(/no id/);
    expect(() => parseEvent(JSON.stringify({ ...base, type: 'payment.state_changed', data: {} }))).toThrow(
      /data.payment/,
    );
    expect(() => parseEvent({ id: 'x' } as unknown as string)).toThrow(/raw request body/);
  });
});
