import { randomFillSync } from 'node:crypto';

/** Random identifiers: a readable prefix and 128 bits of entropy in base32 (lower case, no padding). */
const ALPHABET = 'abcdefghijklmnopqrstuvwxyz234567';

/**
 * Random bytes are drawn from the CSPRNG a page at a time: one call into it per id cost more than the rest of the
 * id (a payment takes three: its request id and its events'). Every byte is still used once only.
 */
const POOL = Buffer.alloc(4096);
let poolOffset = POOL.length;

function takeRandom(bytes: number): Uint8Array {
  if (bytes > POOL.length) return randomFillSync(Buffer.alloc(bytes));
  if (poolOffset + bytes > POOL.length) {
    randomFillSync(POOL);
    poolOffset = 0;
  }
  const out = POOL.subarray(poolOffset, poolOffset + bytes);
  poolOffset += bytes;
  return out;
}

export function randomId(prefix: string, bytes = 16): string {
  const buf = takeRandom(bytes);
  let bits = 0;
  let value = 0;
  let out = '';
  for (const byte of buf) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += ALPHABET[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += ALPHABET[(value << (5 - bits)) & 31];
  return `${prefix}_${out}`;
}
