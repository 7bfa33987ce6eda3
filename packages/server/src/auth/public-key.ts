import { createHash, createPublicKey, type KeyObject } from 'node:crypto';

/**
 * Registration rules for a client's public key (spec, Authentication, public key requirements):
 * RSA only, modulus >= 2048 bits, exponent exactly 65537, PEM SPKI ("PUBLIC KEY") or PKCS#1
 * ("RSA PUBLIC KEY") only, never a private key block. Each rejection names the broken rule.
 */

export interface RegisteredPublicKey {
  keyObject: KeyObject;
  /** Canonical SPKI PEM, whatever form was registered. */
  spkiPem: string;
  fingerprint: string;
  modulusBits: number;
}

export type PublicKeyResult = { ok: true; key: RegisteredPublicKey } | { ok: false; error: string };

const PEM_BLOCK = /-----BEGIN ([A-Z0-9 ]+)-----[\s\S]*?-----END \1-----/g;

export function fingerprintOf(key: KeyObject): string {
  const der = key.export({ type: 'spki', format: 'der' });
  return `SHA256:${createHash('sha256').update(der).digest('base64').replace(/=+$/, '')}`;
}

export function parsePublicKeyPem(input: unknown): PublicKeyResult {
  if (typeof input !== 'string' || input.trim() === '') {
    return { ok: false, error: 'publicKeyPem is required: PEM text with a PUBLIC KEY or RSA PUBLIC KEY block' };
  }
  const text = input.trim();
  if (/PRIVATE KEY-----/.test(text)) {
    return { ok: false, error: 'publicKeyPem must hold the public half only: a private key block was found' };
  }
  if (text.startsWith('{')) {
    return { ok: false, error: 'JWK is not accepted: send PEM text with a PUBLIC KEY or RSA PUBLIC KEY block' };
  }
  const blocks = [...text.matchAll(PEM_BLOCK)];
  if (blocks.length === 0) {
    return {
      ok: false,
      error: 'binary DER and bare base64 are not accepted: send PEM text with a PUBLIC KEY or RSA PUBLIC KEY block',
    };
  }
  if (blocks.length > 1) return { ok: false, error: 'publicKeyPem must hold exactly one PEM block' };
  const label = blocks[0]![1];
  let type: 'spki' | 'pkcs1';
  if (label === 'PUBLIC KEY') type = 'spki';
  else if (label === 'RSA PUBLIC KEY') type = 'pkcs1';
  else
    return {
      ok: false,
      error: `PEM block "${label}" is not accepted: use PUBLIC KEY (SPKI) or RSA PUBLIC KEY (PKCS#1)`,
    };

  let keyObject: KeyObject;
  try {
    keyObject = createPublicKey({ key: blocks[0]![0], format: 'pem', type });
  } catch {
    return { ok: false, error: 'publicKeyPem is not a readable public key' };
  }
  if (keyObject.asymmetricKeyType !== 'rsa') {
    return { ok: false, error: `only RSA keys are accepted (got ${keyObject.asymmetricKeyType ?? 'unknown'})` };
  }
  const details = keyObject.asymmetricKeyDetails ?? {};
  const modulusBits = details.modulusLength ?? 0;
  if (modulusBits < 2048) {
    return { ok: false, error: `RSA modulus must be at least 2048 bits (got ${modulusBits})` };
  }
  if (details.publicExponent !== 65537n) {
    return { ok: false, error: `RSA public exponent must be exactly 65537 (got ${String(details.publicExponent)})` };
  }
  return {
    ok: true,
    key: {
      keyObject,
      spkiPem: keyObject.export({ type: 'spki', format: 'pem' }).toString(),
      fingerprint: fingerprintOf(keyObject),
      modulusBits,
    },
  };
}
