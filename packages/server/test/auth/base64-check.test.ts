import { constants, generateKeyPairSync, sign } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { verifyEnvelope } from '../../src/auth/envelope.ts';
import { isBase64 } from '../../src/shared/base64.ts';

/** The signature header's check, a loop over a table, says exactly what the regular expression it replaced said. */

const RULE = /^[A-Za-z0-9+/]+={0,2}$/;

describe('isBase64', () => {
  it('agrees with /^[A-Za-z0-9+/]+={0,2}$/ on any text', () => {
    const near = fc.constantFrom(...'Az09+/=-_ .\n\u00e9\u0100=='.split(''));
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string(),
          fc.array(near, { maxLength: 12 }).map((cs) => cs.join('')),
        ),
        (text) => {
          expect(isBase64(text), JSON.stringify(text)).toBe(RULE.test(text));
        },
      ),
      { numRuns: 20_000 },
    );
    for (const text of ['', '=', '==', 'a', 'a=', 'a==', 'a===', '=a', 'a=a', 'ab+/', 'ab-_', 'ab\u0100'])
      expect(isBase64(text), JSON.stringify(text)).toBe(RULE.test(text));
  });

  it('lets a real signature through and nothing that is not base64', () => {
    const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const envelope = Buffer.from('POST\0/v2/payments\0sk_test_x\0k\0{}\x01');
    const signature = sign('sha256', envelope, { key: privateKey, padding: constants.RSA_PKCS1_PADDING });
    const b64 = signature.toString('base64');
    expect(verifyEnvelope(envelope, b64, publicKey)).toBe(true);
    expect(verifyEnvelope(envelope, ` ${b64}\n`, publicKey)).toBe(true);
    // The URL-safe alphabet decodes to the same bytes in Node, but is not the header's format.
    const urlSafe = b64.replace(/\+/g, '-').replace(/\//g, '_');
    if (urlSafe !== b64) expect(verifyEnvelope(envelope, urlSafe, publicKey)).toBe(false);
    // 256 bytes end in two `=`; a third is not base64.
    expect(b64.endsWith('==')).toBe(true);
    expect(verifyEnvelope(envelope, `${b64}=`, publicKey)).toBe(false);
  });
});
