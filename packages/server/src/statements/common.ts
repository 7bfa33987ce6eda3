import type { BankStatementLine } from '../rails/rail.ts';

/** What a statement file parser answers: every line, or one message and nothing (all or nothing). */
export type StatementParse = { ok: true; lines: BankStatementLine[] } | { ok: false; error: string };

// ISO 4217 minor-unit exponents that are not 2. Anything unlisted (VES, USD, EUR, ...) has 2.
const EXPONENTS: Record<string, number> = {
  BIF: 0,
  CLP: 0,
  DJF: 0,
  GNF: 0,
  ISK: 0,
  JPY: 0,
  KMF: 0,
  KRW: 0,
  PYG: 0,
  RWF: 0,
  UGX: 0,
  VND: 0,
  VUV: 0,
  XAF: 0,
  XOF: 0,
  XPF: 0,
  BHD: 3,
  IQD: 3,
  JOD: 3,
  KWD: 3,
  LYD: 3,
  OMR: 3,
  TND: 3,
};

export function currencyExponent(currency: string): number {
  return EXPONENTS[currency] ?? 2;
}

/**
 * "1500.5" in VES → 150050n. Refuses a value with more significant decimals than the currency has:
 * rounding a bank's amount would make the statement disagree with the bank.
 */
export function minorOfDecimal(
  text: string,
  currency: string,
): { ok: true; minor: bigint } | { ok: false; problem: string } {
  const match = /^(\d{1,18})(?:\.(\d{1,5}))?$/.exec(text);
  if (match === null) return { ok: false, problem: `"${text.slice(0, 40)}" is not a decimal amount` };
  const exponent = currencyExponent(currency);
  const fraction = (match[2] ?? '').replace(/0+$/, '');
  if (fraction.length > exponent) {
    return { ok: false, problem: `${text} has more decimals than ${currency} allows (${exponent})` };
  }
  const minor = BigInt(match[1]!) * 10n ** BigInt(exponent) + BigInt(fraction.padEnd(exponent, '0') || '0');
  return { ok: true, minor };
}

/** 1-based line of a character offset, by binary search over the offsets of line breaks. */
export function lineIndex(text: string): (offset: number) => number {
  const breaks: number[] = [];
  for (let i = text.indexOf('\n'); i >= 0; i = text.indexOf('\n', i + 1)) breaks.push(i);
  return (offset) => {
    let low = 0;
    let high = breaks.length;
    while (low < high) {
      const mid = (low + high) >>> 1;
      if (breaks[mid]! < offset) low = mid + 1;
      else high = mid;
    }
    return low + 1;
  };
}

/** Strips a UTF-8 byte order mark, which spreadsheet exports often leave in front. */
export function withoutBom(text: string): string {
  return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
}
