/**
 * Resolves after the event loop has turned once: timers, socket reads and setImmediate callbacks queued before
 * it run first. On the embedded database a statement runs in this thread and its promise settles without any
 * I/O, so code that chains statements never lets the process read a socket until it awaits this (or real I/O).
 */
export function yieldToEventLoop(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/**
 * Calls start once the event loop has turned `turns` times (at least once). Each turn passes through the poll phase,
 * which reads the sockets that have data, so requests that arrive during the turns are parsed before start runs.
 */
export function afterTurns(turns: number, start: () => void): void {
  let left = Math.max(1, turns);
  const turn = (): void => {
    left -= 1;
    if (left > 0) setImmediate(turn);
    else start();
  };
  setImmediate(turn);
}

/**
 * Items a slice of synchronous work takes before the event loop turns (mapInSlices, runInSlices). A statement
 * batch of thousands of lines (reconciliation on PostgreSQL takes up to 5,000) held the thread 20 ms and more in one
 * stretch, and every request in flight waited for it; 500 items of the heaviest work there (the matcher, ~4.6 µs a
 * line on a slow hour) are about 2 ms. Batches of up to this many run in one stretch, as before.
 */
export const SLICE_ITEMS = 500;

/** items.map(fn), turning the event loop after every `slice` items. */
export async function mapInSlices<T, U>(
  items: readonly T[],
  fn: (item: T, index: number) => U,
  slice: number = SLICE_ITEMS,
): Promise<U[]> {
  const out = new Array<U>(items.length);
  for (let i = 0; i < items.length; i++) {
    if (i > 0 && i % slice === 0) await yieldToEventLoop();
    out[i] = fn(items[i]!, i);
  }
  return out;
}

/**
 * Drives a computation written as a generator that yields between its slices (e.g. reconciliation/matcher.ts,
 * matchSteps), turning the event loop at each yield; answers what the generator returns.
 */
export async function runInSlices<R>(steps: Generator<void, R, void>): Promise<R> {
  for (;;) {
    const next = steps.next();
    if (next.done) return next.value;
    await yieldToEventLoop();
  }
}

/** Drives the same generator in one stretch, for callers with nothing to serve meanwhile (and for tests). */
export function runAtOnce<R>(steps: Generator<void, R, void>): R {
  for (;;) {
    const next = steps.next();
    if (next.done) return next.value;
  }
}
