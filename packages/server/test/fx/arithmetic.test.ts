import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  divCeil,
  divFloor,
  formatRate,
  isKnownCurrency,
  minorUnitExponent,
  parseRate,
  RATE_SCALE,
  sourceFromTarget,
  targetFromSource,
  UnknownCurrencyError,
} from '../../src/fx/arithmetic.ts';

const pow10 = (n: number): bigint => 10n ** BigInt(n);

/** Rate text with 1 to 12 decimals, from tiny (0.000000000001) to huge (10^20). */
const rateText = fc
  .tuple(
    fc.oneof(
      fc.constant(0n),
      fc.bigInt({ min: 0n, max: 100n }),
      fc.bigInt({ min: 0n, max: 100_000n }),
      fc.bigInt({ min: 0n, max: pow10(20) }),
    ),
    fc.integer({ min: 1, max: 12 }),
    fc.bigInt({ min: 0n, max: pow10(12) - 1n }),
  )
  .map(([integer, decimals, fraction]) => {
    const digits = (fraction % pow10(decimals)).toString().padStart(decimals, '0');
    return `${integer}.${digits}`;
  })
  .filter((text) => /[1-9]/.test(text));

const rateScaled = rateText.map((text) => {
  const parsed = parseRate(text);
  if (!parsed.ok) throw new Error(`generator produced an invalid rate ${text}`);
  return parsed.scaled;
});

const amount = fc.oneof(
  fc.bigInt({ min: 0n, max: 1000n }),
  fc.bigInt({ min: 0n, max: 10_000_000n }),
  fc.bigInt({ min: 0n, max: 2n ** 63n - 1n }),
);
const exponent = fc.integer({ min: 0, max: 4 });

/**
 * The exact rational value written independently of the implementation's normalisation:
 * target = source × (rateScaled / 10^12) × 10^tgtExp / 10^srcExp.
 */
function exactTargetOf(source: bigint, rate: bigint, srcExp: number, tgtExp: number) {
  return { num: source * rate * pow10(tgtExp), den: RATE_SCALE * pow10(srcExp) };
}
function exactSourceOf(target: bigint, rate: bigint, srcExp: number, tgtExp: number) {
  return { num: target * RATE_SCALE * pow10(srcExp), den: rate * pow10(tgtExp) };
}

describe('parseRate', () => {
  it.each([
    ['36.5', 36_500_000_000_000n],
    ['1', RATE_SCALE],
    ['0.000000000001', 1n],
    ['36.500000000000', 36_500_000_000_000n],
    ['0.5', 500_000_000_000n],
    ['12345678901234567890123456.999999999999', 12345678901234567890123456999999999999n],
  ])('accepts %s', (text, scaled) => {
    expect(parseRate(text)).toEqual({ ok: true, scaled });
  });

  // Rejected on purpose (strict): no sign, no exponent, no whitespace, no bare point on either side, no
  // leading zeros, no thousands separators, never zero, never more than 12 decimals.
  it.each([
    ['0', 'zero'],
    ['0.000', 'zero'],
    ['0.000000000000', 'zero'],
    ['1e3', 'malformed'],
    ['1E3', 'malformed'],
    ['-1', 'malformed'],
    ['+1', 'malformed'],
    [' 1', 'malformed'],
    ['1 ', 'malformed'],
    ['1.', 'malformed'],
    ['.5', 'malformed'],
    ['', 'malformed'],
    ['01.5', 'malformed'],
    ['1,5', 'malformed'],
    ['1_000', 'malformed'],
    ['Infinity', 'malformed'],
    ['NaN', 'malformed'],
    ['0x10', 'malformed'],
    ['١٢', 'malformed'],
    ['1.0000000000001', 'too_many_decimals'],
    ['1.0000000000000', 'too_many_decimals'],
    ['0.0000000000001', 'too_many_decimals'],
    ['123456789012345678901234567', 'too_large'],
  ])('rejects %j as %s', (text, kind) => {
    const result = parseRate(text);
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.error.kind).toBe(kind);
  });

  it.each([[36.5], [null], [undefined], [36n], [{}]])('rejects the non-text value #%#', (value) => {
    const result = parseRate(value);
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.error.kind).toBe('not_text');
  });

  it('round-trips through formatRate: 12 decimals, same value', () => {
    fc.assert(
      fc.property(rateText, (text) => {
        const parsed = parseRate(text);
        expect(parsed.ok).toBe(true);
        if (!parsed.ok) return;
        const formatted = formatRate(parsed.scaled);
        expect(formatted).toMatch(/^(0|[1-9][0-9]*)\.[0-9]{12}$/);
        const [integer, fraction] = text.split('.') as [string, string];
        expect(formatted).toBe(`${integer}.${fraction.padEnd(12, '0')}`);
        expect(parseRate(formatted)).toEqual({ ok: true, scaled: parsed.scaled });
      }),
    );
  });
});

describe('formatRate', () => {
  it.each([
    [36_500_000_000_000n, '36.500000000000'],
    [1n, '0.000000000001'],
    [RATE_SCALE, '1.000000000000'],
    [0n, '0.000000000000'],
    [123_456_789_012_345_678n, '123456.789012345678'],
  ])('formats %s as %s', (scaled, text) => {
    expect(formatRate(scaled)).toBe(text);
  });

  it('refuses a negative rate', () => {
    expect(() => formatRate(-1n)).toThrow(RangeError);
  });
});

describe('minorUnitExponent', () => {
  it.each([
    ['VES', 2],
    ['USD', 2],
    ['EUR', 2],
    ['JPY', 0],
    ['CLP', 0],
    ['KWD', 3],
  ])('%s has %i decimals', (currency, exp) => {
    expect(minorUnitExponent(currency)).toBe(exp);
    expect(isKnownCurrency(currency)).toBe(true);
  });

  it.each(['XYZ', 'usd', '', 'toString', 'constructor'])('refuses the unknown currency %j', (currency) => {
    expect(isKnownCurrency(currency)).toBe(false);
    expect(() => minorUnitExponent(currency)).toThrow(UnknownCurrencyError);
  });
});

describe('divFloor and divCeil', () => {
  it('bracket the exact quotient', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: 0n, max: pow10(40) }), fc.bigInt({ min: 1n, max: pow10(30) }), (a, b) => {
        const f = divFloor(a, b);
        const c = divCeil(a, b);
        expect(f * b <= a && a < (f + 1n) * b).toBe(true);
        expect((c - 1n) * b < a && a <= c * b).toBe(true);
        expect(c - f).toBe(a % b === 0n ? 0n : 1n);
      }),
    );
  });

  it.each([
    [7n, 2n, 3n, 4n],
    [6n, 2n, 3n, 3n],
    [0n, 5n, 0n, 0n],
    [1n, 5n, 0n, 1n],
  ])('%s / %s: floor %s, ceil %s', (a, b, f, c) => {
    expect(divFloor(a, b)).toBe(f);
    expect(divCeil(a, b)).toBe(c);
  });

  it('refuse a negative dividend or a non-positive divisor', () => {
    expect(() => divFloor(-1n, 2n)).toThrow(RangeError);
    expect(() => divCeil(-1n, 2n)).toThrow(RangeError);
    expect(() => divFloor(1n, 0n)).toThrow(RangeError);
    expect(() => divCeil(1n, -2n)).toThrow(RangeError);
  });
});

describe('targetFromSource (floor)', () => {
  it('never exceeds the exact value and is within one minor unit of it', () => {
    fc.assert(
      fc.property(amount, rateScaled, exponent, exponent, (source, rate, srcExp, tgtExp) => {
        const target = targetFromSource(source, rate, srcExp, tgtExp);
        const { num, den } = exactTargetOf(source, rate, srcExp, tgtExp);
        expect(target * den <= num).toBe(true); // never favours the client
        expect(num < (target + 1n) * den).toBe(true); // less than one minor unit short
      }),
    );
  });

  it('is monotonic in the source amount', () => {
    fc.assert(
      fc.property(amount, amount, rateScaled, exponent, exponent, (a, b, rate, srcExp, tgtExp) => {
        const [lo, hi] = a <= b ? [a, b] : [b, a];
        expect(targetFromSource(lo, rate, srcExp, tgtExp) <= targetFromSource(hi, rate, srcExp, tgtExp)).toBe(true);
      }),
    );
  });

  it.each([
    // 10.00 USD at 36.5 → 365.00 VES
    [1000n, '36.5', 2, 2, 36500n],
    // 0.01 USD at 36.123456789012 → 0.36123... VES → 36 (floor)
    [1n, '36.123456789012', 2, 2, 36n],
    // 1 JPY (exp 0) at 0.25 → 0.25 VES → 25 minor
    [1n, '0.25', 0, 2, 25n],
    // 0.001 KWD (exp 3) at 120.5 → 0.1205 VES → 12 minor (floor of 12.05)
    [1n, '120.5', 3, 2, 12n],
    // tiny rate: 1 USD cent buys nothing
    [1n, '0.000000000001', 2, 2, 0n],
  ])('%s minor at %s (exp %i→%i) gives %s', (source, rate, srcExp, tgtExp, expected) => {
    const parsed = parseRate(rate);
    if (!parsed.ok) throw new Error('bad fixture');
    expect(targetFromSource(source, parsed.scaled, srcExp, tgtExp)).toBe(expected);
  });
});

describe('sourceFromTarget (ceil)', () => {
  it('never falls short of the exact value and is within one minor unit of it', () => {
    fc.assert(
      fc.property(amount, rateScaled, exponent, exponent, (target, rate, srcExp, tgtExp) => {
        const source = sourceFromTarget(target, rate, srcExp, tgtExp);
        const { num, den } = exactSourceOf(target, rate, srcExp, tgtExp);
        expect(source * den >= num).toBe(true); // never favours the client
        expect((source - 1n) * den < num).toBe(true); // less than one minor unit over
      }),
    );
  });

  it.each([
    // 1500.00 VES at 36.5 → 41.0958... USD → 4110 cents (ceil)
    [150000n, '36.5', 2, 2, 4110n],
    // exact: 365.00 VES at 36.5 → 10.00 USD
    [36500n, '36.5', 2, 2, 1000n],
    // 1 VES cent at a huge rate still costs one source minor unit
    [1n, '100000000000000000000', 2, 2, 1n],
    // 100.00 VES at 0.25 per JPY → 400 JPY
    [10000n, '0.25', 0, 2, 400n],
  ])('%s VES minor at %s (exp %i→%i) costs %s', (target, rate, srcExp, tgtExp, expected) => {
    const parsed = parseRate(rate);
    if (!parsed.ok) throw new Error('bad fixture');
    expect(sourceFromTarget(target, parsed.scaled, srcExp, tgtExp)).toBe(expected);
  });
});

describe('round trips', () => {
  it('paying for the floored target never costs more than the source that bought it', () => {
    fc.assert(
      fc.property(amount, rateScaled, exponent, exponent, (source, rate, srcExp, tgtExp) => {
        const target = targetFromSource(source, rate, srcExp, tgtExp);
        expect(sourceFromTarget(target, rate, srcExp, tgtExp) <= source).toBe(true);
      }),
    );
  });

  it('the ceiled source always buys at least the target it was computed for', () => {
    fc.assert(
      fc.property(amount, rateScaled, exponent, exponent, (target, rate, srcExp, tgtExp) => {
        const source = sourceFromTarget(target, rate, srcExp, tgtExp);
        expect(targetFromSource(source, rate, srcExp, tgtExp) >= target).toBe(true);
      }),
    );
  });

  it('is the identity when the conversion is exact', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: 0n, max: pow10(15) }), fc.bigInt({ min: 1n, max: 1000n }), (source, units) => {
        const rate = units * RATE_SCALE; // a whole-number rate between equal exponents divides exactly back
        const target = targetFromSource(source, rate, 2, 2);
        expect(target).toBe(source * units);
        expect(sourceFromTarget(target, rate, 2, 2)).toBe(source);
      }),
    );
  });
});

describe('argument checks', () => {
  it('refuse a zero rate, a negative amount and a silly exponent', () => {
    expect(() => targetFromSource(1n, 0n, 2, 2)).toThrow(RangeError);
    expect(() => sourceFromTarget(1n, 0n, 2, 2)).toThrow(RangeError);
    expect(() => targetFromSource(-1n, RATE_SCALE, 2, 2)).toThrow(RangeError);
    expect(() => sourceFromTarget(1n, RATE_SCALE, -1, 2)).toThrow(RangeError);
    expect(() => sourceFromTarget(1n, RATE_SCALE, 2, 1.5)).toThrow(RangeError);
  });
});
