import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Db } from '../../../src/db/db.ts';
import { createEmbeddedDb } from '../../../src/db/embedded.ts';
import { migrate } from '../../../src/db/migrate.ts';
import { createPostgresDb } from '../../../src/db/postgres.ts';
import { createTestDatabaseUrl } from '../../support/test-db.ts';

/**
 * A migrated database of this test file's own: a fresh PostgreSQL database when DATABASE_URL is set
 * (created here, dropped at cleanup), else PGlite in memory, or in a temp directory when persistent
 * (so that reopen() finds the same data).
 */
export interface TestDb {
  readonly db: Db;
  /** Closes the connection and opens the same database again, as a restarted process would (persistent only). */
  reopen(): Promise<Db>;
  /** Empties the simulated bank's tables between tests. */
  resetBank(): Promise<void>;
  cleanup(): Promise<void>;
}

export async function openTestDb(options: { persistent?: boolean } = {}): Promise<TestDb> {
  if (process.env.DATABASE_URL) return openPostgres();
  return options.persistent ? openEmbeddedDir() : openEmbeddedMemory();
}

async function openEmbeddedMemory(): Promise<TestDb> {
  const db = await createEmbeddedDb(null);
  await migrate(db);
  return handle(
    () => db,
    async () => {
      throw new Error('an in-memory database cannot be reopened; open it with { persistent: true }');
    },
    async () => {
      await db.close().catch(() => {});
    },
  );
}

async function openEmbeddedDir(): Promise<TestDb> {
  const dir = await mkdtemp(path.join(tmpdir(), 'dispersa-sandbox-'));
  let db = await createEmbeddedDb(dir);
  await migrate(db);
  return handle(
    () => db,
    async () => {
      await db.close();
      db = await createEmbeddedDb(dir);
      await migrate(db);
      return db;
    },
    async () => {
      await db.close().catch(() => {});
      await rm(dir, { recursive: true, force: true });
    },
  );
}

async function openPostgres(): Promise<TestDb> {
  const { url, drop } = await createTestDatabaseUrl();
  let db = createPostgresDb(url, { max: 5 });
  await migrate(db);
  return handle(
    () => db,
    async () => {
      await db.close();
      db = createPostgresDb(url, { max: 5 });
      await migrate(db);
      return db;
    },
    async () => {
      // Tolerates a test that closed the connection itself.
      await db.close().catch(() => {});
      await drop();
    },
  );
}

function handle(current: () => Db, reopen: () => Promise<Db>, cleanup: () => Promise<void>): TestDb {
  return {
    get db() {
      return current();
    },
    reopen,
    async resetBank() {
      await current().exec(
        'TRUNCATE sandbox_bank_lines, sandbox_bank_transfers, sandbox_bank_suppressions, sandbox_bank_released_totals RESTART IDENTITY',
      );
    },
    cleanup,
  };
}
