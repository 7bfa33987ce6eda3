import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDb, type TestDb } from '../support/test-db.ts';

/**
 * The settings the hot path's functions plan their statements under (migrations 0023, 0032, 0036, 0041, 0042):
 * through the indexes whatever the tables' statistics, and once per connection rather than on every call. CREATE OR
 * REPLACE FUNCTION keeps only the settings it names, so a migration that restates one of these functions and forgets
 * them would quietly bring back the per-call planning or the table scans; this says which.
 */

const HOT_PATH = [
  'reserve_payments',
  'book_payments',
  'sandbox_submit_transfers',
  'payments_json',
  'payments_public_json',
  'consume_nonces',
  // Not the money path's, but called ten times a second by every process (the webhook-verification worker).
  'claim_due_change_request',
];

let t: TestDb;
beforeAll(async () => {
  t = await createTestDb();
});
afterAll(() => t.close());

describe("the hot path's functions", () => {
  it('plan through the indexes, and plan once per connection', async () => {
    const { rows } = await t.db.query<{ proname: string; proconfig: string[] | null }>(
      'SELECT proname, proconfig FROM pg_proc WHERE proname = ANY ($1::text[]) ORDER BY proname',
      [HOT_PATH],
    );
    expect(rows.map((r) => r.proname)).toEqual([...HOT_PATH].sort());
    for (const r of rows) {
      expect(r.proconfig ?? [], r.proname).toEqual(
        expect.arrayContaining(['enable_seqscan=off', 'plan_cache_mode=force_generic_plan']),
      );
    }
  });
});
