import { createPublicKey, type JsonWebKey, verify } from 'node:crypto';
import { compactVerify, createLocalJWKSet, flattenedVerify, type JSONWebKeySet } from 'jose';

/**
 * Receiver-side verification written from operator contract section 7 alone, sharing no code with src/:
 * one verifier on node:crypto only, fed the JWKS document as served, and one on jose. Each returns the
 * protected header when the signature holds, null otherwise.
 */

export interface JwksDocument {
  keys: Array<{ kty: string; use?: string; alg?: string; kid: string; n: string; e: string }>;
}

export interface Verified {
  alg: string;
  kid: string;
  iat: number;
}

export function verifyWithNodeCrypto(rawBody: Buffer, header: string, jwks: JwksDocument): Verified | null {
  const [protectedB64, payload, signatureB64, extra] = header.split('.');
  if (protectedB64 === undefined || payload !== '' || signatureB64 === undefined || extra !== undefined) return null;
  const fields = JSON.parse(Buffer.from(protectedB64, 'base64url').toString('utf8')) as Verified;
  if (fields.alg !== 'RS256') return null;
  const jwk = jwks.keys.find((k) => k.kid === fields.kid);
  if (jwk === undefined) return null;
  const key = createPublicKey({ key: { kty: 'RSA', n: jwk.n, e: jwk.e } as JsonWebKey, format: 'jwk' });
  const input = Buffer.from(`${protectedB64}.${rawBody.toString('base64url')}`, 'ascii');
  return verify('sha256', input, key, Buffer.from(signatureB64, 'base64url')) ? fields : null;
}

export async function verifyWithJose(rawBody: Buffer, header: string, jwks: JwksDocument): Promise<Verified | null> {
  const [protectedB64 = '', , signatureB64 = ''] = header.split('.');
  const keySet = createLocalJWKSet(jwks as JSONWebKeySet);
  try {
    // Both ways a JOSE user would do it: re-attach the payload, or pass it detached.
    const compact = await compactVerify(`${protectedB64}.${rawBody.toString('base64url')}.${signatureB64}`, keySet, {
      algorithms: ['RS256'],
    });
    await flattenedVerify(
      { protected: protectedB64, payload: rawBody.toString('base64url'), signature: signatureB64 },
      keySet,
      {
        algorithms: ['RS256'],
      },
    );
    return compact.protectedHeader as unknown as Verified;
  } catch {
    return null;
  }
}

/** Both verifiers must agree; the header they agree on, or null. */
export async function verifyBothWays(rawBody: Buffer, header: string, jwks: JwksDocument): Promise<Verified | null> {
  const a = verifyWithNodeCrypto(rawBody, header, jwks);
  const b = await verifyWithJose(rawBody, header, jwks);
  if ((a === null) !== (b === null)) throw new Error('node:crypto and jose disagree about a signature');
  return a;
}
