import { createHash, createHmac, timingSafeEqual } from 'node:crypto';

/**
 * Request authentication of the bank gateway protocol: HMAC-SHA256 over the method, the request target,
 * the timestamp and the body's hash. Shared by the connector (signs) and the bank simulator (verifies),
 * so an operator's adapter can be checked against the exact code the service runs.
 */

export const HEADER_KEY_ID = 'x-gateway-key-id';
export const HEADER_TIMESTAMP = 'x-gateway-timestamp';
export const HEADER_SIGNATURE = 'x-gateway-signature';

/** A request whose timestamp is further than this from the receiver's clock is refused. */
export const MAX_SKEW_MS = 5 * 60_000;

export type Body = string | Uint8Array;

/**
 * `METHOD\nPATH?QUERY\nTIMESTAMP\nsha256-hex(body)`. The target is the path and query exactly as they
 * appear on the request line (no `?` when there is no query); a GET hashes the empty body.
 */
export function canonicalRequest(method: string, target: string, timestamp: string, body: Body): string {
  const bodyHash = createHash('sha256').update(body).digest('hex');
  return `${method.toUpperCase()}\n${target}\n${timestamp}\n${bodyHash}`;
}

export function signRequest(secret: string, method: string, target: string, timestamp: string, body: Body): string {
  return createHmac('sha256', secret)
    .update(canonicalRequest(method, target, timestamp, body))
    .digest('base64');
}

export function authHeaders(input: {
  keyId: string;
  secret: string;
  method: string;
  target: string;
  body: Body;
  nowMs: number;
}): Record<string, string> {
  const timestamp = String(Math.trunc(input.nowMs));
  return {
    [HEADER_KEY_ID]: input.keyId,
    [HEADER_TIMESTAMP]: timestamp,
    [HEADER_SIGNATURE]: signRequest(input.secret, input.method, input.target, timestamp, input.body),
  };
}

export type AuthFailure = 'missing_auth' | 'unknown_key' | 'stale_timestamp' | 'bad_signature';
export type AuthCheck = { ok: true; keyId: string } | { ok: false; code: AuthFailure };

/** Compares two strings in time independent of where they differ. */
function constantTimeEqual(a: string, b: string): boolean {
  const left = Buffer.from(a, 'utf8');
  const right = Buffer.from(b, 'utf8');
  // Comparing against itself on a length mismatch keeps the work the same shape either way.
  if (left.length !== right.length) {
    timingSafeEqual(right, right);
    return false;
  }
  return timingSafeEqual(left, right);
}

function header(headers: Record<string, string | string[] | undefined>, name: string): string | null {
  const value = headers[name];
  if (typeof value === 'string' && value.length > 0) return value;
  return null;
}

/** The receiver's check. `secretOf` returns null for a key id it does not know. */
export function verifyRequest(input: {
  headers: Record<string, string | string[] | undefined>;
  method: string;
  target: string;
  body: Body;
  nowMs: number;
  secretOf: (keyId: string) => string | null;
}): AuthCheck {
  const keyId = header(input.headers, HEADER_KEY_ID);
  const timestamp = header(input.headers, HEADER_TIMESTAMP);
  const signature = header(input.headers, HEADER_SIGNATURE);
  if (keyId === null || timestamp === null || signature === null) return { ok: false, code: 'missing_auth' };
  if (!/^\d{1,16}$/.test(timestamp) || Math.abs(Number(timestamp) - input.nowMs) > MAX_SKEW_MS) {
    return { ok: false, code: 'stale_timestamp' };
  }
  const secret = input.secretOf(keyId);
  if (secret === null) return { ok: false, code: 'unknown_key' };
  const expected = signRequest(secret, input.method, input.target, timestamp, input.body);
  if (!constantTimeEqual(signature, expected)) return { ok: false, code: 'bad_signature' };
  return { ok: true, keyId };
}
