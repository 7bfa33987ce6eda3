import { randomBytes } from 'node:crypto';

/** Random identifiers: a readable prefix and 128 bits of entropy in base32 (lower case, no padding). */
const ALPHABET = 'abcdefghijklmnopqrstuvwxyz234567';

export function randomId(prefix: string, bytes = 16): string {
  const buf = randomBytes(bytes);
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
