import type { Db } from '../../src/db/db.ts';
import { expectLedgerSound } from './ledger.ts';
import { createTestDb } from './test-db.ts';
import { startTestServer, type TestServer } from './test-server.ts';

/**
 * A test server over a fresh database seen through wrap (fault injection, statement counting). close() checks that
 * the ledger is sound, stops the server and closes the database, which a server given its database leaves to its
 * owner (test-server.ts).
 */
export async function startWrappedServer(
  wrap: (db: Db) => Db,
  options: { env?: Record<string, string> } = {},
): Promise<{ server: TestServer; close(): Promise<void> }> {
  const testDb = await createTestDb();
  const server = await startTestServer({ testDb: { ...testDb, db: wrap(testDb.db) }, env: options.env });
  return {
    server,
    async close() {
      await expectLedgerSound(server.testDb.db);
      await server.stop();
      await testDb.close();
    },
  };
}
