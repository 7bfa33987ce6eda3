import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import type { Db } from './db.ts';
import { createEmbeddedDb } from './embedded.ts';
import { migrate } from './migrate.ts';
import { createPostgresDb } from './postgres.ts';

/** Opens the configured database and brings its schema up to date. */
export async function openDatabase(options: { databaseUrl: string | null; dataDir: string | null }): Promise<Db> {
  let db: Db;
  if (options.databaseUrl !== null) {
    db = createPostgresDb(options.databaseUrl);
  } else if (options.dataDir !== null) {
    const dir = path.join(options.dataDir, 'db');
    await mkdir(dir, { recursive: true });
    db = await createEmbeddedDb(dir);
  } else {
    db = await createEmbeddedDb(null);
  }
  try {
    await migrate(db);
  } catch (err) {
    await db.close();
    throw err;
  }
  return db;
}
