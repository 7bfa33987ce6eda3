import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isoTime, isoTimeFromDb } from '../../src/shared/money.ts';

/**
 * isoTimeFromDb cuts PostgreSQL's JSON text of a timestamptz to the edge form instead of parsing a Date: for every
 * shape PostgreSQL writes it must answer what isoTime of the parsed Date answers.
 */

const pad = (n: number, width: number) => String(n).padStart(width, '0');

/** An instant as PostgreSQL's JSON writes it: the offset's local time, the fraction's trailing zeros dropped. */
function pgJson(ms: number, micros: number, offsetMinutes: number): string {
  const local = new Date(ms + offsetMinutes * 60_000);
  const date = `${pad(local.getUTCFullYear(), 4)}-${pad(local.getUTCMonth() + 1, 2)}-${pad(local.getUTCDate(), 2)}`;
  const time = `${pad(local.getUTCHours(), 2)}:${pad(local.getUTCMinutes(), 2)}:${pad(local.getUTCSeconds(), 2)}`;
  const fraction = pad(local.getUTCMilliseconds() * 1000 + micros, 6).replace(/0+$/, '');
  const sign = offsetMinutes < 0 ? '-' : '+';
  const abs = Math.abs(offsetMinutes);
  return `${date}T${time}${fraction === '' ? '' : `.${fraction}`}${sign}${pad(Math.floor(abs / 60), 2)}:${pad(abs % 60, 2)}`;
}

describe('isoTimeFromDb', () => {
  it('answers what isoTime answers for every fraction and offset PostgreSQL writes', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: Date.UTC(1970, 0, 1), max: Date.UTC(9999, 11, 31) }),
        fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 999 })),
        fc.oneof(fc.constant(0), fc.constantFrom(-270, -240, 60, 330)),
        (ms, micros, offset) => {
          const text = pgJson(ms, micros, offset);
          expect(isoTimeFromDb(text), text).toBe(isoTime(text));
        },
      ),
      { numRuns: 5000 },
    );
  });

  it('cuts each UTC shape to milliseconds without rounding', () => {
    expect(isoTimeFromDb('2026-11-29T03:34:27+00:00')).toBe('2026-11-29T03:34:27.000Z');
    expect(isoTimeFromDb('2026-11-29T03:34:27.1+00:00')).toBe('2026-11-29T03:34:27.100Z');
    expect(isoTimeFromDb('2026-11-29T03:34:27.12+00:00')).toBe('2026-11-29T03:34:27.120Z');
    expect(isoTimeFromDb('2026-11-29T03:34:27.123+00:00')).toBe('2026-11-29T03:34:27.123Z');
    expect(isoTimeFromDb('2026-11-29T03:34:27.999999+00:00')).toBe('2026-11-29T03:34:27.999Z');
    expect(isoTimeFromDb('2026-11-29T00:04:27.5-04:00')).toBe('2026-11-29T04:04:27.500Z');
  });
});
