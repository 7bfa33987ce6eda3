/**
 * Resolves after the event loop has turned once: timers, socket reads and setImmediate callbacks queued before
 * it run first. On the embedded database a statement runs in this thread and its promise settles without any
 * I/O, so code that chains statements never lets the process read a socket until it awaits this (or real I/O).
 */
export function yieldToEventLoop(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
