import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { type Config, loadConfig } from '../src/config.ts';
import type { Db } from '../src/db/db.ts';
import { openDatabase } from '../src/db/open.ts';
import { createBenchDatabase } from './database.ts';

/**
 * What a bench that runs the service in its own process needs: a configuration on free ports with a random admin
 * token, and a database of its own (a fresh PostgreSQL database on the given server, or an embedded one in a
 * temporary directory), all of it removed by cleanup().
 */
export interface InProcessSetup {
  config: Config & { adminToken: string };
  /** The database opened (migrated); a bench may wrap it before starting the service over it. */
  db: Db;
  cleanup(): Promise<void>;
}

export async function inProcessSetup(
  backend: 'embedded' | 'postgres',
  postgresUrl: string,
  prefix: string,
): Promise<InProcessSetup> {
  const dataDir = await mkdtemp(path.join(tmpdir(), `dispersa-${prefix}-`));
  const database = backend === 'postgres' ? await createBenchDatabase(postgresUrl, `dispersa_${prefix}`) : null;
  const adminToken = `${prefix}-${randomBytes(12).toString('hex')}`;
  const config = loadConfig({
    DISPERSA_PORT: '0',
    DISPERSA_ADMIN_PORT: '0',
    DISPERSA_DATA_DIR: dataDir,
    DISPERSA_ADMIN_TOKEN: adminToken,
    ...(database ? { DATABASE_URL: database.url } : {}),
  });
  // The pool the service would open (openForProcess passes the same setting).
  const db = await openDatabase({
    databaseUrl: config.databaseUrl,
    dataDir: database ? null : dataDir,
    poolMax: config.dbPoolMax,
  });
  return {
    config: { ...config, adminToken },
    db,
    async cleanup() {
      await db.close();
      await database?.drop();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}
