import { createPublicKey, type JsonWebKey, type KeyObject, sign, verify } from 'node:crypto';

/**
 * Detached-payload JWS (RFC 7515 appendix F) over the raw event body, as operator contract section 7 fixes it:
 * the header value is BASE64URL(protected) + ".." + BASE64URL(signature), the signing input is
 * BASE64URL(protected) + "." + BASE64URL(raw body), so any JOSE library verifies it given the raw body.
 */

export interface SignOptions {
  kid: string;
  privateKey: KeyObject;
  /** Unix seconds. */
  iat: number;
}

function b64url(data: Buffer | string): string {
  return Buffer.from(data).toString('base64url');
}

export function signingInput(encodedHeader: string, rawBody: Buffer): Buffer {
  return Buffer.from(`${encodedHeader}.${b64url(rawBody)}`, 'ascii');
}

function protectedHeader(kid: string, iat: number): string {
  if (!Number.isSafeInteger(iat) || iat < 0) throw new RangeError(`iat must be whole unix seconds, got ${iat}`);
  // Built by hand so the member order is exactly alg, kid, iat, byte for byte on every run.
  return b64url(JSON.stringify({ alg: 'RS256', kid, iat }));
}

export function signDetached(rawBody: Buffer, { kid, privateKey, iat }: SignOptions): string {
  const header = protectedHeader(kid, iat);
  const signature = sign('sha256', signingInput(header, rawBody), privateKey);
  return `${header}..${b64url(signature)}`;
}

/**
 * The same signature, computed on libuv's thread pool instead of the event loop: an RSA-2048 signature
 * costs about a quarter of a millisecond of CPU, which would otherwise cap delivery at one core's worth.
 */
export function signDetachedAsync(rawBody: Buffer, { kid, privateKey, iat }: SignOptions): Promise<string> {
  const header = protectedHeader(kid, iat);
  return new Promise((resolve, reject) => {
    sign('sha256', signingInput(header, rawBody), privateKey, (err, signature) => {
      if (err) reject(err);
      else resolve(`${header}..${b64url(signature)}`);
    });
  });
}

export type VerifyFailure = 'malformed' | 'unsupported_alg' | 'unknown_kid' | 'bad_signature';

export type VerifyResult = { ok: true; kid: string; iat: number } | { ok: false; reason: VerifyFailure };

/** Looks a public key up by kid; undefined when the set does not hold it (the receiver then refetches). */
export type KeyLookup = (kid: string) => KeyObject | undefined;

const B64URL = /^[A-Za-z0-9_-]+$/;

function parseHeader(encoded: string): { alg: unknown; kid: unknown; iat: unknown; crit?: unknown } | null {
  if (!B64URL.test(encoded)) return null;
  try {
    const value: unknown = JSON.parse(Buffer.from(encoded, 'base64url').toString('utf8'));
    return typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as { alg: unknown; kid: unknown; iat: unknown })
      : null;
  } catch {
    return null;
  }
}

/** The receiver's side, on node:crypto only: what the SDK does, kept here so tests need no JOSE library. */
export function verifyDetached(rawBody: Buffer, jws: string, lookup: KeyLookup): VerifyResult {
  const parts = jws.split('.');
  if (parts.length !== 3 || parts[1] !== '') return { ok: false, reason: 'malformed' };
  const [encodedHeader = '', , encodedSignature = ''] = parts;
  const header = parseHeader(encodedHeader);
  if (header === null || !B64URL.test(encodedSignature)) return { ok: false, reason: 'malformed' };
  // A crit member would name extensions (b64:false among them) that change what was signed: refuse them.
  if (header.alg !== 'RS256' || header.crit !== undefined) return { ok: false, reason: 'unsupported_alg' };
  if (typeof header.kid !== 'string' || typeof header.iat !== 'number' || !Number.isSafeInteger(header.iat)) {
    return { ok: false, reason: 'malformed' };
  }
  const key = lookup(header.kid);
  if (key === undefined) return { ok: false, reason: 'unknown_kid' };
  const signature = Buffer.from(encodedSignature, 'base64url');
  const valid = verify('sha256', signingInput(encodedHeader, rawBody), key, signature);
  return valid ? { ok: true, kid: header.kid, iat: header.iat } : { ok: false, reason: 'bad_signature' };
}

export interface PublicJwk {
  kty: 'RSA';
  use: 'sig';
  alg: 'RS256';
  kid: string;
  n: string;
  e: string;
}

export interface Jwks {
  keys: PublicJwk[];
}

/** A KeyLookup over a JWKS document such as GET /v2/webhook/keys returns. */
export function lookupInJwks(jwks: Jwks): KeyLookup {
  const keys = new Map<string, KeyObject>();
  for (const jwk of jwks.keys) {
    if (jwk.kty !== 'RSA' || jwk.alg !== 'RS256') continue;
    keys.set(jwk.kid, createPublicKey({ key: { kty: 'RSA', n: jwk.n, e: jwk.e } as JsonWebKey, format: 'jwk' }));
  }
  return (kid) => keys.get(kid);
}
