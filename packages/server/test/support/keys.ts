import { generateKeyPairSync, type KeyObject } from 'node:crypto';

export interface TestKeyPair {
  privateKey: KeyObject;
  publicKey: KeyObject;
  publicPem: string;
  privatePem: string;
}

const pool: TestKeyPair[] = [];

/** Real RSA-2048 key pairs; generating them is slow, so each process reuses a few. */
export function testKeyPair(index = 0): TestKeyPair {
  while (pool.length <= index) {
    const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048, publicExponent: 65537 });
    pool.push({
      publicKey,
      privateKey,
      publicPem: publicKey.export({ type: 'spki', format: 'pem' }).toString(),
      privatePem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    });
  }
  return pool[index]!;
}
