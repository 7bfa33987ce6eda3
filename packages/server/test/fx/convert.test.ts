import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseRate, RATE_SCALE } from '../../src/fx/arithmetic.ts';
import { quoteAmounts, sourceForPayment } from '../../src/fx/convert.ts';

function rate(base: string, text: string) {
  const parsed = parseRate(text);
  if (!parsed.ok) throw new Error(`bad fixture ${text}`);
  return { base, rateScaled: parsed.scaled };
}

const rateScaled = fc.bigInt({ min: 1n, max: 10n ** 20n });
const amount = fc.bigInt({ min: 1n, max: 10n ** 15n });

describe('sourceForPayment', () => {
  it('rounds the debited source up', () => {
    // 1500.00 VES at 36.5 VES/USD = 41.0958... USD
    expect(sourceForPayment({ targetMinor: 150000n, clientCurrency: 'USD', rate: rate('USD', '36.5') })).toBe(4110n);
    expect(sourceForPayment({ targetMinor: 36500n, clientCurrency: 'USD', rate: rate('USD', '36.5') })).toBe(1000n);
    // JPY has no minor unit: 100.00 VES at 0.3 VES/JPY = 333.33 JPY → 334
    expect(sourceForPayment({ targetMinor: 10000n, clientCurrency: 'JPY', rate: rate('JPY', '0.3') })).toBe(334n);
  });

  it('never debits less than the exact cost', () => {
    fc.assert(
      fc.property(amount, rateScaled, (targetMinor, scaled) => {
        const source = sourceForPayment({
          targetMinor,
          clientCurrency: 'USD',
          rate: { base: 'USD', rateScaled: scaled },
        });
        // exact source (USD minor) = target (VES minor) × 10^12 / scaled, both with 2 decimals
        expect(source * scaled >= targetMinor * RATE_SCALE).toBe(true);
        expect((source - 1n) * scaled < targetMinor * RATE_SCALE).toBe(true);
      }),
    );
  });

  it('refuses a rate of another pair', () => {
    expect(() => sourceForPayment({ targetMinor: 100n, clientCurrency: 'EUR', rate: rate('USD', '36.5') })).toThrow(
      /USD\/VES cannot convert a EUR balance/,
    );
  });
});

describe('quoteAmounts', () => {
  it('returns the fixed side exactly and rounds the computed side in favour of the service', () => {
    fc.assert(
      fc.property(amount, rateScaled, fc.constantFrom('SOURCE' as const, 'TARGET' as const), (fixed, scaled, type) => {
        const amounts = quoteAmounts({
          amountType: type,
          amountMinor: fixed,
          sourceCurrency: 'USD',
          rate: { base: 'USD', rateScaled: scaled },
        });
        const { sourceAmountMinor: s, targetAmountMinor: t } = amounts;
        if (type === 'SOURCE') expect(s).toBe(fixed);
        else expect(t).toBe(fixed);
        // Either way the beneficiary never receives more than the debited source is worth.
        expect(t * RATE_SCALE <= s * scaled).toBe(true);
      }),
    );
  });

  it('SOURCE floors the target, TARGET ceils the source', () => {
    const r = rate('USD', '36.123456789012');
    expect(quoteAmounts({ amountType: 'SOURCE', amountMinor: 1n, sourceCurrency: 'USD', rate: r })).toEqual({
      sourceAmountMinor: 1n,
      targetAmountMinor: 36n,
    });
    expect(quoteAmounts({ amountType: 'TARGET', amountMinor: 36n, sourceCurrency: 'USD', rate: r })).toEqual({
      sourceAmountMinor: 1n,
      targetAmountMinor: 36n,
    });
    expect(quoteAmounts({ amountType: 'TARGET', amountMinor: 37n, sourceCurrency: 'USD', rate: r })).toEqual({
      sourceAmountMinor: 2n,
      targetAmountMinor: 37n,
    });
  });
});
