import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../../src/db/db.ts';
import type { BankStatementLine } from '../../../src/rails/rail.ts';
import { createSandboxBank, createSandboxRail, DEFAULT_VES_OPENING_MINOR } from '../../../src/rails/sandbox/index.ts';
import { ManualClock } from '../../../src/shared/clock.ts';
import { OWN_BANK, SETTLE_MS, START, transfer } from './fixtures.ts';
import { openTestDb, type TestDb } from './test-db.ts';

let t: TestDb;

beforeAll(async () => {
  t = await openTestDb({ persistent: true });
});
afterAll(async () => {
  await t.cleanup();
});

/** What a process builds at start: nothing carried over but the database and the clock. */
function start(db: Db, clock: ManualClock) {
  const bank = createSandboxBank({ db, clock, settleMs: SETTLE_MS, ownBankCode: OWN_BANK });
  return { bank, rail: createSandboxRail({ bank, db, clock }), source: bank.statementSource() };
}

describe('sandbox bank across a restart', () => {
  it('remembers lines, transfers, suppressions and statement positions', async () => {
    const clock = new ManualClock(START);
    const before = start(t.db, clock);
    const instant = transfer('PM', 150000n);
    const settling = transfer('PM', 150003n);
    const returned = transfer('CCE', 150007n);
    const suppressed = transfer('CCE', 150000n);
    const suppressedLater = transfer('PM', 150000n);
    await before.rail.submit(instant);
    await before.rail.submit(settling);
    await before.rail.submit(returned);
    await before.rail.submit(suppressed);
    await before.bank.suppressDebit(suppressed.paymentId);
    await before.bank.suppressDebit(suppressedLater.paymentId);
    await before.bank.bookCredit({ amountMinor: 1000n, currency: 'USD', reference: 'FUND-1' });
    const page = await before.source.fetchSince(null);
    expect(page.lines.map((l: BankStatementLine) => l.reference)).toEqual([instant.railReference, 'FUND-1']);
    const listed = await before.bank.listLines();

    const db = await t.reopen();
    const after = start(db, clock);
    expect(await after.bank.listLines()).toEqual(listed);
    // The statement continues from the cursor handed out before the restart.
    expect(await after.source.fetchSince(page.cursor)).toEqual({ lines: [], cursor: page.cursor });
    expect(await after.rail.query(settling.railReference)).toMatchObject({
      kind: 'unknown',
      subStatus: 'reconciling',
    });

    clock.advance(SETTLE_MS);
    const settled = await after.source.fetchSince(page.cursor);
    expect(settled.lines.map((l) => [l.direction, l.reference])).toEqual([
      ['debit', settling.railReference],
      ['debit', returned.railReference],
      ['credit', returned.railReference],
    ]);
    expect(await after.rail.query(settling.railReference)).toEqual({ kind: 'completed' });
    expect(await after.rail.query(returned.railReference)).toMatchObject({
      kind: 'failed',
      failureCode: 'returned_by_clearing_house',
    });
    expect(await after.rail.query(suppressed.railReference)).toEqual({ kind: 'completed' });
    expect(await after.source.balance('VES')).toBe(DEFAULT_VES_OPENING_MINOR - 150000n - 150003n);
    expect(await after.source.balance('USD')).toBe(1000n);

    // The bank still knows every reference it executed, and the suppression made before the restart.
    expect(await after.rail.submit(instant)).toMatchObject({ kind: 'unknown', subStatus: 'reconciling' });
    expect(await after.rail.submit(suppressedLater)).toEqual({ kind: 'completed' });
    const lines = await after.bank.listLines();
    expect(lines.filter((l) => l.reference === instant.railReference)).toHaveLength(1);
    expect(lines.filter((l) => l.paymentId === suppressedLater.paymentId)).toEqual([]);
    // Bank ids keep counting from where they were (6 was the funding; the removed debit keeps its 5).
    const fresh = await after.bank.addLine({ direction: 'credit', amountMinor: 1n, reference: 'AFTER' });
    expect(fresh).toMatchObject({ ok: true, line: { bankLineId: 'SBL000000000007' } });
  });
});
