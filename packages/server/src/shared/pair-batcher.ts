import { type BatchResult, createBatcher, laneIndex, timedRun } from './batcher.ts';
import { afterTurns } from './event-loop.ts';

/**
 * A batcher with two kinds of item that share one round trip: a lane runs one batch at a time, made of whatever of
 * either kind arrived while the previous batch was in flight (up to maxBatch of each). Under light load a batch is
 * a single item of one kind; under load the fixed cost of the call and its commit is shared by both kinds instead
 * of paid once for each. As with createBatcher, items with the same lane key always share a lane.
 */

export interface PairBatcherOptions<A, RA, B, RB> {
  lanes: number;
  maxBatch: number;
  /**
   * false: each kind has batches of its own, run(a, []) and run([], b), each kind's lane independent of the other's
   * (where one call for both costs more than it saves: payments/pipeline.ts says when).
   */
  joint: boolean;
  /**
   * Runs one batch (at least one item of either kind); answers one result per item, in order, for each kind. A
   * throw fails every item of the batch, of both kinds.
   */
  run(a: A[], b: B[]): Promise<{ a: BatchResult<RA>[]; b: BatchResult<RB>[] }>;
  /** Told how long each batch ran, whatever its outcome (as createBatcher's). */
  onRun?: (seconds: number) => void;
  /** As createBatcher's: turns of the event loop an idle lane lets pass before its first batch. */
  startTurns?: number;
}

export interface PairBatcher<A, RA, B, RB> {
  /** Lanes side by side, each running one batch at a time: twice `lanes` when each kind has batches of its own. */
  readonly lanes: number;
  addA(item: A, laneKey: string): Promise<RA>;
  addB(item: B, laneKey: string): Promise<RB>;
  /** Resolves once every lane is idle (used when shutting down). */
  drained(): Promise<void>;
}

interface Waiting<I, O> {
  item: I;
  resolve(value: O): void;
  reject(err: unknown): void;
}

interface Lane<A, RA, B, RB> {
  a: Waiting<A, RA>[];
  b: Waiting<B, RB>[];
  running: boolean;
}

export function createPairBatcher<A, RA, B, RB>(options: PairBatcherOptions<A, RA, B, RB>): PairBatcher<A, RA, B, RB> {
  return options.joint ? jointBatcher(options) : separateBatchers(options);
}

function separateBatchers<A, RA, B, RB>(options: PairBatcherOptions<A, RA, B, RB>): PairBatcher<A, RA, B, RB> {
  const { lanes, maxBatch, onRun, startTurns } = options;
  const a = createBatcher<A, RA>({
    lanes,
    maxBatch,
    onRun,
    startTurns,
    run: async (items) => (await options.run(items, [])).a,
  });
  const b = createBatcher<B, RB>({
    lanes,
    maxBatch,
    onRun,
    startTurns,
    run: async (items) => (await options.run([], items)).b,
  });
  return {
    lanes: a.lanes + b.lanes,
    addA: a.add,
    addB: b.add,
    async drained() {
      await a.drained();
      await b.drained();
    },
  };
}

function jointBatcher<A, RA, B, RB>(options: PairBatcherOptions<A, RA, B, RB>): PairBatcher<A, RA, B, RB> {
  const lanes: Lane<A, RA, B, RB>[] = Array.from({ length: Math.max(1, options.lanes) }, () => ({
    a: [],
    b: [],
    running: false,
  }));
  const idleWaiters: (() => void)[] = [];
  const run = timedRun(options.run, options.onRun);

  async function drive(lane: Lane<A, RA, B, RB>): Promise<void> {
    while (lane.a.length > 0 || lane.b.length > 0) {
      const a = lane.a.splice(0, options.maxBatch);
      const b = lane.b.splice(0, options.maxBatch);
      let results: { a: BatchResult<RA>[]; b: BatchResult<RB>[] };
      try {
        results = await run(
          a.map((w) => w.item),
          b.map((w) => w.item),
        );
        if (results.a.length !== a.length || results.b.length !== b.length) {
          throw new Error(`batch of ${a.length} + ${b.length} answered ${results.a.length} + ${results.b.length}`);
        }
      } catch (err) {
        for (const w of a) w.reject(err);
        for (const w of b) w.reject(err);
        continue;
      }
      settle(a, results.a);
      settle(b, results.b);
    }
    lane.running = false;
    if (lanes.every((l) => !l.running)) for (const wake of idleWaiters.splice(0)) wake();
  }

  function enqueue<I, O>(laneKey: string, pick: (lane: Lane<A, RA, B, RB>) => Waiting<I, O>[], item: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      const lane = lanes[laneIndex(laneKey, lanes.length)]!;
      pick(lane).push({ item, resolve, reject });
      if (!lane.running) {
        lane.running = true;
        // As createBatcher: an idle lane starts after the current turn of the event loop (or startTurns of them), so
        // the requests parsed meanwhile share the first batch.
        afterTurns(options.startTurns ?? 1, () => void drive(lane));
      }
    });
  }

  return {
    lanes: lanes.length,
    addA: (item, laneKey) => enqueue(laneKey, (l) => l.a, item),
    addB: (item, laneKey) => enqueue(laneKey, (l) => l.b, item),
    drained() {
      if (lanes.every((l) => !l.running)) return Promise.resolve();
      return new Promise((resolve) => idleWaiters.push(resolve));
    },
  };
}

function settle<I, O>(waiting: Waiting<I, O>[], results: BatchResult<O>[]): void {
  waiting.forEach((w, i) => {
    const r = results[i]!;
    if (r.ok) w.resolve(r.value);
    else w.reject(r.error);
  });
}
