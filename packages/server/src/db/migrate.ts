import { readdir, readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import type { Db } from './db.ts';

const MIGRATIONS_DIR = fileURLToPath(new URL('./migrations/', import.meta.url));
// Any fixed number: serialises concurrent starts of several processes on one PostgreSQL.
const MIGRATION_LOCK = 4_242_001;

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

export async function loadMigrations(dir = MIGRATIONS_DIR): Promise<Migration[]> {
  const files = (await readdir(dir)).filter((f) => /^\d{4}_[a-z0-9_]+\.sql$/.test(f)).sort();
  const out: Migration[] = [];
  for (const file of files) {
    const version = Number(file.slice(0, 4));
    if (out.some((m) => m.version === version)) throw new Error(`two migrations share version ${version}`);
    out.push({ version, name: file.replace(/\.sql$/, ''), sql: await readFile(dir + file, 'utf8') });
  }
  return out;
}

/** Forward-only: each pending migration in its own transaction, recorded in schema_migrations. */
export async function migrate(db: Db, migrations?: Migration[]): Promise<string[]> {
  const all = migrations ?? (await loadMigrations());
  const applied: string[] = [];
  await db.query(
    'CREATE TABLE IF NOT EXISTS schema_migrations (version int PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())',
  );
  await db.tx(async (q) => {
    await q.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK]);
    const { rows } = await q.query<{ version: number }>('SELECT version FROM schema_migrations');
    const done = new Set(rows.map((r) => Number(r.version)));
    const newest = Math.max(0, ...done);
    const known = Math.max(0, ...all.map((m) => m.version));
    if (newest > known) {
      throw new Error(`database schema is at version ${newest}, newer than this release knows (${known})`);
    }
    for (const m of all) {
      if (done.has(m.version)) continue;
      await q.exec(m.sql);
      await q.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [m.version, m.name]);
      applied.push(m.name);
    }
  });
  return applied;
}
