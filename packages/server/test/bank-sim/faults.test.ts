import { describe, expect, it } from 'vitest';
import { createFaultBook, insideWindow, OUTCOME_KINDS, parseFault } from '../../src/bank-sim/faults.ts';
import { ManualClock } from '../../src/shared/clock.ts';

describe('parseFault', () => {
  it('fills defaults and the scope', () => {
    expect(parseFault({ kind: 'decline' })).toEqual({
      ok: true,
      fault: { kind: 'decline', reasonCode: 'insufficient_funds', reference: null, count: null, forMs: null },
    });
    expect(parseFault({ kind: 'http_error', reference: 'rr_1', count: 3 })).toMatchObject({
      ok: true,
      fault: { kind: 'http_error', status: 502, afterBooking: false, reference: 'rr_1', count: 3 },
    });
    expect(parseFault({ kind: 'timeout_after_booking' })).toMatchObject({ fault: { answerAfterMs: null } });
  });

  const bad: Array<[unknown, RegExp]> = [
    [null, /JSON object/],
    [{ kind: 'nope' }, /unknown fault kind/],
    [{ kind: 'latency' }, /ms is required/],
    [{ kind: 'latency', ms: -1 }, /ms must be/],
    [{ kind: 'http_error', status: 404 }, /status/],
    [{ kind: 'decline', reasonCode: 'has space' }, /reasonCode/],
    [{ kind: 'offline', count: 0 }, /count/],
    [{ kind: 'offline', reference: '../x' }, /reference/],
    [{ kind: 'outside_hours', window: { start: '25:00', end: '06:00' } }, /HH:MM/],
    [{ kind: 'hold_at_clearing', outcome: 'lost' }, /outcome/],
    [{ kind: 'bank_timeout', booked: 'yes' }, /booked/],
  ];
  for (const [input, message] of bad) {
    it(`refuses ${JSON.stringify(input)}`, () => {
      const parsed = parseFault(input);
      expect(parsed.ok).toBe(false);
      if (!parsed.ok) expect(parsed.error).toMatch(message);
    });
  }
});

describe('insideWindow', () => {
  it('handles plain and midnight-wrapping windows', () => {
    expect(insideWindow({ start: '09:00', end: '17:00' }, 9 * 60)).toBe(true);
    expect(insideWindow({ start: '09:00', end: '17:00' }, 17 * 60)).toBe(false);
    expect(insideWindow({ start: '22:00', end: '06:00' }, 23 * 60)).toBe(true);
    expect(insideWindow({ start: '22:00', end: '06:00' }, 5 * 60 + 59)).toBe(true);
    expect(insideWindow({ start: '22:00', end: '06:00' }, 12 * 60)).toBe(false);
  });
});

describe('the fault book', () => {
  it('takes faults in injection order, counts uses down and expires them on the clock', () => {
    const clock = new ManualClock();
    const book = createFaultBook({ clock, utcOffsetMinutes: 0 });
    book.inject({ kind: 'offline', forMs: 1000 });
    book.inject({ kind: 'cannot_process', count: 1 });
    expect(book.take(OUTCOME_KINDS, 'rr_1')?.kind).toBe('offline');
    clock.advance(1000);
    expect(book.take(OUTCOME_KINDS, 'rr_1')?.kind).toBe('cannot_process');
    expect(book.take(OUTCOME_KINDS, 'rr_1')).toBeNull();
    expect(book.list()).toHaveLength(0);
  });

  it('leaves faults of other kinds in place', () => {
    const book = createFaultBook({ clock: new ManualClock(), utcOffsetMinutes: 0 });
    book.inject({ kind: 'latency', ms: 5, count: 1 });
    expect(book.take(OUTCOME_KINDS, null)).toBeNull();
    expect(book.take(['latency'], null)).toMatchObject({ kind: 'latency', ms: 5 });
  });

  it('inject throws RangeError on a bad fault', () => {
    const book = createFaultBook({ clock: new ManualClock(), utcOffsetMinutes: 0 });
    expect(() => book.inject({ kind: 'latency' })).toThrow(RangeError);
  });
});
