import { afterTurns } from './event-loop.ts';

/**
 * Group commit in the application. Callers add items one at a time; a lane runs one batch at a time, and
 * whatever arrived while its batch was in flight (up to maxBatch) becomes the next batch. Under light load a batch
 * is a single item, so latency stays that of one call; under load the fixed cost of a round trip and a commit is
 * shared by the whole batch. Items with the same lane key always share a lane, which keeps the hot rows of one
 * client (its balance) in one lane instead of contended between lanes.
 */

export interface BatcherOptions<I, O> {
  lanes: number;
  maxBatch: number;
  /** Runs one batch; answers one result per item, in order. A throw fails every item of the batch. */
  run(items: I[]): Promise<BatchResult<O>[]>;
  /** Told how long each batch ran, whatever its outcome: its lane's busy time (metrics). */
  onRun?: (seconds: number) => void;
  /** Turns of the event loop an idle lane lets pass before its first batch (event-loop.ts, afterTurns); 1 when not given. */
  startTurns?: number;
}

/** One item's result: its value, or the error its own caller receives (the other items are unaffected). */
export type BatchResult<O> = { ok: true; value: O } | { ok: false; error: unknown };

interface Waiting<I, O> {
  item: I;
  resolve(value: O): void;
  reject(err: unknown): void;
}

interface Lane<I, O> {
  queue: Waiting<I, O>[];
  running: boolean;
}

export interface Batcher<I, O> {
  /** Lanes side by side, each running one batch at a time. */
  readonly lanes: number;
  add(item: I, laneKey: string): Promise<O>;
  /** Resolves once every lane is idle (used when shutting down). */
  drained(): Promise<void>;
}

/**
 * run, telling onRun how long each call took whatever its outcome (a lane's busy time): one wrapper for every batcher's
 * loop, so none of them times its batches itself.
 */
export function timedRun<A extends unknown[], R>(
  run: (...args: A) => Promise<R>,
  onRun: ((seconds: number) => void) | undefined,
): (...args: A) => Promise<R> {
  if (onRun === undefined) return run;
  return async (...args) => {
    const started = performance.now();
    try {
      return await run(...args);
    } finally {
      onRun((performance.now() - started) / 1000);
    }
  };
}

/** The lane of a key: the same key always the same lane. */
export function laneIndex(key: string, lanes: number): number {
  let h = 0;
  for (let i = 0; i < key.length; i++) h = (h * 31 + key.charCodeAt(i)) | 0;
  return Math.abs(h) % lanes;
}

export function createBatcher<I, O>(options: BatcherOptions<I, O>): Batcher<I, O> {
  const lanes: Lane<I, O>[] = Array.from({ length: Math.max(1, options.lanes) }, () => ({ queue: [], running: false }));
  const idleWaiters: (() => void)[] = [];

  const laneOf = (key: string): Lane<I, O> => lanes[laneIndex(key, lanes.length)]!;
  const run = timedRun(options.run, options.onRun);

  /** Runs a lane's batches until its queue is empty; add() marked it running when it scheduled this. */
  async function drive(lane: Lane<I, O>): Promise<void> {
    while (lane.queue.length > 0) {
      const batch = lane.queue.splice(0, options.maxBatch);
      let results: BatchResult<O>[];
      try {
        results = await run(batch.map((w) => w.item));
        if (results.length !== batch.length) throw new Error(`batch of ${batch.length} answered ${results.length}`);
      } catch (err) {
        for (const w of batch) w.reject(err);
        continue;
      }
      batch.forEach((w, i) => {
        const r = results[i]!;
        if (r.ok) w.resolve(r.value);
        else w.reject(r.error);
      });
    }
    lane.running = false;
    if (lanes.every((l) => !l.running)) for (const wake of idleWaiters.splice(0)) wake();
  }

  return {
    lanes: lanes.length,
    add(item, laneKey) {
      return new Promise<O>((resolve, reject) => {
        const lane = laneOf(laneKey);
        lane.queue.push({ item, resolve, reject });
        if (!lane.running) {
          lane.running = true;
          // An idle lane starts after the current turn of the event loop (or startTurns of them), so every request
          // that reached this point meanwhile (parsed from the same reads of the sockets) shares the first batch: on
          // the embedded database, whose statements hold the thread, the next batch would otherwise start with one.
          afterTurns(options.startTurns ?? 1, () => void drive(lane));
        }
      });
    },
    drained() {
      if (lanes.every((l) => !l.running)) return Promise.resolve();
      return new Promise((resolve) => idleWaiters.push(resolve));
    },
  };
}

/**
 * A batch's results from the answers found for some of its positions (index, value); a position left without one
 * fails with an error saying so. The error is made only for such a position: made for every item beforehand, as a
 * placeholder, its stack capture cost more than the rest of a nonce flush.
 */
export function resultsAt<O>(size: number, answers: Iterable<readonly [number, O]>, missing: string): BatchResult<O>[] {
  const results: (BatchResult<O> | undefined)[] = new Array(size);
  for (const [index, value] of answers) results[index] = { ok: true, value };
  return Array.from(results, (r) => r ?? { ok: false, error: new Error(missing) });
}
