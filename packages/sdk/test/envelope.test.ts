import { spawnSync } from 'node:child_process';
import { constants, generateKeyPairSync, sign, verify } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { buildEnvelope, carriesIdempotencyKey, signEnvelope, toSigningKey } from '../src/envelope.ts';
import { rsaKeyPair } from './support/keys.ts';

const keys = rsaKeyPair();
const dir = mkdtempSync(join(tmpdir(), 'dispersa-envelope-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('buildEnvelope', () => {
  it('joins the six pieces with single NUL bytes, idempotency-key in slot 4 on POST /v2/payments', () => {
    const body = '{"amountMinor":"150000","currency":"VES"}';
    const envelope = buildEnvelope({
      method: 'post',
      target: '/v2/payments',
      apiKey: 'sk_test_abc',
      idempotencyKey: 'idem-1',
      body,
      nonce: '1700000000000000001',
    });
    const expected = `POST\u0000/v2/payments\u0000sk_test_abc\u0000idem-1\u0000${body}\u00001700000000000000001`;
    expect(envelope.equals(Buffer.from(expected, 'utf8'))).toBe(true);
    expect(envelope.filter((byte) => byte === 0x00).length).toBe(5);
    expect(envelope.includes(0x0a)).toBe(false);
  });

  it('keeps the empty idempotency slot and the empty body as adjacent separators on a GET', () => {
    const envelope = buildEnvelope({
      method: 'GET',
      target: '/v2/payments?status=completed&limit=2',
      apiKey: 'sk_test_abc',
      nonce: '42',
    });
    expect(envelope.toString('hex')).toBe(
      Buffer.from('GET\0/v2/payments?status=completed&limit=2\0sk_test_abc\0\0\0' + '42').toString('hex'),
    );
    const pieces = envelope.toString('utf8').split('\0');
    expect(pieces).toEqual(['GET', '/v2/payments?status=completed&limit=2', 'sk_test_abc', '', '', '42']);
  });

  it('carries the raw body bytes untouched, including non-ASCII text', () => {
    const body = Buffer.from('{"alias":"Pérez ñ"}', 'utf8');
    const envelope = buildEnvelope({
      method: 'PATCH',
      target: '/v2/beneficiaries/b1',
      apiKey: 'k',
      body,
      nonce: '7',
    });
    expect(envelope.subarray(envelope.length - 2 - body.length, envelope.length - 2).equals(body)).toBe(true);
  });

  it('puts the key in slot 4 only on POST /v2/payments and POST /v2/quotes', () => {
    expect(carriesIdempotencyKey('POST', '/v2/payments')).toBe(true);
    expect(carriesIdempotencyKey('post', '/v2/quotes')).toBe(true);
    expect(carriesIdempotencyKey('POST', '/base/v2/payments')).toBe(true);
    expect(carriesIdempotencyKey('GET', '/v2/payments')).toBe(false);
    expect(carriesIdempotencyKey('POST', '/v2/beneficiaries')).toBe(false);
    expect(carriesIdempotencyKey('POST', '/v2/webhook/test')).toBe(false);
    expect(carriesIdempotencyKey('GET', '/v2/payments/p1')).toBe(false);
  });

  it('refuses envelopes the server would read differently', () => {
    const base = { method: 'GET', target: '/v2/me', apiKey: 'k', nonce: '1' };
    expect(() => buildEnvelope({ ...base, target: '/v2/payments?' })).toThrow(/trailing|empty query/);
    expect(() => buildEnvelope({ ...base, target: 'http://h/v2/me' })).toThrow(/origin form/);
    expect(() => buildEnvelope({ ...base, nonce: '0' })).toThrow(/nonce/);
    expect(() => buildEnvelope({ ...base, nonce: '1'.repeat(39) })).toThrow(/nonce/);
    expect(() => buildEnvelope({ ...base, apiKey: 'k\0x' })).toThrow(/NUL/);
    expect(() => buildEnvelope({ ...base, idempotencyKey: 'x' })).toThrow(/empty idempotency slot/);
    expect(() => buildEnvelope({ ...base, method: 'POST', target: '/v2/payments' })).toThrow(/needs an idempotency/);
    expect(buildEnvelope({ ...base, nonce: '9'.repeat(38) }).length).toBeGreaterThan(38);
  });
});

describe('signEnvelope', () => {
  const envelope = buildEnvelope({
    method: 'POST',
    target: '/v2/quotes',
    apiKey: 'sk_test_abc',
    idempotencyKey: 'q-1',
    body: '{"amountType":"SOURCE","amountMinor":"1000"}',
    nonce: '1700000000000000000',
  });

  it('makes a base64 PKCS#1 v1.5 SHA-256 signature that the openssl CLI verifies', () => {
    const signature = signEnvelope(envelope, keys.privatePem);
    writeFileSync(join(dir, 'pub.pem'), keys.publicPem);
    writeFileSync(join(dir, 'sig.bin'), Buffer.from(signature, 'base64'));
    writeFileSync(join(dir, 'envelope.bin'), envelope);
    const args = ['dgst', '-sha256', '-verify', join(dir, 'pub.pem'), '-signature', join(dir, 'sig.bin')];
    const good = spawnSync('openssl', [...args, join(dir, 'envelope.bin')], { encoding: 'utf8' });
    expect(good.status, good.stderr).toBe(0);
    expect(good.stdout).toContain('Verified OK');

    const tampered = Buffer.from(envelope);
    tampered[tampered.length - 1] = 0x31;
    writeFileSync(join(dir, 'tampered.bin'), tampered);
    const bad = spawnSync('openssl', [...args, join(dir, 'tampered.bin')], { encoding: 'utf8' });
    expect(bad.status).not.toBe(0);
  });

  it('signs the same with a KeyObject and a PKCS#1 PEM, and is not PSS', () => {
    const pkcs1 = keys.privateKey.export({ type: 'pkcs1', format: 'pem' }).toString();
    const signature = signEnvelope(envelope, keys.privateKey);
    // PKCS#1 v1.5 is deterministic, so every form of the same key gives the same bytes.
    expect(signEnvelope(envelope, pkcs1)).toBe(signature);
    const bytes = Buffer.from(signature, 'base64');
    expect(bytes.length).toBe(256);
    expect(verify('sha256', envelope, { key: keys.publicKey, padding: constants.RSA_PKCS1_PADDING }, bytes)).toBe(true);
    const pss = { key: keys.publicKey, padding: constants.RSA_PKCS1_PSS_PADDING };
    expect(verify('sha256', envelope, pss, bytes)).toBe(false);
    const pssSigned = sign('sha256', envelope, {
      key: keys.privateKey,
      padding: constants.RSA_PKCS1_PSS_PADDING,
    });
    expect(pssSigned.equals(bytes)).toBe(false);
  });

  it('refuses keys that cannot make a PKCS#1 v1.5 RSA signature', () => {
    const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const pss = generateKeyPairSync('rsa-pss', { modulusLength: 2048 });
    expect(() => signEnvelope(envelope, ec.privateKey)).toThrow(/RSA/);
    expect(() => signEnvelope(envelope, pss.privateKey)).toThrow(/RSA/);
    expect(() => toSigningKey(keys.publicKey)).toThrow(/private/);
  });
});
