/**
 * Crash points for the crash tests: DISPERSA_FAILPOINTS=name[,name...] kills the process (SIGKILL, as an OOM
 * killer or a pulled plug would) the first time the money path reaches a named point. Read once at start;
 * refused by the configuration in production (config.ts), so a stray variable can never kill a real deployment.
 *
 * Points: payments.after-reserve (the batch's payments and holds committed, nothing sent), payments.after-submit
 * (the rail has the batch, nothing booked), payments.after-book (booked, no answer sent).
 */
export const FAILPOINTS = ['payments.after-reserve', 'payments.after-submit', 'payments.after-book'] as const;
export type Failpoint = (typeof FAILPOINTS)[number];

let armed: ReadonlySet<string> = new Set();

export function armFailpoints(names: readonly string[]): void {
  armed = new Set(names);
}

export function failpoint(name: Failpoint): void {
  if (armed.has(name)) process.kill(process.pid, 'SIGKILL');
}
