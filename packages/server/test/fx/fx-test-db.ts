import type { Db } from '../../src/db/db.ts';
import { randomId } from '../../src/shared/ids.ts';
import { createTestDb } from '../support/test-db.ts';

/**
 * A migrated database for one test file: PGlite in memory, or with DATABASE_URL a uniquely named
 * PostgreSQL database on that server (dropped on close), so concurrency tests really race there.
 */
export interface FxTestDb {
  db: Db;
  kind: 'embedded' | 'postgres';
  close(): Promise<void>;
}

export async function openFxTestDb(_label: string): Promise<FxTestDb> {
  const t = await createTestDb();
  return { db: t.db, kind: t.url === null ? 'embedded' : 'postgres', close: t.close };
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
