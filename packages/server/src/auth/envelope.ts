import { constants, type KeyObject, verify } from 'node:crypto';

/**
 * The signed text: six pieces joined by one NUL byte (spec, Canonical envelope):
 * method, raw request-target, api key, idempotency slot, raw body bytes, nonce.
 */
export interface EnvelopeParts {
  method: string;
  target: string;
  apiKey: string;
  idempotencySlot: string;
  body: Buffer;
  nonce: string;
}

const NUL = Buffer.from([0]);

export function buildEnvelope(p: EnvelopeParts): Buffer {
  return Buffer.concat([
    Buffer.from(p.method.toUpperCase(), 'utf8'),
    NUL,
    Buffer.from(p.target, 'utf8'),
    NUL,
    Buffer.from(p.apiKey, 'utf8'),
    NUL,
    Buffer.from(p.idempotencySlot, 'utf8'),
    NUL,
    p.body,
    NUL,
    Buffer.from(p.nonce, 'utf8'),
  ]);
}

/** The base64 alphabet's characters, by code. */
const BASE64_CHAR = new Uint8Array(128);
for (const c of 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/') BASE64_CHAR[c.charCodeAt(0)] = 1;

/**
 * Whether text is /^[A-Za-z0-9+/]+={0,2}$/: alphabet characters, then at most two `=`. A loop over a table, as every
 * signed request checks its 344-character signature: the regular expression took four times as long (1.5 against
 * 0.4 µs), 2 % of the server's thread under the GET bench.
 */
export function isBase64(text: string): boolean {
  let end = text.length;
  // At most two trailing `=` (61).
  if (end > 0 && text.charCodeAt(end - 1) === 61) {
    end--;
    if (end > 0 && text.charCodeAt(end - 1) === 61) end--;
  }
  if (end === 0) return false;
  for (let i = 0; i < end; i++) {
    const c = text.charCodeAt(i);
    if (c >= 128 || BASE64_CHAR[c] !== 1) return false;
  }
  return true;
}

/** RSA PKCS#1 v1.5 with SHA-256 only: a PSS signature does not verify. */
export function verifyEnvelope(envelope: Buffer, signatureB64: string, key: KeyObject): boolean {
  const compact = signatureB64.trim();
  if (!isBase64(compact)) return false;
  const signature = Buffer.from(compact, 'base64');
  if (signature.length === 0) return false;
  try {
    return verify('sha256', envelope, { key, padding: constants.RSA_PKCS1_PADDING }, signature);
  } catch {
    return false;
  }
}
