/**
 * The order in which requests on one API key take their nonces (interface spec, Nonce).
 *
 * The service keeps one mark per key: a write (POST, PUT, PATCH, DELETE) needs a nonce above it, a read (GET) one
 * not yet seen among the 64 numbers below it. So two writes in flight at once race: if the one with the higher
 * nonce is judged first, the other is a replay (401 nonce replay), and so is a write overtaken by a read that took
 * its nonce later. A lane per key prevents both, in the process that signs:
 *
 * - a write waits for the key's previous write to be answered, and while a write is in flight no other request on
 *   the key takes a nonce: whatever is judged after the write carries a higher number;
 * - reads run side by side, but a request takes a nonce only while the oldest one still in flight is fewer than
 *   `window` numbers behind, so a slow read is never pushed out of the 64-number window by the reads after it;
 * - waiting requests start in the order they asked (a read behind a waiting write waits too), so writes are never
 *   starved by a stream of reads.
 *
 * Requests that were already in flight when a write took its nonce carry lower numbers; they are judged as reads
 * within the window (the write raised the mark by one) and are unaffected. Other processes that sign with the same
 * key are outside the lane: they share a file nonce generator, whose `exclusive` extends the rule to them.
 */

export type LaneKind = 'read' | 'write';

export interface LaneTicket {
  release(): void;
}

export interface KeyLane {
  /** Resolves when a request of this kind may take its nonce; call release() once its answer (or failure) is in. */
  acquire(kind: LaneKind): Promise<LaneTicket>;
}

/** Widest spread of nonces in flight at once, below the service's 64 so that the oldest is always accepted. */
export const LANE_WINDOW = 60;

interface Waiter {
  kind: LaneKind;
  start: () => void;
}

export function createKeyLane(window = LANE_WINDOW): KeyLane {
  let issued = 0;
  let writing = false;
  const inFlight = new Set<number>();
  const waiting: Waiter[] = [];

  function oldest(): number | undefined {
    let min: number | undefined;
    for (const n of inFlight) if (min === undefined || n < min) min = n;
    return min;
  }

  function canStart(): boolean {
    if (writing) return false;
    const first = oldest();
    return first === undefined || issued - first < window;
  }

  function start(kind: LaneKind): LaneTicket {
    const n = issued++;
    inFlight.add(n);
    if (kind === 'write') writing = true;
    let released = false;
    return {
      release() {
        if (released) return;
        released = true;
        inFlight.delete(n);
        if (kind === 'write') writing = false;
        pump();
      },
    };
  }

  function pump(): void {
    while (waiting.length > 0 && canStart()) {
      const next = waiting.shift()!;
      next.start();
      // A write blocks everything behind it until it is answered.
      if (next.kind === 'write') return;
    }
  }

  return {
    acquire(kind) {
      if (waiting.length === 0 && canStart()) return Promise.resolve(start(kind));
      return new Promise<LaneTicket>((resolve) => {
        waiting.push({ kind, start: () => resolve(start(kind)) });
      });
    },
  };
}

const lanesByKey = new Map<string, KeyLane>();

/** One lane per API key for the whole process, so that every client built with the key shares it. */
export function sharedKeyLane(apiKey: string): KeyLane {
  let lane = lanesByKey.get(apiKey);
  if (!lane) {
    lane = createKeyLane();
    lanesByKey.set(apiKey, lane);
  }
  return lane;
}
