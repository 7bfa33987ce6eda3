import { PGlite, types } from '@electric-sql/pglite';
import type { Db, Queryable, QueryResult } from './db.ts';
import { createDatabaseApart, holdsDatabase } from './embedded-create.ts';
import { createPreparedRunner } from './embedded-prepared.ts';

/**
 * Embedded PostgreSQL (PGlite, WASM) persisted in a directory, or in memory when dir is null.
 * PGlite runs one statement at a time; its transaction() holds that lock for the whole transaction, so
 * transactions are serial and never conflict. It does not fsync: a killed process loses nothing, an OS
 * crash can lose acknowledged writes; hence production refuses it unless explicitly allowed.
 */
export type EmbeddedDb = Db & { dump(): Promise<Blob> };

export async function createEmbeddedDb(dir: string | null, options: { loadDataDir?: Blob } = {}): Promise<EmbeddedDb> {
  const parsers = {
    [types.INT8]: (v: string) => v,
    [types.NUMERIC]: (v: string) => v,
  };
  const opts = { parsers, ...(options.loadDataDir ? { loadDataDir: options.loadDataDir } : {}) };
  if (dir !== null && options.loadDataDir === undefined && !holdsDatabase(dir)) await createDatabaseApart(dir);
  const pglite = dir === null ? new PGlite(opts) : new PGlite(dir, opts);
  await pglite.waitReady;
  // A WAL segment the engine starts is otherwise first filled with 16 MB of zeros, in the thread that serves
  // requests: under payment load a new segment every second or two, each a 45-60 ms pause of the whole service.
  // Unwritten space reads back as zeros all the same, so recovery ends at the same place (PostgreSQL's own
  // setting for file systems that gain nothing from the fill).
  await pglite.exec('SET wal_init_zero = off');

  const prepared = createPreparedRunner(pglite);
  const wrap = (q: Pick<PGlite, 'query' | 'exec'>): Queryable => ({
    async query<R>(sql: string, params?: readonly unknown[]): Promise<QueryResult<R>> {
      // Declared statements outside a transaction take one pass into the backend (embedded-prepared.ts); inside
      // one, PGlite's transaction object is the only way in.
      const res =
        (q === pglite ? await prepared.run(sql, params) : undefined) ??
        (await q.query<R>(sql, params as unknown[] | undefined));
      // PGlite reports affectedRows 0 for a SELECT; PostgreSQL's rowCount counts the rows returned.
      return { rows: res.rows as R[], rowCount: Math.max(res.affectedRows ?? 0, res.rows.length) };
    },
    async exec(sql: string): Promise<void> {
      await q.exec(sql);
    },
  });
  const base = wrap(pglite);
  return {
    kind: 'embedded',
    query: base.query,
    exec: base.exec,
    async tx<T>(fn: (q: Queryable) => Promise<T>): Promise<T> {
      return pglite.transaction((tx) => fn(wrap(tx)));
    },
    async close() {
      if (!pglite.closed) await pglite.close();
    },
    /** A snapshot of the whole database (tests start new databases from a migrated one). */
    dump: () => pglite.dumpDataDir('none'),
  };
}
