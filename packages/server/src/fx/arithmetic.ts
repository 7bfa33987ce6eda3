/**
 * Exact exchange-rate arithmetic. A rate is a bigint scaled by 10^12 (units of VES per one unit of the base,
 * to 12 decimals); amounts are bigint minor units. Every conversion is one integer division with a named
 * rounding, so nothing passes through a float and the rounding direction is never implicit.
 */

export const RATE_DECIMALS = 12;
export const RATE_SCALE = 10n ** BigInt(RATE_DECIMALS);
/** rate_scaled is stored as numeric(38,0), so the integer part of a rate may have at most 26 digits. */
export const RATE_MAX_INTEGER_DIGITS = 38 - RATE_DECIMALS;

export type RateParseError =
  | { kind: 'not_text'; message: string }
  | { kind: 'malformed'; message: string }
  | { kind: 'too_many_decimals'; message: string }
  | { kind: 'too_large'; message: string }
  | { kind: 'zero'; message: string };

export type RateParseResult = { ok: true; scaled: bigint } | { ok: false; error: RateParseError };

// Strict on purpose: an operator typo must not become a price. Plain digits, an optional fraction with at
// least one digit, no sign, no exponent, no spaces, no leading zeros ("01.5"), no bare "." at either end.
const RATE_TEXT = /^(0|[1-9][0-9]*)(?:\.([0-9]+))?$/;

export function parseRate(text: unknown): RateParseResult {
  if (typeof text !== 'string') {
    return { ok: false, error: { kind: 'not_text', message: 'rate must be decimal text' } };
  }
  const match = RATE_TEXT.exec(text);
  if (match === null) {
    return {
      ok: false,
      error: {
        kind: 'malformed',
        message: 'rate must be plain decimal text such as "36.5": digits, an optional fraction, no sign or exponent',
      },
    };
  }
  const integer = match[1]!;
  const fraction = match[2] ?? '';
  if (fraction.length > RATE_DECIMALS) {
    return {
      ok: false,
      error: { kind: 'too_many_decimals', message: `rate has more than ${RATE_DECIMALS} decimals` },
    };
  }
  if (integer.length > RATE_MAX_INTEGER_DIGITS) {
    return {
      ok: false,
      error: { kind: 'too_large', message: `rate has more than ${RATE_MAX_INTEGER_DIGITS} integer digits` },
    };
  }
  const scaled = BigInt(integer + fraction.padEnd(RATE_DECIMALS, '0'));
  if (scaled === 0n) return { ok: false, error: { kind: 'zero', message: 'rate must be greater than 0' } };
  return { ok: true, scaled };
}

/** The edge form of a rate: always exactly 12 decimals ("36.500000000000"). */
export function formatRate(scaled: bigint): string {
  if (scaled < 0n) throw new RangeError(`a rate is never negative: ${scaled}`);
  const digits = scaled.toString().padStart(RATE_DECIMALS + 1, '0');
  return `${digits.slice(0, -RATE_DECIMALS)}.${digits.slice(-RATE_DECIMALS)}`;
}

// ISO 4217 minor-unit exponents of the currencies a balance may plausibly hold. Deliberately a closed list:
// guessing the exponent of an unknown currency would misprice every conversion by a power of ten.
const MINOR_UNIT_EXPONENTS: Readonly<Record<string, number>> = {
  VES: 2,
  USD: 2,
  EUR: 2,
  GBP: 2,
  CAD: 2,
  AUD: 2,
  CHF: 2,
  CNY: 2,
  MXN: 2,
  BRL: 2,
  COP: 2,
  PEN: 2,
  ARS: 2,
  UYU: 2,
  BOB: 2,
  DOP: 2,
  PAB: 2,
  CRC: 2,
  TTD: 2,
  JPY: 0,
  KRW: 0,
  CLP: 0,
  PYG: 0,
  ISK: 0,
  BHD: 3,
  KWD: 3,
  JOD: 3,
  OMR: 3,
  TND: 3,
};

export class UnknownCurrencyError extends Error {
  constructor(readonly currency: string) {
    super(`unknown currency ${currency}: its minor unit is not known`);
    this.name = 'UnknownCurrencyError';
  }
}

export function isKnownCurrency(currency: string): boolean {
  return Object.hasOwn(MINOR_UNIT_EXPONENTS, currency);
}

/**
 * Decimal places of the currency's minor unit. Throws for a currency outside the table: callers validate
 * with isKnownCurrency at the edge (rate publication refuses such a base), so reaching here is a bug.
 */
export function minorUnitExponent(currency: string): number {
  const exponent = Object.hasOwn(MINOR_UNIT_EXPONENTS, currency) ? MINOR_UNIT_EXPONENTS[currency] : undefined;
  if (exponent === undefined) throw new UnknownCurrencyError(currency);
  return exponent;
}

function checkDivision(a: bigint, b: bigint): void {
  if (a < 0n) throw new RangeError(`dividend must be non-negative: ${a}`);
  if (b <= 0n) throw new RangeError(`divisor must be positive: ${b}`);
}

/** ⌊a / b⌋ for a ≥ 0, b > 0 (bigint division truncates, which is the floor on this domain). */
export function divFloor(a: bigint, b: bigint): bigint {
  checkDivision(a, b);
  return a / b;
}

/** ⌈a / b⌉ for a ≥ 0, b > 0. */
export function divCeil(a: bigint, b: bigint): bigint {
  checkDivision(a, b);
  const q = a / b;
  return q * b === a ? q : q + 1n;
}

function pow10(n: number): bigint {
  return 10n ** BigInt(n);
}

function checkConversion(amount: bigint, rateScaled: bigint, srcExp: number, tgtExp: number): void {
  if (amount < 0n) throw new RangeError(`amount must be non-negative: ${amount}`);
  if (rateScaled <= 0n) throw new RangeError(`rate must be positive: ${rateScaled}`);
  for (const e of [srcExp, tgtExp]) {
    if (!Number.isInteger(e) || e < 0 || e > 18) throw new RangeError(`bad minor-unit exponent: ${e}`);
  }
}

/**
 * The exact target as a fraction num/den: target = source × rate × 10^(tgtExp − srcExp), with the rate's
 * 10^12 scale and any negative exponent difference moved into the denominator so both stay integers.
 */
export function exactTarget(
  sourceMinor: bigint,
  rateScaled: bigint,
  srcExp: number,
  tgtExp: number,
): { num: bigint; den: bigint } {
  const shift = tgtExp - srcExp;
  return {
    num: sourceMinor * rateScaled * pow10(Math.max(0, shift)),
    den: RATE_SCALE * pow10(Math.max(0, -shift)),
  };
}

/** The exact source needed for a target, as num/den: source = target / rate × 10^(srcExp − tgtExp). */
export function exactSource(
  targetMinor: bigint,
  rateScaled: bigint,
  srcExp: number,
  tgtExp: number,
): { num: bigint; den: bigint } {
  const shift = srcExp - tgtExp;
  return {
    num: targetMinor * RATE_SCALE * pow10(Math.max(0, shift)),
    den: rateScaled * pow10(Math.max(0, -shift)),
  };
}

/** Target minor units bought by a fixed source, rounded DOWN: the beneficiary never gets more than paid for. */
export function targetFromSource(sourceMinor: bigint, rateScaled: bigint, srcExp: number, tgtExp: number): bigint {
  checkConversion(sourceMinor, rateScaled, srcExp, tgtExp);
  const { num, den } = exactTarget(sourceMinor, rateScaled, srcExp, tgtExp);
  return divFloor(num, den);
}

/** Source minor units needed for a fixed target, rounded UP: the balance never pays less than the target costs. */
export function sourceFromTarget(targetMinor: bigint, rateScaled: bigint, srcExp: number, tgtExp: number): bigint {
  checkConversion(targetMinor, rateScaled, srcExp, tgtExp);
  const { num, den } = exactSource(targetMinor, rateScaled, srcExp, tgtExp);
  return divCeil(num, den);
}
