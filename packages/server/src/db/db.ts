/**
 * One SQL dialect (PostgreSQL) over two back-ends: a pg Pool when DATABASE_URL is set, otherwise the
 * embedded PGlite. Domain code sees only these interfaces, so both back-ends pass the same tests.
 *
 * Row values: int8 and numeric arrive as strings on both back-ends (money is converted to bigint by the
 * repository that reads it), timestamptz as Date.
 */
export interface QueryResult<R> {
  rows: R[];
  rowCount: number;
}

export interface Queryable {
  query<R = Record<string, unknown>>(sql: string, params?: readonly unknown[]): Promise<QueryResult<R>>;
  /** Runs a script of several statements with no parameters (migrations). */
  exec(sql: string): Promise<void>;
}

export interface TxOptions {
  /** Retries on serialization failure or deadlock (PostgreSQL 40001, 40P01). Default 5. */
  retries?: number;
}

export interface Db extends Queryable {
  readonly kind: 'postgres' | 'embedded';
  /** Runs fn in one transaction: committed when fn resolves, rolled back when it throws. */
  tx<T>(fn: (q: Queryable) => Promise<T>, options?: TxOptions): Promise<T>;
  close(): Promise<void>;
  /**
   * A connection for one batcher's lane (PostgreSQL, held-connection.ts): its statements are written at once, not a
   * tick later through the pool. Absent on the embedded database, whose one connection has no such turn, and on a
   * PostgreSQL pool of fewer than four connections.
   */
  heldConnection?(): Queryable;
  /** Connection pool use (PostgreSQL); absent on the embedded database, which has one connection. */
  poolStats?(): PoolStats;
}

export interface PoolStats {
  /** Connections open, idle among them, requests waiting for one, and the ceiling. */
  total: number;
  idle: number;
  waiting: number;
  max: number;
}

export function isRetryableTxError(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return code === '40001' || code === '40P01';
}

/**
 * One statement as its own transaction (no BEGIN/COMMIT round trips), retried on serialization failure or deadlock
 * as tx is: a statement that failed left nothing behind, so running it again is safe.
 */
export async function statementRetrying<R>(
  db: Queryable,
  sql: string,
  params: readonly unknown[],
  retries = 5,
): Promise<QueryResult<R>> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await db.query<R>(sql, params);
    } catch (err) {
      if (attempt < retries && isRetryableTxError(err)) continue;
      throw err;
    }
  }
}

export function isUniqueViolation(err: unknown, constraint?: string): boolean {
  const e = err as { code?: unknown; constraint?: unknown } | null;
  if (e?.code !== '23505') return false;
  return constraint === undefined || e.constraint === constraint;
}
