import { constants, createPublicKey, type JsonWebKey, type KeyObject, sign, verify } from 'node:crypto';
import { toSigningKey } from './envelope.ts';
import { SignatureVerificationError } from './errors.ts';
import type { Jwk, Jwks, PaymentStateChangedEvent, WebhookEvent } from './types.ts';

/**
 * Webhook signatures (operator contract section 7): the x-dispersa-signature header is a JWS in compact form
 * with a detached payload (RFC 7515 appendix F), BASE64URL(protected) + '..' + BASE64URL(signature), where the
 * protected header is {alg: 'RS256', kid, iat} and the signing input is BASE64URL(protected) + '.' +
 * BASE64URL(raw body). Verified with node:crypto alone; any JOSE library agrees (the tests check with jose).
 */

export const SIGNATURE_HEADER = 'x-dispersa-signature';
export const DEFAULT_TOLERANCE_SEC = 300;

export interface VerifyWebhookOptions {
  /** Largest accepted distance between the header's iat and now, either way; default 300 s. */
  toleranceSec?: number;
  /** Milliseconds since the epoch; Date.now by default. */
  now?: () => number;
}

export interface VerifiedSignature {
  alg: 'RS256';
  kid: string;
  iat: number;
}

export interface DecodedSignature extends VerifiedSignature {
  protectedB64: string;
  signature: Buffer;
}

const B64URL = /^[A-Za-z0-9_-]+$/;

function fail(reason: SignatureVerificationError['reason'], message: string): never {
  throw new SignatureVerificationError(reason, message);
}

/** Refuses anything but the bytes as received: a parsed and re-serialised object has other bytes. */
export function rawBodyBytes(rawBody: unknown): Buffer {
  if (typeof rawBody === 'string') return Buffer.from(rawBody, 'utf8');
  if (rawBody instanceof Uint8Array) return Buffer.from(rawBody.buffer, rawBody.byteOffset, rawBody.byteLength);
  return fail(
    'parsed_body',
    'webhook body must be the raw request body (Buffer or string) exactly as received, not a parsed object: ' +
      're-serialising JSON changes the bytes the signature covers (with Express use express.raw({ type: "application/json" }))',
  );
}

export function decodeSignatureHeader(header: unknown): DecodedSignature {
  if (typeof header !== 'string' || header === '') fail('malformed_header', `missing ${SIGNATURE_HEADER} header`);
  const parts = header.trim().split('.');
  if (parts.length !== 3) fail('malformed_header', 'signature header is not a compact JWS (three dot-separated parts)');
  const [protectedB64, payload, signatureB64] = parts as [string, string, string];
  if (payload !== '') fail('malformed_header', 'signature header must carry a detached payload (protected..signature)');
  if (!B64URL.test(protectedB64) || !B64URL.test(signatureB64)) {
    fail('malformed_header', 'signature header parts are not base64url');
  }
  let fields: unknown;
  try {
    fields = JSON.parse(Buffer.from(protectedB64, 'base64url').toString('utf8'));
  } catch {
    fail('malformed_header', 'protected header is not JSON');
  }
  if (typeof fields !== 'object' || fields === null || Array.isArray(fields)) {
    fail('malformed_header', 'protected header is not a JSON object');
  }
  const { alg, kid, iat, crit, b64 } = fields as Record<string, unknown>;
  if (alg !== 'RS256') fail('unsupported_alg', `alg ${JSON.stringify(alg)} is not accepted; only RS256 is`);
  // An extension we do not understand (e.g. b64: false changes the signing input) must not be ignored.
  if (crit !== undefined || (b64 !== undefined && b64 !== true)) {
    fail('malformed_header', 'protected header uses crit/b64 extensions, which are not supported');
  }
  if (typeof kid !== 'string' || kid === '') fail('malformed_header', 'protected header has no kid');
  if (typeof iat !== 'number' || !Number.isSafeInteger(iat)) fail('malformed_header', 'protected header has no iat');
  return { alg, kid, iat, protectedB64, signature: Buffer.from(signatureB64, 'base64url') };
}

function publicKeyFor(jwks: Jwks, kid: string): KeyObject {
  const jwk: Jwk | undefined = jwks.keys.find((key) => key.kid === kid);
  if (!jwk) return fail('unknown_kid', `no key with kid ${JSON.stringify(kid)} in the key set`);
  if (jwk.kty !== 'RSA' || (jwk.use !== undefined && jwk.use !== 'sig') || (jwk.alg ?? 'RS256') !== 'RS256') {
    return fail('invalid_key', `key ${kid} is not an RS256 signing key`);
  }
  let key: KeyObject;
  try {
    key = createPublicKey({ key: { kty: jwk.kty, n: jwk.n, e: jwk.e } as JsonWebKey, format: 'jwk' });
  } catch (err) {
    return fail('invalid_key', `key ${kid} is not a valid RSA JWK: ${(err as Error).message}`);
  }
  if ((key.asymmetricKeyDetails?.modulusLength ?? 0) < 2048)
    fail('invalid_key', `key ${kid} is shorter than 2048 bits`);
  return key;
}

function signingInput(protectedB64: string, body: Buffer): Buffer {
  return Buffer.from(`${protectedB64}.${body.toString('base64url')}`, 'ascii');
}

/**
 * Verifies one delivery against a key set already in hand; throws SignatureVerificationError (with a `reason`)
 * on any failure. Use createJwksCache for fetching keys and refetching on an unknown kid.
 */
export function verifyWebhook(
  rawBody: Buffer | Uint8Array | string,
  signatureHeader: string,
  jwks: Jwks,
  options: VerifyWebhookOptions = {},
): VerifiedSignature {
  const body = rawBodyBytes(rawBody);
  const decoded = decodeSignatureHeader(signatureHeader);
  const key = publicKeyFor(jwks, decoded.kid);
  const padding = constants.RSA_PKCS1_PADDING;
  if (!verify('sha256', signingInput(decoded.protectedB64, body), { key, padding }, decoded.signature)) {
    fail('bad_signature', 'signature does not match the body and protected header');
  }
  const tolerance = options.toleranceSec ?? DEFAULT_TOLERANCE_SEC;
  const nowSec = Math.floor((options.now ?? Date.now)() / 1000);
  if (Math.abs(nowSec - decoded.iat) > tolerance) {
    fail('timestamp_outside_tolerance', `iat ${decoded.iat} is more than ${tolerance} s away from now (${nowSec})`);
  }
  return { alg: decoded.alg, kid: decoded.kid, iat: decoded.iat };
}

/** The header value the server would send for this body: for receivers' tests. */
export function signWebhookForTest(
  rawBody: Buffer | Uint8Array | string,
  privateKey: string | KeyObject,
  kid: string,
  iat: number = Math.floor(Date.now() / 1000),
): string {
  const protectedB64 = Buffer.from(JSON.stringify({ alg: 'RS256', kid, iat }), 'utf8').toString('base64url');
  const key = toSigningKey(privateKey);
  const signature = sign('sha256', signingInput(protectedB64, rawBodyBytes(rawBody)), {
    key,
    padding: constants.RSA_PKCS1_PADDING,
  });
  return `${protectedB64}..${signature.toString('base64url')}`;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Parses a verified body into an event; throws TypeError when it is not an event of section 7's shape. */
export function parseEvent(rawBody: Buffer | Uint8Array | string): WebhookEvent {
  let value: unknown;
  try {
    value = JSON.parse(rawBodyBytes(rawBody).toString('utf8'));
  } catch (err) {
    if (err instanceof SignatureVerificationError) throw err;
    throw new TypeError('webhook body is not JSON');
  }
  if (!isRecord(value)) throw new TypeError('webhook body is not a JSON object');
  const { id, type, test, createdAt, data } = value;
  if (typeof id !== 'string' || id === '') throw new TypeError('event has no id');
  if (typeof type !== 'string') throw new TypeError('event has no type');
  if (typeof createdAt !== 'string') throw new TypeError('event has no createdAt');
  const base = { id, test: test === true, createdAt };
  if (type === 'payment.state_changed') {
    if (!isRecord(data) || !isRecord(data['payment']) || typeof data['payment']['state'] !== 'string') {
      throw new TypeError('payment.state_changed event has no data.payment');
    }
    const previous = data['previousState'];
    const eventData: PaymentStateChangedEvent['data'] = {
      payment: data['payment'] as unknown as PaymentStateChangedEvent['data']['payment'],
      previousState: typeof previous === 'string' ? previous : null,
    };
    return { ...base, type, data: eventData };
  }
  if (type === 'webhook.verification') {
    if (!isRecord(data) || typeof data['challenge'] !== 'string') {
      throw new TypeError('webhook.verification event has no data.challenge');
    }
    return { ...base, type, data: { challenge: data['challenge'] } };
  }
  return { ...base, type: 'unrecognized', originalType: type, data };
}

export interface JwksCacheOptions {
  /** How long a fetched key set is used before it is fetched again; default 10 minutes. */
  ttlMs?: number;
  /** Least time between two refetches forced by unknown kids, so forged kids cannot flood the server; 10 s. */
  minRefetchMs?: number;
  /** Milliseconds since the epoch; Date.now by default. */
  now?: () => number;
}

export interface JwksCache {
  /** The cached key set, fetched when absent or older than ttlMs. */
  get(): Promise<Jwks>;
  /** verifyWebhook with the cached set, refetching it once when the header names a kid the set lacks. */
  verify(
    rawBody: Buffer | Uint8Array | string,
    signatureHeader: string,
    options?: VerifyWebhookOptions,
  ): Promise<VerifiedSignature>;
}

export function createJwksCache(fetchJwks: () => Promise<Jwks>, options: JwksCacheOptions = {}): JwksCache {
  const ttlMs = options.ttlMs ?? 600_000;
  const minRefetchMs = options.minRefetchMs ?? 10_000;
  const now = options.now ?? Date.now;
  let cached: { jwks: Jwks; at: number } | null = null;
  let inflight: Promise<Jwks> | null = null;
  let lastForced = Number.NEGATIVE_INFINITY;

  // Concurrent callers share one fetch.
  function load(): Promise<Jwks> {
    inflight ??= (async () => {
      try {
        const jwks = await fetchJwks();
        if (!isRecord(jwks) || !Array.isArray(jwks.keys)) throw new TypeError('fetched key set has no keys array');
        cached = { jwks, at: now() };
        return jwks;
      } finally {
        inflight = null;
      }
    })();
    return inflight;
  }

  async function get(): Promise<Jwks> {
    return cached && now() - cached.at < ttlMs ? cached.jwks : load();
  }

  return {
    get,
    async verify(rawBody, signatureHeader, verifyOptions) {
      rawBodyBytes(rawBody);
      const { kid } = decodeSignatureHeader(signatureHeader);
      const before = cached;
      let jwks = await get();
      const fetchedJustNow = cached !== before;
      if (!jwks.keys.some((key) => key.kid === kid) && !fetchedJustNow && now() - lastForced >= minRefetchMs) {
        // A kid we do not know usually means the server rotated its key: look once more before refusing.
        lastForced = now();
        jwks = await load();
      }
      return verifyWebhook(rawBody, signatureHeader, jwks, verifyOptions);
    },
  };
}
