import pg from 'pg';
import { type Db, isRetryableTxError, type Queryable, type QueryResult, type TxOptions } from './db.ts';
import { createHeldConnection, type HeldConnection } from './held-connection.ts';
import { preparedName } from './prepared.ts';

// int8 and numeric as text: money is parsed to bigint by the code that reads it, never through a float.
pg.types.setTypeParser(pg.types.builtins.INT8, (v) => v);
pg.types.setTypeParser(pg.types.builtins.NUMERIC, (v) => v);

async function runOn<R>(
  client: pg.Pool | pg.PoolClient,
  sql: string,
  params: readonly unknown[] | undefined,
): Promise<QueryResult<R>> {
  const name = preparedName(sql);
  const values = params as unknown[] | undefined;
  const res = await (name === undefined ? client.query(sql, values) : client.query({ name, text: sql, values }));
  return { rows: res.rows as R[], rowCount: res.rowCount ?? 0 };
}

function wrap(client: pg.Pool | pg.PoolClient): Queryable {
  return {
    query: <R>(sql: string, params?: readonly unknown[]) => runOn<R>(client, sql, params),
    async exec(sql: string): Promise<void> {
      await client.query(sql);
    },
  };
}

/** The smallest pool (DISPERSA_DB_POOL_MAX) that lends a batcher's lane a connection of its own. */
export const HOLDS_FROM = 4;

export function createPostgresDb(url: string, options: { max?: number } = {}): Db {
  const max = options.max ?? 32;
  const pool = new pg.Pool({ connectionString: url, max });
  // An idle client losing its connection must not crash the process; the pool replaces it.
  pool.on('error', () => {});
  const base = wrap(pool);
  const held = new Set<HeldConnection>();
  return {
    kind: 'postgres',
    query: base.query,
    exec: base.exec,
    // A pool this small keeps every connection for turns: one held for good would leave the rest of the service one.
    ...(max >= HOLDS_FROM
      ? {
          heldConnection(): Queryable {
            const connection = createHeldConnection(pool, runOn);
            held.add(connection);
            return { query: connection.query, exec: base.exec };
          },
        }
      : {}),
    async tx<T>(fn: (q: Queryable) => Promise<T>, opts: TxOptions = {}): Promise<T> {
      const retries = opts.retries ?? 5;
      for (let attempt = 0; ; attempt++) {
        const client = await pool.connect();
        // A connection cut between two statements of the transaction (database restarted, backend terminated)
        // emits 'error' on the checked-out client: without a listener that would crash the process. The next
        // statement fails instead, and the transaction with it; the connection is then dropped, not pooled.
        let lost = false;
        const onLost = () => {
          lost = true;
        };
        client.on('error', onLost);
        try {
          await client.query('BEGIN');
          const result = await fn(wrap(client));
          await client.query('COMMIT');
          return result;
        } catch (err) {
          await client.query('ROLLBACK').catch(() => {});
          if (attempt < retries && isRetryableTxError(err)) continue;
          throw err;
        } finally {
          client.off('error', onLost);
          client.release(lost);
        }
      }
    },
    async close() {
      for (const connection of held) connection.release();
      await pool.end();
    },
    poolStats: () => ({ total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount, max }),
  };
}
