import { NONCE_PATTERN } from './envelope.ts';

/**
 * Nonces for the x-nonce header and envelope piece 6.
 *
 * The service keeps one high-water mark per API key, shared by every route, and never lowers it: a write needs a
 * nonce above the mark, and a read one not yet seen within the 64 numbers below it. So a key's nonces must never
 * go backwards or repeat, across restarts and across every process that signs with that key; and reads sent in
 * parallel need numbers close together, or the one that arrives last falls outside the window.
 *
 * How: a nonce is a bigint written in decimal, at most 38 digits (about 19 in practice). Every new value is at
 * least `last + 1`, and the clock sets a floor of `milliseconds since the epoch × 10^6`:
 *
 *     first nonce, or the previous one issued at least `reseedAfterMs` ago:  max(clock × 10^6, last + 1)
 *     otherwise:                                                            last + 1
 *
 * - The clock floor keeps a fresh generator (a restarted process, a CLI run) above everything issued before it
 *   without any stored state: overtaking it would take a million nonces per millisecond of uptime.
 * - `last + 1` makes every generator strictly increasing even when the clock stands still or steps back (NTP).
 * - The floor applies only after a pause, not on every call, because signing one request takes about a
 *   millisecond: a continuous floor would space a burst of parallel GETs a million apart, and any reordering on
 *   the wire would push the earlier ones out of the 64-wide read window. During activity the numbers are
 *   consecutive; a jump happens only when nothing was issued for `reseedAfterMs` (default 1 s), when no earlier
 *   request is plausibly still travelling.
 *
 * The in-memory generator alone cannot stop two processes that sign with one key from colliding.
 * createFileNonceGenerator (nonce-file.ts) keeps `last` and its time in a state file shared by all of them,
 * read and advanced under an exclusive lock file, so their nonces interleave strictly increasing and never repeat.
 */
export interface NonceGenerator {
  next(): Promise<string>;
  /**
   * Optional, for generators shared by several processes: runs `fn` while no other signer of the generator can
   * take a nonce, `fn` taking its own from the `next` it is handed. The client runs each write inside it, from
   * taking the nonce until the answer is in, so that no request signed elsewhere overtakes the write (see lane.ts).
   */
  exclusive?<T>(fn: (next: () => Promise<string>) => Promise<T>): Promise<T>;
}

/** Largest nonce the service accepts: 38 nines. */
export const MAX_NONCE = 10n ** 38n - 1n;

export const DEFAULT_RESEED_AFTER_MS = 1_000;

const CLOCK_SCALE = 1_000_000n;

/** The last nonce issued and the clock reading (ms) when it was; null time when unknown. */
export interface NonceState {
  value: bigint;
  issuedAtMs: number | null;
}

/** The pure step shared by every generator (see above). */
export function nextNonce(nowMs: number, last: NonceState | null, reseedAfterMs = DEFAULT_RESEED_AFTER_MS): NonceState {
  const floor = BigInt(Math.max(0, Math.floor(nowMs))) * CLOCK_SCALE;
  const idle = last === null || last.issuedAtMs === null || nowMs - last.issuedAtMs >= reseedAfterMs;
  let value = last === null ? floor : last.value + 1n;
  if (idle && floor > value) value = floor;
  // Zero only with a clock at the epoch; the format forbids it.
  if (value < 1n) value = 1n;
  if (value > MAX_NONCE) throw new RangeError('nonce would exceed 38 digits; this key needs replacing');
  return { value, issuedAtMs: nowMs };
}

/** Reads a stored nonce; null for none, an error for anything that is not one (never guess past corruption). */
export function parseNonce(text: string, source: string): bigint | null {
  const trimmed = text.trim();
  if (trimmed === '') return null;
  if (!NONCE_PATTERN.test(trimmed)) throw new Error(`${source} does not hold a nonce: ${trimmed.slice(0, 60)}`);
  return BigInt(trimmed);
}

export interface MemoryNonceOptions {
  /** Milliseconds since the epoch; injectable for tests. */
  now?: () => number;
  /** Pause after which the clock floor applies again; default 1 s. */
  reseedAfterMs?: number;
  /** Seed, e.g. the last nonce known to the caller. */
  last?: bigint | string;
}

export function createMemoryNonceGenerator(options: MemoryNonceOptions = {}): NonceGenerator {
  const now = options.now ?? Date.now;
  const reseedAfterMs = options.reseedAfterMs ?? DEFAULT_RESEED_AFTER_MS;
  const seed = typeof options.last === 'string' ? parseNonce(options.last, 'seed') : (options.last ?? null);
  let last: NonceState | null = seed === null ? null : { value: seed, issuedAtMs: null };
  return {
    async next() {
      // Synchronous between reading and writing `last`, so concurrent callers can never get the same value.
      last = nextNonce(now(), last, reseedAfterMs);
      return last.value.toString(10);
    },
  };
}

const sharedByKey = new Map<string, NonceGenerator>();

/**
 * One in-memory generator per API key for the whole process, so that two clients built with the same key in
 * one process draw from the same sequence instead of colliding within a millisecond.
 */
export function sharedMemoryNonceGenerator(apiKey: string): NonceGenerator {
  let generator = sharedByKey.get(apiKey);
  if (!generator) {
    generator = createMemoryNonceGenerator();
    sharedByKey.set(apiKey, generator);
  }
  return generator;
}
