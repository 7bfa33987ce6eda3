import { randomBytes } from 'node:crypto';
import pg from 'pg';
import type { Db } from '../../src/db/db.ts';
import { createEmbeddedDb } from '../../src/db/embedded.ts';
import { migrate } from '../../src/db/migrate.ts';
import { createPostgresDb } from '../../src/db/postgres.ts';
import { randomId } from '../../src/shared/ids.ts';

/**
 * A migrated database for one test file: PGlite in memory, or with DATABASE_URL a uniquely named
 * PostgreSQL database on that server (dropped on close), so concurrency tests really race there.
 */
export interface FxTestDb {
  db: Db;
  kind: 'embedded' | 'postgres';
  close(): Promise<void>;
}

export async function openFxTestDb(label: string): Promise<FxTestDb> {
  const baseUrl = process.env['DATABASE_URL'];
  if (!baseUrl) {
    const db = await createEmbeddedDb(null);
    await migrate(db);
    return { db, kind: 'embedded', close: () => db.close() };
  }
  const name = `fx_${label}_${randomBytes(5).toString('hex')}`;
  const admin = async (sql: string): Promise<void> => {
    const client = new pg.Client({ connectionString: baseUrl });
    await client.connect();
    try {
      await client.query(sql);
    } finally {
      await client.end();
    }
  };
  await admin(`CREATE DATABASE ${name}`);
  const url = new URL(baseUrl);
  url.pathname = `/${name}`;
  const db = createPostgresDb(url.toString(), { max: 20 });
  try {
    await migrate(db);
  } catch (err) {
    await db.close();
    await admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    throw err;
  }
  return {
    db,
    kind: 'postgres',
    async close() {
      await db.close();
      await admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    },
  };
}

export async function insertClient(db: Db, currency: string): Promise<{ id: string; currency: string }> {
  const id = randomId('client');
  await db.query('INSERT INTO clients (id, name, currency) VALUES ($1, $2, $3)', [id, `test ${currency}`, currency]);
  return { id, currency };
}

/** Rows in a table (by count(*): rowCount of a SELECT is not reliable on the embedded back-end). */
export async function countRows(db: Db, table: 'rates' | 'quotes'): Promise<number> {
  const { rows } = await db.query<{ n: string }>(`SELECT count(*) AS n FROM ${table}`);
  return Number(rows[0]!.n);
}
