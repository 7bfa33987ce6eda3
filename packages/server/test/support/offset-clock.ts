import type { Clock } from '../../src/shared/clock.ts';

/**
 * Real time plus an offset a test moves forward: the service runs as usual (timers, workers, the sandbox publisher),
 * and a test that needs time to pass (a quote to expire) jumps instead of sleeping. A sleep of "just over the TTL"
 * with a TTL of two seconds fails the other way on a loaded machine: the quote expires before the step that
 * needed it valid.
 */
export class OffsetClock implements Clock {
  private offsetMs = 0;
  now(): Date {
    return new Date(Date.now() + this.offsetMs);
  }
  advance(ms: number): void {
    this.offsetMs += ms;
  }
}
