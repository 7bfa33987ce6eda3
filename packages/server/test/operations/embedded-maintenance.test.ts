import { afterEach, describe, expect, it } from 'vitest';
import type { Db } from '../../src/db/db.ts';
import { createEmbeddedMaintenance } from '../../src/db/maintenance.ts';
import { ManualClock } from '../../src/shared/clock.ts';
import { createTestDb, type TestDb, usingPostgres } from '../support/test-db.ts';

/** The embedded database has no autovacuum: the service vacuums and analyzes it on a schedule of its own. */

const MINUTE = 60_000;

async function clientsTableState(db: Db): Promise<{ reltuples: number; lastVacuum: Date | null }> {
  // Statistics reach the views when this connection reports them.
  await db.query('SELECT pg_stat_force_next_flush()');
  const { rows } = await db.query<{ reltuples: number; last_vacuum: Date | null }>(
    `SELECT c.reltuples::float8 AS reltuples, s.last_vacuum FROM pg_class c
     JOIN pg_stat_user_tables s ON s.relid = c.oid WHERE c.relname = 'clients'`,
  );
  return { reltuples: Number(rows[0]!.reltuples), lastVacuum: rows[0]!.last_vacuum };
}

describe('upkeep of the embedded database', () => {
  let testDb: TestDb;
  afterEach(async () => {
    await testDb?.close();
  });

  it.skipIf(usingPostgres())('vacuums and analyzes it once per interval, never at start', async () => {
    testDb = await createTestDb();
    const { db } = testDb;
    const clock = new ManualClock();
    const logged: object[] = [];
    const worker = createEmbeddedMaintenance({
      db,
      clock,
      intervalMs: 15 * MINUTE,
      logger: { info: (fields) => logged.push(fields) },
    });
    expect(worker).not.toBeNull();
    expect(worker!.idleMs).toBe(MINUTE);
    await db.query(
      `INSERT INTO clients (id, name, currency) SELECT 'cli_m' || g, 'upkeep ' || g, 'VES' FROM generate_series(1, 500) g`,
    );
    await db.query(`UPDATE clients SET name = name || '.' WHERE id LIKE 'cli_m%'`);

    await worker!.processNext();
    clock.advance(15 * MINUTE - 1);
    await worker!.processNext();
    // Never analyzed: the planner has no row count for the table.
    expect(await clientsTableState(db)).toEqual({ reltuples: -1, lastVacuum: null });

    clock.advance(1);
    await worker!.processNext();
    const after = await clientsTableState(db);
    expect(after.reltuples).toBe(500);
    expect(after.lastVacuum).toBeInstanceOf(Date);
    expect(logged).toEqual([{ durationMs: expect.any(Number) }]);

    // The next run is a whole interval after this one.
    clock.advance(15 * MINUTE - 1);
    await worker!.processNext();
    expect(logged).toHaveLength(1);
    clock.advance(1);
    await worker!.processNext();
    expect(logged).toHaveLength(2);
  });

  it.skipIf(!usingPostgres())('leaves a PostgreSQL server to its autovacuum', async () => {
    testDb = await createTestDb();
    expect(
      createEmbeddedMaintenance({ db: testDb.db, clock: new ManualClock(), intervalMs: MINUTE, logger: { info() {} } }),
    ).toBeNull();
  });
});
