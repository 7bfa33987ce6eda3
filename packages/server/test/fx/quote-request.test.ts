import { describe, expect, it } from 'vitest';
import { parseQuoteRequest, quoteRequestFingerprint } from '../../src/fx/quote-request.ts';

describe('parseQuoteRequest', () => {
  it.each([
    [{ amountType: 'SOURCE', amountMinor: '1000' }, 'SOURCE', 1000n],
    [{ amountType: 'TARGET', amountMinor: '150000', extra: 'ignored' }, 'TARGET', 150000n],
    [{ amountType: 'TARGET', amountMinor: '9223372036854775807' }, 'TARGET', 9223372036854775807n],
  ])('accepts %j', (body, amountType, amountMinor) => {
    expect(parseQuoteRequest(body)).toEqual({ ok: true, request: { amountType, amountMinor } });
  });

  it.each([
    [null, 'body must be object'],
    ['{"amountType":"SOURCE"}', 'body must be object'],
    [[], 'body must be object'],
    [{}, 'amountType is required'],
    [{ amountMinor: '100' }, 'amountType is required'],
    [{ amountType: 'source', amountMinor: '100' }, 'amountType must be SOURCE or TARGET'],
    [{ amountType: 'BOTH', amountMinor: '100' }, 'amountType must be SOURCE or TARGET'],
    [{ amountType: 1, amountMinor: '100' }, 'amountType must be SOURCE or TARGET'],
    [{ amountType: 'SOURCE' }, 'amountMinor is required'],
    [
      { amountType: 'SOURCE', amountMinor: 100 },
      'amountMinor must be a positive integer of minor units as text, not a number',
    ],
    [{ amountType: 'SOURCE', amountMinor: '0' }, 'amountMinor must be a positive integer of minor units as text'],
    [{ amountType: 'SOURCE', amountMinor: '-5' }, 'amountMinor must be a positive integer of minor units as text'],
    [{ amountType: 'SOURCE', amountMinor: '1.5' }, 'amountMinor must be a positive integer of minor units as text'],
    [{ amountType: 'SOURCE', amountMinor: '007' }, 'amountMinor must be a positive integer of minor units as text'],
    [{ amountType: 'SOURCE', amountMinor: ' 7' }, 'amountMinor must be a positive integer of minor units as text'],
    [{ amountType: 'SOURCE', amountMinor: '1e3' }, 'amountMinor must be a positive integer of minor units as text'],
    [{ amountType: 'SOURCE', amountMinor: '9223372036854775808' }, 'amountMinor must be at most 9223372036854775807'],
  ])('rejects %j: %s', (body, message) => {
    expect(parseQuoteRequest(body)).toEqual({ ok: false, message });
  });
});

describe('quoteRequestFingerprint', () => {
  it('depends on both fields and nothing else', () => {
    const a = quoteRequestFingerprint({ amountType: 'SOURCE', amountMinor: 100n });
    expect(a).toMatch(/^[0-9a-f]{64}$/);
    expect(quoteRequestFingerprint({ amountType: 'SOURCE', amountMinor: 100n })).toBe(a);
    expect(quoteRequestFingerprint({ amountType: 'TARGET', amountMinor: 100n })).not.toBe(a);
    expect(quoteRequestFingerprint({ amountType: 'SOURCE', amountMinor: 101n })).not.toBe(a);
  });
});
