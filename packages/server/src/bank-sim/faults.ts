import { REASON_CODE_PATTERN, REFERENCE_PATTERN } from '../rails/gateway/protocol.ts';
import type { Clock } from '../shared/clock.ts';
import { randomId } from '../shared/ids.ts';

/**
 * Faults the simulated bank can be told to show, through POST /_control/faults or the `faults` object.
 * Each may be scoped to one transfer reference, to the next `count` uses, and to the next `forMs`
 * milliseconds of the simulator's clock; unscoped, it lasts until removed. The first matching fault in
 * the order they were injected applies.
 */

export interface HoursWindow {
  /** HH:MM in the simulator's local time (utcOffsetMinutes). The window may wrap past midnight. */
  start: string;
  end: string;
}

/** What happens to a transfer submission. */
export type OutcomeFault =
  /** Declined, nothing booked (reasonCode default insufficient_funds). */
  | { kind: 'decline'; reasonCode: string }
  /** Destination refused, nothing booked (reasonCode default restricted_beneficiary). */
  | { kind: 'invalid_destination'; reasonCode: string }
  /** Refused before booking. */
  | { kind: 'cannot_process' }
  | { kind: 'offline' }
  /** Refused before booking; with a window, only while the clock is inside it. */
  | { kind: 'outside_hours'; window: HoursWindow | null }
  /** The bank's own wait timed out; `booked` says whether the debit happened anyway. */
  | { kind: 'bank_timeout'; booked: boolean }
  /** Booked once, but the answer says duplicate. */
  | { kind: 'duplicate_report' }
  /** Booked, then the answer is held back: never sent (null) or sent after answerAfterMs. */
  | { kind: 'timeout_after_booking'; answerAfterMs: number | null }
  /** Debited and held by the clearing house; after releaseAfterMs it settles or is returned. */
  | { kind: 'hold_at_clearing'; releaseAfterMs: number; outcome: 'settled' | 'returned' }
  /** Accepted and debited; after returnAfterMs the clearing house rejects it and the money comes back. */
  | { kind: 'late_return'; returnAfterMs: number }
  /** The connection is cut without an answer, before or after booking. */
  | { kind: 'drop_connection'; afterBooking: boolean }
  /** An HTTP error status (5xx) instead of an answer, before or after booking. */
  | { kind: 'http_error'; status: number; afterBooking: boolean }
  /** A 200 whose body is not the protocol's JSON, before or after booking. */
  | { kind: 'malformed_answer'; afterBooking: boolean };

/** What happens to statement lines as they are booked. */
export type LineFault =
  /** The line shows on the statement only ms after booking (the balance moves at once). */
  | { kind: 'delay_lines'; ms: number }
  /** The bank books the line twice: a byte-identical copy with its own bankLineId. */
  | { kind: 'duplicate_line' };

/** Every protocol request waits ms before it is handled. */
export type LatencyFault = { kind: 'latency'; ms: number };

export type FaultBody = OutcomeFault | LineFault | LatencyFault;
export type FaultKind = FaultBody['kind'];

export interface FaultScope {
  reference: string | null;
  count: number | null;
  forMs: number | null;
}

export type Fault = FaultBody & FaultScope;

export const OUTCOME_KINDS: readonly FaultKind[] = [
  'decline',
  'invalid_destination',
  'cannot_process',
  'offline',
  'outside_hours',
  'bank_timeout',
  'duplicate_report',
  'timeout_after_booking',
  'hold_at_clearing',
  'late_return',
  'drop_connection',
  'http_error',
  'malformed_answer',
];

export interface ActiveFault {
  id: string;
  fault: Fault;
  /** Uses left; null: unlimited. */
  remaining: number | null;
  /** Expiry on the simulator's clock; null: none. */
  until: string | null;
}

export interface BankSimFaults {
  /** Validates and adds a fault (same JSON shape as POST /_control/faults); returns its id. */
  inject(input: unknown): string;
  remove(id: string): boolean;
  clear(): number;
  list(): ActiveFault[];
}

export interface FaultBook extends BankSimFaults {
  /** Takes the first live fault of one of `kinds` that fits the reference, using up one of its count. */
  take(kinds: readonly FaultKind[], reference: string | null): Fault | null;
}

type Parsed = { ok: true; fault: Fault } | { ok: false; error: string };

const HHMM = /^([01]\d|2[0-3]):[0-5]\d$/;
const MAX_MS = 86_400_000;

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function ms(value: unknown, fallback: number | null, field: string): number | null | string {
  if (value === undefined) return fallback;
  if (value === null) return null;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0 || value > MAX_MS) {
    return `${field} must be an integer number of milliseconds between 0 and ${MAX_MS}`;
  }
  return value;
}

function flag(value: unknown, fallback: boolean, field: string): boolean | string {
  if (value === undefined) return fallback;
  if (typeof value !== 'boolean') return `${field} must be true or false`;
  return value;
}

function code(value: unknown, fallback: string): string | { error: string } {
  if (value === undefined) return fallback;
  if (typeof value !== 'string' || !REASON_CODE_PATTERN.test(value))
    return { error: 'reasonCode must be a short code' };
  return value;
}

function parseBody(input: Record<string, unknown>): { ok: true; body: FaultBody } | { ok: false; error: string } {
  const kind = input.kind;
  const fail = (error: string) => ({ ok: false as const, error });
  const done = (body: FaultBody) => ({ ok: true as const, body });
  switch (kind) {
    case 'decline':
    case 'invalid_destination': {
      const reason = code(input.reasonCode, kind === 'decline' ? 'insufficient_funds' : 'restricted_beneficiary');
      return typeof reason === 'string' ? done({ kind, reasonCode: reason }) : fail(reason.error);
    }
    case 'cannot_process':
    case 'offline':
    case 'duplicate_report':
    case 'duplicate_line':
      return done({ kind });
    case 'outside_hours': {
      const window = input.window;
      if (window === undefined || window === null) return done({ kind, window: null });
      if (!isRecord(window) || typeof window.start !== 'string' || typeof window.end !== 'string') {
        return fail('window must be { start: "HH:MM", end: "HH:MM" }');
      }
      if (!HHMM.test(window.start) || !HHMM.test(window.end)) return fail('window times must be HH:MM');
      return done({ kind, window: { start: window.start, end: window.end } });
    }
    case 'bank_timeout': {
      const booked = flag(input.booked, true, 'booked');
      return typeof booked === 'string' ? fail(booked) : done({ kind, booked });
    }
    case 'timeout_after_booking': {
      const after = ms(input.answerAfterMs, null, 'answerAfterMs');
      return typeof after === 'string' ? fail(after) : done({ kind, answerAfterMs: after });
    }
    case 'hold_at_clearing': {
      const after = ms(input.releaseAfterMs, 2000, 'releaseAfterMs');
      const outcome = input.outcome ?? 'settled';
      if (typeof after === 'string') return fail(after);
      if (after === null) return fail('releaseAfterMs must be a number');
      if (outcome !== 'settled' && outcome !== 'returned') return fail('outcome must be "settled" or "returned"');
      return done({ kind, releaseAfterMs: after, outcome });
    }
    case 'late_return': {
      const after = ms(input.returnAfterMs, 2000, 'returnAfterMs');
      if (typeof after === 'string') return fail(after);
      if (after === null) return fail('returnAfterMs must be a number');
      return done({ kind, returnAfterMs: after });
    }
    case 'drop_connection':
    case 'malformed_answer': {
      const afterBooking = flag(input.afterBooking, true, 'afterBooking');
      return typeof afterBooking === 'string' ? fail(afterBooking) : done({ kind, afterBooking });
    }
    case 'http_error': {
      const afterBooking = flag(input.afterBooking, false, 'afterBooking');
      const status = input.status ?? 502;
      if (typeof afterBooking === 'string') return fail(afterBooking);
      if (typeof status !== 'number' || !Number.isInteger(status) || status < 500 || status > 599) {
        return fail('status must be an HTTP status between 500 and 599');
      }
      return done({ kind, status, afterBooking });
    }
    case 'delay_lines':
    case 'latency': {
      const value = ms(input.ms, null, 'ms');
      if (typeof value === 'string') return fail(value);
      if (value === null) return fail('ms is required');
      return done({ kind, ms: value });
    }
    default:
      return fail(`unknown fault kind "${String(kind).slice(0, 40)}"`);
  }
}

/** Checks a fault as it arrives on the control API. */
export function parseFault(input: unknown): Parsed {
  if (!isRecord(input)) return { ok: false, error: 'a fault is a JSON object with a kind' };
  const body = parseBody(input);
  if (!body.ok) return body;
  const { reference, count, forMs } = input;
  if (reference !== undefined && reference !== null) {
    if (typeof reference !== 'string' || !REFERENCE_PATTERN.test(reference)) {
      return { ok: false, error: 'reference must be a transfer reference' };
    }
  }
  if (count !== undefined && count !== null) {
    if (typeof count !== 'number' || !Number.isSafeInteger(count) || count < 1 || count > 1_000_000) {
      return { ok: false, error: 'count must be a positive integer' };
    }
  }
  const duration = ms(forMs, null, 'forMs');
  if (typeof duration === 'string') return { ok: false, error: duration };
  return {
    ok: true,
    fault: {
      ...body.body,
      reference: typeof reference === 'string' ? reference : null,
      count: typeof count === 'number' ? count : null,
      forMs: duration,
    },
  };
}

function minuteOfDay(hhmm: string): number {
  return Number(hhmm.slice(0, 2)) * 60 + Number(hhmm.slice(3, 5));
}

export function insideWindow(window: HoursWindow, localMinute: number): boolean {
  const start = minuteOfDay(window.start);
  const end = minuteOfDay(window.end);
  if (start === end) return false;
  return start < end ? localMinute >= start && localMinute < end : localMinute >= start || localMinute < end;
}

export function createFaultBook(deps: { clock: Clock; utcOffsetMinutes: number }): FaultBook {
  const active: Array<{ id: string; fault: Fault; remaining: number | null; until: number | null }> = [];

  function prune(now: number): void {
    for (let i = active.length - 1; i >= 0; i--) {
      const entry = active[i]!;
      if ((entry.until !== null && entry.until <= now) || entry.remaining === 0) active.splice(i, 1);
    }
  }

  return {
    inject(input) {
      const parsed = parseFault(input);
      if (!parsed.ok) throw new RangeError(parsed.error);
      const now = deps.clock.now().getTime();
      const id = randomId('flt', 8);
      const { fault } = parsed;
      active.push({
        id,
        fault,
        remaining: fault.count,
        until: fault.forMs === null ? null : now + fault.forMs,
      });
      return id;
    },
    remove(id) {
      const index = active.findIndex((entry) => entry.id === id);
      if (index < 0) return false;
      active.splice(index, 1);
      return true;
    },
    clear() {
      const n = active.length;
      active.length = 0;
      return n;
    },
    list() {
      prune(deps.clock.now().getTime());
      return active.map((entry) => ({
        id: entry.id,
        fault: entry.fault,
        remaining: entry.remaining,
        until: entry.until === null ? null : new Date(entry.until).toISOString(),
      }));
    },
    take(kinds, reference) {
      const now = deps.clock.now().getTime();
      prune(now);
      const localMinute = Math.floor(((((now + deps.utcOffsetMinutes * 60_000) % MAX_MS) + MAX_MS) % MAX_MS) / 60_000);
      for (const entry of active) {
        const { fault } = entry;
        if (!kinds.includes(fault.kind)) continue;
        if (fault.reference !== null && fault.reference !== reference) continue;
        if (fault.kind === 'outside_hours' && fault.window !== null && !insideWindow(fault.window, localMinute))
          continue;
        if (entry.remaining !== null) entry.remaining -= 1;
        prune(now);
        return fault;
      }
      return null;
    },
  };
}
