import { constants, type KeyObject, verify } from 'node:crypto';
import { isBase64 } from '../shared/base64.ts';

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
