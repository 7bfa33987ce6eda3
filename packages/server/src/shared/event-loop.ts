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
