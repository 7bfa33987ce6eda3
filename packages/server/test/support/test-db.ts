import { randomBytes } from 'node:crypto';
import pg from 'pg';
import type { Db } from '../../src/db/db.ts';
import { createEmbeddedDb } from '../../src/db/embedded.ts';
import { migrate } from '../../src/db/migrate.ts';
import { createPostgresDb } from '../../src/db/postgres.ts';

/**
 * A fresh, migrated database per caller: embedded PGlite in memory by default, or (with DATABASE_URL) a
 * uniquely named PostgreSQL database on that server, dropped again on close.
 */
export interface TestDb {
  db: Db;
  /** Set on PostgreSQL: the URL of this test's own database (for a second process or pool). */
  url: string | null;
  close(): Promise<void>;
}

export const usingPostgres = (): boolean => Boolean(process.env['DATABASE_URL']);

export async function createTestDatabaseUrl(): Promise<{ url: string; drop: () => Promise<void> }> {
  const base = process.env['DATABASE_URL']!;
  const name = `dispersa_t_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: base });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(base);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const c = new pg.Client({ connectionString: base });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
    },
  };
}

// Starting PGlite from a snapshot of a migrated database skips initdb and the migrations: several times faster.
let template: Promise<Blob> | null = null;

async function migratedTemplate(): Promise<Blob> {
  template ??= (async () => {
    const db = await createEmbeddedDb(null);
    await migrate(db);
    const dump = await db.dump();
    await db.close();
    return dump;
  })();
  return template;
}

export async function createTestDb(options: { migrated?: boolean } = {}): Promise<TestDb> {
  if (!usingPostgres()) {
    const db =
      options.migrated === false
        ? await createEmbeddedDb(null)
        : await createEmbeddedDb(null, { loadDataDir: await migratedTemplate() });
    return { db, url: null, close: () => db.close() };
  }
  const { url, drop } = await createTestDatabaseUrl();
  const db = createPostgresDb(url);
  if (options.migrated !== false) await migrate(db);
  return {
    db,
    url,
    async close() {
      await db.close();
      await drop();
    },
  };
}

/** The same database with its query() wrapped (fault injection, observation); everything else goes to inner. */
export function withQuery(inner: Db, query: Db['query']): Db {
  return {
    kind: inner.kind,
    query,
    exec: (sql) => inner.exec(sql),
    close: () => inner.close(),
    tx: (fn, options) => inner.tx(fn, options),
    ...(inner.poolStats ? { poolStats: () => inner.poolStats!() } : {}),
  };
}
