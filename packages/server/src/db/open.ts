import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { DATA_DIR_MODE, DataDirLockedError, lockDataDir, secureDataDir } from './data-dir.ts';
import type { Db } from './db.ts';
import { createEmbeddedDb } from './embedded.ts';
import { migrate } from './migrate.ts';
import { createPostgresDb } from './postgres.ts';

/** What start-up says while it waits (main.ts logs it); each step may take seconds on a first start. */
export type Progress = (message: string, fields?: Record<string, unknown>) => void;

/** Opens the configured database and brings its schema up to date. */
export async function openDatabase(options: {
  databaseUrl: string | null;
  dataDir: string | null;
  /** PostgreSQL: the most connections (DISPERSA_DB_POOL_MAX). */
  poolMax?: number;
  progress?: Progress;
}): Promise<Db> {
  const progress = options.progress ?? (() => {});
  const started = Date.now();
  progress(
    options.databaseUrl !== null
      ? 'connecting to PostgreSQL (DATABASE_URL)'
      : 'opening the embedded database (a first start creates it, which takes a few seconds)',
  );
  let db: Db;
  if (options.dataDir !== null) await secureDataDir(options.dataDir);
  if (options.databaseUrl !== null) {
    db = createPostgresDb(options.databaseUrl, options.poolMax === undefined ? {} : { max: options.poolMax });
  } else if (options.dataDir !== null) {
    // Held until close(): a second process on this directory stops here, before it reads a single file.
    const lock = await lockDataDir(options.dataDir);
    try {
      const dir = path.join(options.dataDir, 'db');
      await mkdir(dir, { recursive: true, mode: DATA_DIR_MODE });
      const embedded = await createEmbeddedDb(dir);
      // PGlite's file layer sets 0666 on what it creates, whatever the umask: take it back to owner-only.
      await secureDataDir(options.dataDir);
      db = {
        ...embedded,
        async close() {
          await embedded.close();
          // Files PGlite created while running sat in 0700 folders; at rest they are 0600 as well.
          await secureDataDir(options.dataDir as string).catch(() => {});
          await lock.release();
        },
      };
    } catch (err) {
      await lock.release();
      throw err;
    }
  } else {
    db = await createEmbeddedDb(null);
  }
  try {
    progress('applying pending migrations');
    const applied = await migrate(db);
    progress('database ready', { applied: applied.length, ms: Date.now() - started });
  } catch (err) {
    await db.close();
    throw err;
  }
  return db;
}

/**
 * The database of a starting process (the service, the worker command), its progress in the log. A data directory
 * another process holds is the operator's setting to change, not a crash: it goes to `refuse`, which answers as the
 * caller does (an exit status, a usage error).
 */
export async function openForProcess(
  config: { databaseUrl: string | null; dataDir: string | null; dbPoolMax: number },
  logger: { info(fields: object, message: string): void },
  refuse: (message: string) => never,
): Promise<Db> {
  try {
    return await openDatabase({
      databaseUrl: config.databaseUrl,
      dataDir: config.dataDir,
      poolMax: config.dbPoolMax,
      progress: (message, fields) => logger.info(fields ?? {}, message),
    });
  } catch (err) {
    if (err instanceof DataDirLockedError) refuse(err.message);
    throw err;
  }
}
