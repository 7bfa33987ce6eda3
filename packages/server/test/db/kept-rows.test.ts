import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ledgerViolations } from '../../src/ledger/invariants.ts';
import { insertServiceClient } from '../support/service-client.ts';
import { createTestDb, type TestDb } from '../support/test-db.ts';

/**
 * Migration 0037 took the foreign keys off the rows a payment writes. What they guarded is kept two other ways:
 * the parents those rows name are never deleted, truncated or renamed, and the invariant check finds any row that
 * names a parent that does not exist.
 */

let t: TestDb;
let clientId: string;
let keyId: string;
let entryId: string;

async function sqlError(sql: string, params: unknown[] = []): Promise<{ code?: string; message: string }> {
  try {
    await t.db.query(sql, params);
  } catch (err) {
    return err as { code?: string; message: string };
  }
  throw new Error(`expected this statement to fail: ${sql}`);
}

beforeAll(async () => {
  t = await createTestDb();
  ({ clientId, keyId } = await insertServiceClient(t.db, 'kept'));
  const { rows } = await t.db.query<{ id: string }>(
    "INSERT INTO journal_entries (kind, entry_ref) VALUES ('test', 'kept-rows') RETURNING id::text",
  );
  entryId = rows[0]!.id;
});
afterAll(() => t.close());

describe('the parents of the money path rows are kept for ever', () => {
  const parents = () =>
    [
      ['clients', clientId],
      ['api_keys', keyId],
      ['ledger_accounts', 'bank:VES'],
    ] as const;

  it('refuses to delete a client, an API key or a ledger account, as a foreign key did', async () => {
    for (const [table, id] of parents()) {
      const err = await sqlError(`DELETE FROM ${table} WHERE id = $1`, [id]);
      expect(err.code).toBe('23503');
      expect(err.message).toBe(`${table} row ${id} is kept for ever and cannot be deleted`);
      const { rows } = await t.db.query(`SELECT 1 FROM ${table} WHERE id = $1`, [id]);
      expect(rows).toHaveLength(1);
    }
  });

  it('refuses to truncate them or to change their id, and lets their other columns change', async () => {
    for (const [table, id] of parents()) {
      const truncate = await sqlError(`TRUNCATE ${table} CASCADE`);
      expect(truncate.code).toBe('23503');
      expect(truncate.message).toBe(`${table} rows are kept for ever and cannot be truncated`);
      const rename = await sqlError(`UPDATE ${table} SET id = $2 WHERE id = $1`, [id, `${id}-renamed`]);
      expect(rename.code).toBe('23503');
      expect(rename.message).toBe(`${table} row ${id} is kept for ever and cannot change its id`);
    }
    // A journal entry was append-only before (migration 0003); a truncate is what the foreign key alone refused.
    const truncate = await sqlError('TRUNCATE journal_entries CASCADE');
    expect(truncate.message).toBe('journal_entries rows are kept for ever and cannot be truncated');
    expect((await sqlError('DELETE FROM journal_entries WHERE id = $1', [entryId])).message).toBe(
      'journal_entries is append-only',
    );
    // Setting the id to itself changes nothing, and the rows' own state moves as the service moves it.
    await t.db.query('UPDATE clients SET id = id, name = $2 WHERE id = $1', [clientId, 'renamed client']);
    await t.db.query('UPDATE api_keys SET active = false, deactivated_at = now() WHERE id = $1', [keyId]);
    const { rows } = await t.db.query<{ name: string; active: boolean }>(
      'SELECT c.name, k.active FROM clients c JOIN api_keys k ON k.client_id = c.id WHERE k.id = $1',
      [keyId],
    );
    expect(rows).toEqual([{ name: 'renamed client', active: false }]);
  });
});

describe('the invariant check of the references no foreign key declares', () => {
  it('names each row whose parent does not exist, and is quiet once it is gone', async () => {
    expect(await ledgerViolations(t.db)).toEqual([]);
    await t.db.query(
      `INSERT INTO events (id, client_id, type, test, payment_id, body, created_at, next_attempt_at)
       VALUES ('evt_orphan', 'cli_missing', 'payment.state_changed', true, NULL, '{}', now(), now())`,
    );
    await t.db.query(
      "INSERT INTO key_daily_usage (key_id, rail, day, used_minor) VALUES ('key_missing', 'PM', '2026-11-27', 100)",
    );
    expect(await ledgerViolations(t.db)).toEqual([
      '1 events row(s) name client_id cli_missing, which clients lacks',
      '1 key_daily_usage row(s) name key_id key_missing, which api_keys lacks',
    ]);
    await t.db.query("DELETE FROM events WHERE id = 'evt_orphan'");
    await t.db.query("DELETE FROM key_daily_usage WHERE key_id = 'key_missing'");
    expect(await ledgerViolations(t.db)).toEqual([]);
  });
});
