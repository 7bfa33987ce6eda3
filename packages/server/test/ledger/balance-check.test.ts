import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDb, type TestDb } from '../support/test-db.ts';

/**
 * The ledger's balance check (migration 0035): every statement that writes postings leaves each entry it touched
 * summing to zero in each currency, or fails whole. It runs once per statement, over the entries of the rows the
 * statement wrote, so an entry's postings are written in one statement (as every path of the service does).
 */

let t: TestDb;
let n = 0;

beforeAll(async () => {
  t = await createTestDb();
  await t.db.query(
    `INSERT INTO ledger_accounts (id, kind, client_id, currency) VALUES ('fx:USD', 'fx_position', NULL, 'USD')
     ON CONFLICT (id) DO NOTHING`,
  );
});
afterAll(() => t.close());

async function entry(): Promise<string> {
  const { rows } = await t.db.query<{ id: string }>(
    `INSERT INTO journal_entries (kind, entry_ref) VALUES ('test', $1) RETURNING id::text`,
    [`balance-check-${++n}`],
  );
  return rows[0]!.id;
}

/** Writes the postings in one statement: [entry, account, currency, amount]. */
function post(rows: [string, string, string, bigint][]) {
  return t.db.query(
    `INSERT INTO postings (entry_id, account_id, currency, amount_minor)
     SELECT * FROM unnest($1::bigint[], $2::text[], $3::char(3)[], $4::bigint[])`,
    [rows.map((r) => r[0]), rows.map((r) => r[1]), rows.map((r) => r[2]), rows.map((r) => r[3].toString())],
  );
}

async function postingsOf(entryIds: string[]): Promise<number> {
  const { rows } = await t.db.query<{ n: string }>(
    'SELECT count(*)::text AS n FROM postings WHERE entry_id = ANY ($1::bigint[])',
    [entryIds],
  );
  return Number(rows[0]!.n);
}

describe('the balance check of journal entries', () => {
  it('accepts entries that sum to zero in each currency, several in one statement', async () => {
    const [a, b] = [await entry(), await entry()];
    await post([
      [a, 'bank:VES', 'VES', 500n],
      [a, 'fx:VES', 'VES', -500n],
      [b, 'fx:VES', 'VES', 70n],
      [b, 'bank:VES', 'VES', -30n],
      [b, 'bank:VES', 'VES', -40n],
    ]);
    expect(await postingsOf([a, b])).toBe(5);
  });

  it('refuses an entry that does not sum to zero, naming it, its currency and by how much', async () => {
    const a = await entry();
    await expect(
      post([
        [a, 'bank:VES', 'VES', 500n],
        [a, 'fx:VES', 'VES', -499n],
      ]),
    ).rejects.toThrow(`journal entry ${a} does not balance in VES (off by 1)`);
    expect(await postingsOf([a])).toBe(0);
  });

  it('refuses an entry that balances only across currencies', async () => {
    const a = await entry();
    await expect(
      post([
        [a, 'bank:VES', 'VES', 500n],
        [a, 'fx:USD', 'USD', -500n],
      ]),
    ).rejects.toThrow(/does not balance/);
    expect(await postingsOf([a])).toBe(0);
  });

  it('refuses the whole statement when one of its entries is off: the balanced one is not written either', async () => {
    const [good, bad] = [await entry(), await entry()];
    await expect(
      post([
        [good, 'bank:VES', 'VES', 10n],
        [good, 'fx:VES', 'VES', -10n],
        [bad, 'bank:VES', 'VES', 10n],
      ]),
    ).rejects.toThrow(`journal entry ${bad} does not balance in VES (off by 10)`);
    expect(await postingsOf([good, bad])).toBe(0);
  });

  it('checks what the entry holds after the statement, postings written before included', async () => {
    const a = await entry();
    await post([
      [a, 'bank:VES', 'VES', 5n],
      [a, 'fx:VES', 'VES', -5n],
    ]);
    // A later statement that adds to the entry must leave it balanced too; one that does is accepted.
    await expect(post([[a, 'bank:VES', 'VES', 1n]])).rejects.toThrow(/does not balance in VES \(off by 1\)/);
    await post([
      [a, 'bank:VES', 'VES', 1n],
      [a, 'fx:VES', 'VES', -1n],
    ]);
    expect(await postingsOf([a])).toBe(4);
  });
});
