import { createHash, createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  authHeaders,
  canonicalRequest,
  HEADER_KEY_ID,
  HEADER_SIGNATURE,
  HEADER_TIMESTAMP,
  MAX_SKEW_MS,
  signRequest,
  verifyRequest,
} from '../../../src/rails/gateway/signature.ts';

const SECRET = 'a-secret-of-at-least-thirty-two-characters';
const NOW = 1_767_600_000_000;

function verify(overrides: Partial<Parameters<typeof verifyRequest>[0]> = {}, headers = signed()) {
  return verifyRequest({
    headers,
    method: 'POST',
    target: '/v1/transfers',
    body: '{"a":1}',
    nowMs: NOW,
    secretOf: (id) => (id === 'k1' ? SECRET : null),
    ...overrides,
  });
}

function signed(nowMs = NOW): Record<string, string> {
  return authHeaders({
    keyId: 'k1',
    secret: SECRET,
    method: 'POST',
    target: '/v1/transfers',
    body: '{"a":1}',
    nowMs,
  });
}

describe('gateway request signatures', () => {
  it('signs METHOD, target, timestamp and the hex SHA-256 of the body, in base64', () => {
    const bodyHash = createHash('sha256').update('{"a":1}').digest('hex');
    const canonical = `POST\n/v1/statement?since=4&limit=2\n${NOW}\n${bodyHash}`;
    expect(canonicalRequest('post', '/v1/statement?since=4&limit=2', String(NOW), '{"a":1}')).toBe(canonical);
    const expected = createHmac('sha256', SECRET).update(canonical).digest('base64');
    expect(signRequest(SECRET, 'POST', '/v1/statement?since=4&limit=2', String(NOW), '{"a":1}')).toBe(expected);
  });

  it('a GET hashes the empty body', () => {
    const empty = createHash('sha256').update('').digest('hex');
    expect(canonicalRequest('GET', '/v1/balance?currency=VES', '1', '')).toBe(
      `GET\n/v1/balance?currency=VES\n1\n${empty}`,
    );
  });

  it('puts the three headers on a request', () => {
    const headers = signed();
    expect(headers[HEADER_KEY_ID]).toBe('k1');
    expect(headers[HEADER_TIMESTAMP]).toBe(String(NOW));
    expect(headers[HEADER_SIGNATURE]).toMatch(/^[A-Za-z0-9+/]{43}=$/);
  });

  it('accepts its own signature, bytes or string', () => {
    expect(verify()).toEqual({ ok: true, keyId: 'k1' });
    expect(verify({ body: Buffer.from('{"a":1}') })).toEqual({ ok: true, keyId: 'k1' });
  });

  it('refuses any change to method, target or body', () => {
    expect(verify({ method: 'GET' })).toEqual({ ok: false, code: 'bad_signature' });
    expect(verify({ target: '/v1/transfers?x=1' })).toEqual({ ok: false, code: 'bad_signature' });
    expect(verify({ body: '{"a":2}' })).toEqual({ ok: false, code: 'bad_signature' });
  });

  it('refuses a signature made with another secret, or truncated', () => {
    const headers = signed();
    headers[HEADER_SIGNATURE] = signRequest(
      'another-secret-another-secret-xx',
      'POST',
      '/v1/transfers',
      String(NOW),
      '{"a":1}',
    );
    expect(verify({}, headers)).toEqual({ ok: false, code: 'bad_signature' });
    const short = signed();
    short[HEADER_SIGNATURE] = short[HEADER_SIGNATURE]!.slice(0, 20);
    expect(verify({}, short)).toEqual({ ok: false, code: 'bad_signature' });
  });

  it('refuses a timestamp more than five minutes off, either way', () => {
    expect(verify({}, signed(NOW - MAX_SKEW_MS))).toEqual({ ok: true, keyId: 'k1' });
    expect(verify({}, signed(NOW - MAX_SKEW_MS - 1))).toEqual({ ok: false, code: 'stale_timestamp' });
    expect(verify({}, signed(NOW + MAX_SKEW_MS + 1))).toEqual({ ok: false, code: 'stale_timestamp' });
    const garbled = signed();
    garbled[HEADER_TIMESTAMP] = '17676e9';
    expect(verify({}, garbled)).toEqual({ ok: false, code: 'stale_timestamp' });
  });

  it('refuses missing headers and unknown keys', () => {
    const missing = signed();
    delete missing[HEADER_SIGNATURE];
    expect(verify({}, missing)).toEqual({ ok: false, code: 'missing_auth' });
    const unknown = signed();
    unknown[HEADER_KEY_ID] = 'k2';
    expect(verify({}, unknown)).toEqual({ ok: false, code: 'unknown_key' });
  });
});
