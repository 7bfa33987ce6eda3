import type pg from 'pg';
import type { Queryable, QueryResult } from './db.ts';

/**
 * A connection one batcher's lane keeps between its statements (PostgreSQL), so that each statement is written to
 * the database as soon as the lane calls it. Through the pool it is not: pg's pool hands an idle connection over on
 * a later tick (process.nextTick), after every continuation the previous statement's answer released, the responses
 * of its whole batch, and the lane's next statement left a quarter of a millisecond late, a tenth of the payment
 * step (docs/performance-log.md, "Thirty-seventh session").
 *
 * The connection is taken from the pool on first use (that statement goes through the pool) and kept. A statement
 * that finds it busy, or not yet held, goes through the pool as before, so that callers never queue on it; a
 * connection that is lost (database restarted, backend terminated) is dropped, and the next statement holds another.
 */

export interface HeldConnection {
  /** A statement on the held connection when it is idle, otherwise through the pool. */
  query: Queryable['query'];
  /** Gives the connection back to the pool (the database is closing). */
  release(): void;
}

export function createHeldConnection(
  pool: pg.Pool,
  /** Runs a statement on a connection, or through the pool (postgres.ts). */
  run: (
    on: pg.Pool | pg.PoolClient,
    sql: string,
    params: readonly unknown[] | undefined,
  ) => Promise<QueryResult<unknown>>,
): HeldConnection {
  let client: pg.PoolClient | undefined;
  let taking = false;
  let busy = false;
  let lost = false;
  let released = false;

  const onLost = (): void => {
    lost = true;
    if (!busy) letGo();
  };

  /** Back to the pool; a lost connection is closed instead of pooled (released with an error). */
  function letGo(): void {
    const c = client;
    if (c === undefined) return;
    client = undefined;
    c.off('error', onLost);
    c.off('end', onLost);
    c.release(lost ? true : undefined);
    lost = false;
  }

  function take(): void {
    taking = true;
    pool.connect().then(
      (c) => {
        taking = false;
        if (released) {
          c.release();
          return;
        }
        c.on('error', onLost);
        c.on('end', onLost);
        client = c;
      },
      () => {
        // The pool could not connect: statements keep going through it, and the next one tries again.
        taking = false;
      },
    );
  }

  return {
    async query<R>(sql: string, params?: readonly unknown[]): Promise<QueryResult<R>> {
      const c = client;
      if (c === undefined || busy) {
        if (c === undefined && !taking && !released) take();
        return (await run(pool, sql, params)) as QueryResult<R>;
      }
      busy = true;
      try {
        return (await run(c, sql, params)) as QueryResult<R>;
      } finally {
        busy = false;
        if (lost || released) letGo();
      }
    },
    release() {
      released = true;
      if (!busy) letGo();
    },
  };
}
