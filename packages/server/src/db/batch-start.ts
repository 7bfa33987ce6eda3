import type { Db } from './db.ts';

/**
 * Turns of the event loop an idle batch lane lets pass before its first batch (shared/batcher.ts, startTurns).
 *
 * On PostgreSQL a batch's statement runs in another process: the lane awaits it while this thread reads the next
 * requests, so a lane starts after one turn. On the embedded database the statement holds this thread for a
 * millisecond or more: a batch started while the requests of a burst are still coming in (a few a turn) makes them
 * wait for it and then run as a batch of their own, and the fixed cost of a statement is paid again and again for a
 * few requests. Waiting a few turns first costs a quiet service a few microseconds a turn (each turn finds no
 * socket to read) and lets a busy one gather the burst. Under the bench (docs/performance-log.md, "Twentieth
 * session"), three pairs alternated with one turn: 15-17 % more signed reads a second, and 16 and 20 % more payments
 * in two pairs (the same in the third); 5 to 16 turns did about as well as each other, 3 less. On PostgreSQL three
 * turns made both fewer.
 */
const EMBEDDED_START_TURNS = 8;

export function batchStartTurns(db: Pick<Db, 'kind'>): number {
  return db.kind === 'embedded' ? EMBEDDED_START_TURNS : 1;
}
