import { yieldToEventLoop } from './event-loop.ts';

/**
 * The one loop every background concern runs in (style example 5): call processNext while it finds work,
 * sleep idleMs when it finds none, stop when the signal aborts. A thrown error is logged and followed by a
 * growing pause, so a database outage does not become a hot loop; the next success resets the pause.
 *
 * Between two steps that found work the loop lets the event loop turn once (yieldToEventLoop): on the embedded
 * database a loop that keeps finding work would otherwise chain step after step and read no socket until it ran
 * dry (under payment load, one reconciliation pass through a backlog of statement lines held every request for
 * 250-480 ms).
 */

/** What the loop tells each step. */
export interface WorkerStep {
  /**
   * Someone is waiting for this process (restWhile answers true; with no restWhile, always): a step should hold
   * the thread and the database briefly, at the cost of its own speed (reconciliation/ingest.ts, batchLinesFor).
   */
  serving: boolean;
}

/** The part of a pino logger the loop uses. */
export interface WorkerLogger {
  info(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

export interface RunWorkerOptions {
  idleMs: number;
  signal: AbortSignal;
  logger: WorkerLogger;
  /** Ceiling of the pause after consecutive errors. Default 30 s. */
  maxErrorBackoffMs?: number;
  /** How the loop waits; default the real `sleep` below. Tests record the pauses instead of timing them. */
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
  /**
   * The most of the wall time the loop takes while it keeps finding work, in (0, 1]; default 1 (steps back to
   * back, one turn of the event loop between them). Below 1, after a step that found work the loop rests in
   * proportion to how long the step took: a step of 30 ms at 0.25 rests 90 ms. For a worker whose steps hold the
   * embedded database, where every request waits for them: its backlog is then spread over time instead of
   * met by each request several times over, and it still runs at that share of its full speed.
   */
  busyShare?: number;
  /**
   * With busyShare, the loop rests only while this answers true (default: always): whether anyone is waiting that
   * a rest would let through. An idle service reads its backlog at full speed.
   */
  restWhile?: () => boolean;
  /** Reads the time for busyShare; default performance.now. */
  now?: () => number;
}

/** Resolves after ms, or at once when the signal aborts. The timer never keeps the process alive. */
export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    timer.unref();
    signal.addEventListener('abort', done, { once: true });
  });
}

/** Resolves once the signal has aborted and the processNext in flight (if any) has finished. */
export async function runWorker(
  name: string,
  processNext: (step: WorkerStep) => Promise<string | undefined>,
  options: RunWorkerOptions,
): Promise<void> {
  const { idleMs, signal, logger } = options;
  const maxErrorBackoffMs = options.maxErrorBackoffMs ?? 30_000;
  const pause = options.sleep ?? sleep;
  const now = options.now ?? (() => performance.now());
  const restPerBusy = restPerBusyOf(options.busyShare ?? 1);
  // Asked before each step (what the step is told) and after it (whether to rest): someone may arrive meanwhile.
  const serving = (): boolean => options.restWhile?.() ?? true;
  let consecutiveErrors = 0;
  logger.info({ worker: name }, 'worker started');
  while (!signal.aborted) {
    try {
      const started = now();
      const id = await processNext({ serving: serving() });
      consecutiveErrors = 0;
      if (id === undefined) await pause(idleMs, signal);
      else if (restPerBusy > 0 && serving()) await pause((now() - started) * restPerBusy, signal);
      else await yieldToEventLoop();
    } catch (err) {
      consecutiveErrors++;
      const pauseMs = Math.min(maxErrorBackoffMs, Math.max(idleMs, 100) * 2 ** Math.min(consecutiveErrors - 1, 20));
      logger.error({ worker: name, err, consecutiveErrors, pauseMs }, 'worker step failed');
      await pause(pauseMs, signal);
    }
  }
  logger.info({ worker: name }, 'worker stopped');
}

function restPerBusyOf(busyShare: number): number {
  if (!(busyShare > 0 && busyShare <= 1)) throw new Error(`busyShare must be in (0, 1], got ${busyShare}`);
  return (1 - busyShare) / busyShare;
}
