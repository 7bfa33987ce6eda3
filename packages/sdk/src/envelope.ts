import { constants, createPrivateKey, type KeyObject, sign } from 'node:crypto';

/**
 * The canonical envelope of the interface spec (Authentication, "Canonical envelope"): six pieces joined by
 * one NUL byte. NUL rather than a line break because no piece can contain it, so the join is unambiguous;
 * buildEnvelope refuses a piece that does contain one instead of signing something the server reads differently.
 */

export const NONCE_PATTERN = /^[1-9][0-9]{0,37}$/;

const SEPARATOR = Buffer.from([0]);

/** Routes whose envelope slot 4 carries the idempotency-key; on every other signed route the slot is empty. */
const KEYED_ROUTES = new Set(['POST /v2/payments', 'POST /v2/quotes']);

export interface EnvelopeParts {
  method: string;
  /** Path plus query exactly as sent on the wire (origin form), no trailing '?'. */
  target: string;
  apiKey: string;
  /** Required on POST /v2/payments and POST /v2/quotes, must be absent elsewhere. */
  idempotencyKey?: string | undefined;
  /** The exact bytes sent; absent or empty for requests without a body. */
  body?: Buffer | Uint8Array | string | undefined;
  nonce: string;
}

/**
 * Whether the route puts the idempotency-key into the envelope. Matched on the end of the path so that a base
 * URL with a path prefix (a reverse proxy mount) still signs what goes on the wire.
 */
export function carriesIdempotencyKey(method: string, target: string): boolean {
  const path = target.split('?', 1)[0] ?? '';
  const upper = method.toUpperCase();
  for (const route of KEYED_ROUTES) {
    const [m, p] = route.split(' ') as [string, string];
    if (upper === m && (path === p || path.endsWith(p))) return true;
  }
  return false;
}

function textPiece(name: string, value: string): Buffer {
  if (value.includes('\0')) throw new TypeError(`envelope piece ${name} must not contain a NUL byte`);
  return Buffer.from(value, 'utf8');
}

export function buildEnvelope(parts: EnvelopeParts): Buffer {
  const method = parts.method.toUpperCase();
  if (!/^[A-Z]+$/.test(method)) throw new TypeError(`not an HTTP method: ${parts.method}`);
  if (!parts.target.startsWith('/')) throw new TypeError('request-target must be in origin form (start with /)');
  if (parts.target.endsWith('?')) throw new TypeError('request-target must not end with an empty query (?)');
  if (!NONCE_PATTERN.test(parts.nonce)) throw new TypeError(`nonce must match ${NONCE_PATTERN}`);
  const keyed = carriesIdempotencyKey(method, parts.target);
  if (keyed && !parts.idempotencyKey) throw new TypeError(`${method} ${parts.target} needs an idempotency key`);
  if (!keyed && parts.idempotencyKey) {
    // A value in this slot on any other route fails verification with 401, so refuse it here.
    throw new TypeError(`${method} ${parts.target} has an empty idempotency slot; do not pass a key`);
  }
  const body =
    parts.body === undefined
      ? Buffer.alloc(0)
      : typeof parts.body === 'string'
        ? Buffer.from(parts.body, 'utf8')
        : Buffer.from(parts.body.buffer, parts.body.byteOffset, parts.body.byteLength);
  return Buffer.concat([
    textPiece('method', method),
    SEPARATOR,
    textPiece('request-target', parts.target),
    SEPARATOR,
    textPiece('api key', parts.apiKey),
    SEPARATOR,
    textPiece('idempotency-key', keyed ? (parts.idempotencyKey ?? '') : ''),
    SEPARATOR,
    body,
    SEPARATOR,
    textPiece('nonce', parts.nonce),
  ]);
}

/** Accepts PEM text (PKCS#8 or PKCS#1) or a KeyObject; refuses anything but a plain RSA private key. */
export function toSigningKey(privateKey: string | KeyObject): KeyObject {
  const key = typeof privateKey === 'string' ? createPrivateKey(privateKey) : privateKey;
  if (key.type !== 'private') throw new TypeError('the signing key must be a private key');
  // An 'rsa-pss' key would sign with PSS padding, which the service does not verify.
  if (key.asymmetricKeyType !== 'rsa') {
    throw new TypeError(`the signing key must be RSA (PKCS#1 v1.5), got ${key.asymmetricKeyType}`);
  }
  return key;
}

/** Base64 RSA-SHA256 signature with PKCS#1 v1.5 padding, the x-signature header value. */
export function signEnvelope(envelope: Buffer, privateKey: string | KeyObject): string {
  const key = toSigningKey(privateKey);
  return sign('sha256', envelope, { key, padding: constants.RSA_PKCS1_PADDING }).toString('base64');
}
