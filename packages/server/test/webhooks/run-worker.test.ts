import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { runWorker, sleep, type WorkerLogger } from '../../src/shared/run-worker.ts';

// Lives beside the webhook tests because this helper's only owner so far is the delivery worker.

function memoryLogger(): WorkerLogger & { lines: Array<{ level: string; obj: object; msg?: string }> } {
  const lines: Array<{ level: string; obj: object; msg?: string }> = [];
  return {
    lines,
    info: (obj, msg) => void lines.push({ level: 'info', obj, msg }),
    error: (obj, msg) => void lines.push({ level: 'error', obj, msg }),
  };
}

describe('runWorker', () => {
  it('loops without pausing while work is found, then sleeps idleMs between empty polls', async () => {
    const controller = new AbortController();
    const calls: number[] = [];
    let work = 5;
    const started = Date.now();
    const done = runWorker(
      'test',
      async () => {
        calls.push(Date.now() - started);
        if (work > 0) return `job-${work--}`;
        if (calls.length >= 8) controller.abort();
        return undefined;
      },
      { idleMs: 100, signal: controller.signal, logger: memoryLogger() },
    );
    await done;
    expect(calls).toHaveLength(8);
    // The five jobs and the first empty poll ran back to back; the next two waited an idle period each.
    expect(calls[5]!).toBeLessThan(90);
    expect(calls[6]! - calls[5]!).toBeGreaterThanOrEqual(90);
    expect(calls[7]! - calls[6]!).toBeGreaterThanOrEqual(90);
  });

  it('lets the event loop turn between steps that found work, even when each step settles without I/O', async () => {
    // Steps that resolve at once, as the embedded database's statements do: without a turn of the event loop
    // between them, the callback below (a stand-in for a socket read) would wait for the last of the 200.
    const controller = new AbortController();
    let steps = 0;
    let stepsBeforeTurn: number | undefined;
    setImmediate(() => {
      stepsBeforeTurn = steps;
    });
    await runWorker(
      'busy',
      () => {
        steps++;
        if (steps === 200) controller.abort();
        return Promise.resolve(`job-${steps}`);
      },
      { idleMs: 60_000, signal: controller.signal, logger: memoryLogger() },
    );
    expect(steps).toBe(200);
    expect(stepsBeforeTurn).toBeDefined();
    expect(stepsBeforeTurn!).toBeLessThanOrEqual(1);
  });

  it('stops promptly on abort even in the middle of a long idle sleep, after the step in flight', async () => {
    const controller = new AbortController();
    let inFlight = false;
    let finishedSteps = 0;
    const done = runWorker(
      'test',
      async () => {
        inFlight = true;
        await new Promise((r) => setTimeout(r, 20));
        inFlight = false;
        finishedSteps++;
        return undefined;
      },
      { idleMs: 60_000, signal: controller.signal, logger: memoryLogger() },
    );
    await new Promise((r) => setTimeout(r, 50));
    const started = Date.now();
    controller.abort();
    await done;
    // Far below the 60 s idle sleep it was in, with room for a loaded machine.
    expect(Date.now() - started).toBeLessThan(5000);
    expect(inFlight).toBe(false);
    expect(finishedSteps).toBe(1);
  });

  it('logs a thrown error, backs off with growing pauses, and resets after a success', async () => {
    const controller = new AbortController();
    const logger = memoryLogger();
    // The pauses are recorded, not timed: what the loop asked to wait is exact whatever the machine's load.
    const timeline: string[] = [];
    let n = 0;
    await runWorker(
      'flaky',
      async () => {
        n++;
        timeline.push(`step ${n}`);
        if (n <= 3) throw new Error(`boom ${n}`);
        if (n === 4) return 'ok';
        controller.abort();
        return undefined;
      },
      {
        idleMs: 20,
        signal: controller.signal,
        logger,
        maxErrorBackoffMs: 10_000,
        sleep: async (ms) => {
          timeline.push(`pause ${ms}`);
        },
      },
    );
    const errors = logger.lines.filter((l) => l.level === 'error');
    expect(errors).toHaveLength(3);
    expect(errors.map((e) => (e.obj as { pauseMs: number }).pauseMs)).toEqual([100, 200, 400]);
    expect((errors[0]!.obj as { err: Error; worker: string }).err.message).toBe('boom 1');
    expect((errors[0]!.obj as { worker: string }).worker).toBe('flaky');
    // Growing pauses after each error; after the success the next step follows at once; idle once there is no work.
    expect(timeline).toEqual([
      'step 1',
      'pause 100',
      'step 2',
      'pause 200',
      'step 3',
      'pause 400',
      'step 4',
      'step 5',
      'pause 20',
    ]);
  });

  /**
   * A loop over steps that "take" the listed milliseconds on a clock they move, then an empty poll; the rests are
   * recorded, not timed. restWhile is asked with the number of steps done.
   */
  async function pacedTimeline(
    durations: number[],
    options: { busyShare: number; restWhile?: (stepsDone: number) => boolean },
  ): Promise<string[]> {
    const controller = new AbortController();
    let clock = 0;
    const timeline: string[] = [];
    let n = 0;
    const restWhile = options.restWhile;
    await runWorker(
      'paced',
      async () => {
        const d = durations[n];
        if (d === undefined) {
          controller.abort();
          return undefined;
        }
        n++;
        clock += d;
        timeline.push(`step ${d}`);
        return `job-${n}`;
      },
      {
        idleMs: 1000,
        signal: controller.signal,
        logger: memoryLogger(),
        busyShare: options.busyShare,
        ...(restWhile === undefined ? {} : { restWhile: () => restWhile(n) }),
        now: () => clock,
        sleep: async (ms) => {
          timeline.push(`pause ${ms}`);
        },
      },
    );
    return timeline;
  }

  it('with a busy share, rests after each step that found work in proportion to how long it took', async () => {
    // At a fifth of the wall time: four times each step's duration at rest; the empty poll still idles.
    expect(await pacedTimeline([40, 10, 30], { busyShare: 0.2 })).toEqual([
      'step 40',
      'pause 160',
      'step 10',
      'pause 40',
      'step 30',
      'pause 120',
      'pause 1000',
    ]);
  });

  it('with restWhile, rests only after the steps where restWhile says someone is waiting', async () => {
    // After step 2 nobody is waiting: step 3 follows at once (a turn of the event loop, not a rest).
    const timeline = await pacedTimeline([10, 20, 30], { busyShare: 0.5, restWhile: (done) => done !== 2 });
    expect(timeline).toEqual(['step 10', 'pause 10', 'step 20', 'step 30', 'pause 30', 'pause 1000']);
  });

  it('tells each step whether someone is waiting: what restWhile answers, and yes without it', async () => {
    for (const [restWhile, expected] of [
      [undefined, [true, true, true]],
      [(done: number) => done !== 1, [true, false, true]],
    ] as const) {
      const controller = new AbortController();
      const seen: boolean[] = [];
      await runWorker(
        'told',
        async (step) => {
          seen.push(step.serving);
          if (seen.length === 3) controller.abort();
          return `job-${seen.length}`;
        },
        {
          idleMs: 1000,
          signal: controller.signal,
          logger: memoryLogger(),
          ...(restWhile === undefined ? {} : { restWhile: () => restWhile(seen.length) }),
          sleep: async () => {},
        },
      );
      expect(seen).toEqual(expected);
    }
  });

  it('refuses a busy share outside (0, 1]', async () => {
    const options = { idleMs: 10, signal: new AbortController().signal, logger: memoryLogger() };
    for (const busyShare of [0, -0.5, 1.5, Number.NaN]) {
      await expect(runWorker('bad', async () => undefined, { ...options, busyShare })).rejects.toThrow(/busyShare/);
    }
  });

  it('caps the error pause', async () => {
    const controller = new AbortController();
    const logger = memoryLogger();
    let n = 0;
    await runWorker(
      'down',
      async () => {
        if (++n === 4) controller.abort();
        throw new Error('database down');
      },
      { idleMs: 10, signal: controller.signal, logger, maxErrorBackoffMs: 150 },
    );
    const pauses = logger.lines.filter((l) => l.level === 'error').map((l) => (l.obj as { pauseMs: number }).pauseMs);
    expect(pauses).toEqual([100, 150, 150, 150]);
  });

  it('does not start when already aborted, and accepts a pino logger', async () => {
    const controller = new AbortController();
    controller.abort();
    let calls = 0;
    const logger: WorkerLogger = pino({ level: 'silent' });
    await runWorker(
      'never',
      async () => {
        calls++;
        return undefined;
      },
      { idleMs: 10, signal: controller.signal, logger },
    );
    expect(calls).toBe(0);
  });

  it('sleep resolves on time, or at once on abort', async () => {
    const controller = new AbortController();
    let t = Date.now();
    await sleep(50, controller.signal);
    expect(Date.now() - t).toBeGreaterThanOrEqual(45);
    t = Date.now();
    setTimeout(() => controller.abort(), 20);
    await sleep(10_000, controller.signal);
    expect(Date.now() - t).toBeLessThan(5000);
  });
});
