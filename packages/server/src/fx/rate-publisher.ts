import type { Clock } from '../shared/clock.ts';
import { formatRate, parseRate } from './arithmetic.ts';
import type { Rate } from './model.ts';
import type { RateService } from './rates.ts';

/**
 * Something that keeps rates published on its own: the sandbox publisher today, a market feed later.
 * The operator API publishes by hand through RateService.publish and needs no RateSource.
 */
export interface RateSource {
  /** Publishes if needed; returns the new publication, or null when the rate in force is fresh enough. */
  tick(): Promise<Rate | null>;
  /** Ticks now and then every intervalMs, on a timer that never keeps the process alive. */
  start(intervalMs: number): void;
  /** Stops the timer and waits for a tick in flight. */
  stop(): Promise<void>;
}

export interface SandboxRatePublisherOptions {
  rates: RateService;
  clock: Clock;
  /** Default USD. */
  base?: string;
  /** Value of the first publication and centre of the walk, decimal text. Default '36.5'. */
  start?: string;
  /** Life of each publication. */
  lifetimeMs: number;
  /** Largest move of one publication from the previous one, in basis points. */
  driftBps: number;
  /** The walk never leaves start ± this many basis points. Default 2000 (±20 %). */
  maxDeviationBps?: number;
  /** Uniform in [0, 1); injectable so tests can be deterministic. */
  random?: () => number;
  /** Called with an unexpected failure of a background tick (the loop keeps going). */
  onError?: (err: unknown) => void;
}

const BPS = 10_000n;
// Published values keep 4 decimals: enough to move visibly, short enough to read in a demo.
const QUANTUM = 10n ** 8n;

function assertConfig(ok: boolean, message: string): void {
  if (!ok) throw new RangeError(`sandbox rate publisher: ${message}`);
}

/**
 * Keeps a general base/VES rate in force for the sandbox demo: a new publication, a small bounded random
 * step from the last one, whenever none is in force or the one in force is within half its lifetime of
 * expiry. Republishing early means a client fetching the rate never sees it about to lapse.
 */
export function createSandboxRatePublisher(options: SandboxRatePublisherOptions): RateSource {
  const { rates, clock, lifetimeMs, driftBps } = options;
  const base = options.base ?? 'USD';
  const parsedStart = parseRate(options.start ?? '36.5');
  assertConfig(parsedStart.ok, 'start must be a valid rate');
  const centre = parsedStart.ok ? parsedStart.scaled : 0n;
  const maxDeviationBps = options.maxDeviationBps ?? 2000;
  assertConfig(Number.isInteger(lifetimeMs) && lifetimeMs > 0, 'lifetimeMs must be a positive integer');
  assertConfig(Number.isInteger(driftBps) && driftBps >= 0 && driftBps < 10_000, 'driftBps must be 0..9999');
  assertConfig(
    Number.isInteger(maxDeviationBps) && maxDeviationBps >= 0 && maxDeviationBps < 10_000,
    'maxDeviationBps must be 0..9999',
  );
  const random = options.random ?? Math.random;
  const low = maxOf((centre * (BPS - BigInt(maxDeviationBps))) / BPS, QUANTUM);
  const high = maxOf((centre * (BPS + BigInt(maxDeviationBps))) / BPS, low);

  function step(from: bigint): bigint {
    const bps = BigInt(Math.round((random() * 2 - 1) * driftBps));
    const moved = from + (from * bps) / BPS;
    const quantised = (moved / QUANTUM) * QUANTUM;
    return minOf(maxOf(quantised, low), high);
  }

  async function tick(): Promise<Rate | null> {
    const now = clock.now();
    const current = await rates.inForce(null, base, now);
    if (current !== null) {
      const lifetime = current.expiresAt.getTime() - current.validFrom.getTime();
      const remaining = current.expiresAt.getTime() - now.getTime();
      if (remaining > lifetime / 2) return null;
    }
    const last = await rates.lastPublished(null, base);
    const next = last === null ? centre : step(last.rateScaled);
    const result = await rates.publish({
      base,
      rate: formatRate(next),
      validFrom: now,
      expiresAt: new Date(now.getTime() + lifetimeMs),
      source: 'sandbox-publisher',
    });
    if (result.kind !== 'published') throw new Error(`sandbox rate publisher: ${result.message}`);
    return result.rate;
  }

  let timer: NodeJS.Timeout | null = null;
  let inFlight: Promise<void> | null = null;

  function runOnce(): void {
    if (inFlight !== null) return; // a slow tick is never overlapped by the next one
    inFlight = tick()
      .then(() => undefined)
      .catch((err: unknown) => options.onError?.(err))
      .finally(() => {
        inFlight = null;
      });
  }

  return {
    tick,
    start(intervalMs: number) {
      assertConfig(Number.isInteger(intervalMs) && intervalMs > 0, 'intervalMs must be a positive integer');
      if (timer !== null) return;
      runOnce();
      timer = setInterval(runOnce, intervalMs);
      timer.unref();
    },
    async stop() {
      if (timer !== null) clearInterval(timer);
      timer = null;
      await inFlight;
    },
  };
}

function maxOf(a: bigint, b: bigint): bigint {
  return a > b ? a : b;
}

function minOf(a: bigint, b: bigint): bigint {
  return a < b ? a : b;
}
