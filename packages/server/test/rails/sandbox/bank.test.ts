import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  createSandboxBank,
  createSandboxRail,
  DEFAULT_VES_OPENING_MINOR,
  type SandboxBank,
  type SandboxBankLine,
} from '../../../src/rails/sandbox/index.ts';
import { ManualClock } from '../../../src/shared/clock.ts';
import { OWN_BANK, SETTLE_MS, START, transfer } from './fixtures.ts';
import { openTestDb, type TestDb } from './test-db.ts';

let t: TestDb;
let clock: ManualClock;
let bank: SandboxBank;
let rail: ReturnType<typeof createSandboxRail>;

beforeAll(async () => {
  t = await openTestDb();
});
afterAll(async () => {
  await t.cleanup();
});
beforeEach(async () => {
  await t.resetBank();
  clock = new ManualClock(START);
  bank = createSandboxBank({ db: t.db, clock, settleMs: SETTLE_MS, ownBankCode: OWN_BANK });
  rail = createSandboxRail({ bank, db: t.db, clock });
});

function ok(result: { ok: true; line: SandboxBankLine } | { ok: false; error: string }): SandboxBankLine {
  if (!result.ok) throw new Error(`expected a line, got ${result.error}`);
  return result.line;
}

async function visibleOf(paymentId: string): Promise<string[]> {
  return (await bank.listLines()).filter((l) => l.paymentId === paymentId && l.visible).map((l) => l.direction);
}

describe('sandbox bank balances', () => {
  it('opens VES with a large float and other currencies at zero, or as configured', async () => {
    expect(await bank.statementSource().balance('VES')).toBe(DEFAULT_VES_OPENING_MINOR);
    expect(await bank.statementSource().balance('USD')).toBe(0n);
    const configured = createSandboxBank({
      db: t.db,
      clock,
      settleMs: SETTLE_MS,
      openingBalances: { VES: 500n, USD: 70n },
    });
    expect(await configured.statementSource().balance('VES')).toBe(500n);
    expect(await configured.statementSource().balance('USD')).toBe(70n);
    expect(await configured.statementSource().balance('EUR')).toBe(0n);
  });

  it('books a funding credit visible at once, in its currency only', async () => {
    const line = await bank.bookCredit({ amountMinor: 1_000_00n, currency: 'USD', reference: 'FUND-1' });
    expect(line).toMatchObject({
      bankLineId: 'SBL000000000001',
      direction: 'credit',
      amountMinor: 1_000_00n,
      currency: 'USD',
      valueDate: '2026-03-10',
      reference: 'FUND-1',
      raw: '2026-03-10;C;100000;USD;FUND-1',
      origin: 'funding',
      paymentId: null,
      visible: true,
    });
    expect(await bank.statementSource().balance('USD')).toBe(1_000_00n);
    expect(await bank.statementSource().balance('VES')).toBe(DEFAULT_VES_OPENING_MINOR);
  });

  it('books a funding credit inside the caller transaction', async () => {
    await expect(
      t.db.tx(async (q) => {
        await bank.bookCredit({ amountMinor: 500n, currency: 'VES', reference: 'FUND-ROLLED-BACK' }, q);
        throw new Error('funding failed after the credit');
      }),
    ).rejects.toThrow('funding failed');
    await t.db.tx((q) => bank.bookCredit({ amountMinor: 700n, currency: 'VES', reference: 'FUND-KEPT' }, q));
    expect((await bank.listLines()).map((l) => l.reference)).toEqual(['FUND-KEPT']);
    expect(await bank.statementSource().balance('VES')).toBe(DEFAULT_VES_OPENING_MINOR + 700n);
  });
});

describe('sandbox bank manual lines', () => {
  it('adds a manual debit or credit, VES by default', async () => {
    const debit = ok(await bank.addLine({ direction: 'debit', amountMinor: 4200n, reference: 'ORPHAN-1' }));
    expect(debit).toMatchObject({
      direction: 'debit',
      amountMinor: 4200n,
      currency: 'VES',
      reference: 'ORPHAN-1',
      raw: '2026-03-10;D;4200;VES;ORPHAN-1',
      origin: 'manual',
      duplicateOf: null,
      visible: true,
    });
    ok(await bank.addLine({ direction: 'credit', amountMinor: 300n, currency: 'USD', reference: 'UNFUNDED' }));
    expect(await bank.statementSource().balance('VES')).toBe(DEFAULT_VES_OPENING_MINOR - 4200n);
    expect(await bank.statementSource().balance('USD')).toBe(300n);
  });

  it('rejects a line that is not one', async () => {
    expect(await bank.addLine({ direction: 'debit', amountMinor: 0n, reference: 'X' })).toEqual({
      ok: false,
      error: 'invalid_line',
    });
    expect(await bank.addLine({ direction: 'debit', amountMinor: -5n, reference: 'X' })).toEqual({
      ok: false,
      error: 'invalid_line',
    });
    expect(await bank.addLine({ direction: 'debit', amountMinor: 5n, currency: 'ves', reference: 'X' })).toEqual({
      ok: false,
      error: 'invalid_line',
    });
    expect(await bank.addLine({ direction: 'credit', amountMinor: 5n, reference: '' })).toEqual({
      ok: false,
      error: 'invalid_line',
    });
    expect(await bank.listLines()).toEqual([]);
  });

  it('copies a payout debit byte for byte under its own bank id', async () => {
    const tr = transfer('PM', 150000n);
    await rail.submit(tr);
    const [original] = await bank.listLines();
    if (original === undefined) throw new Error('no debit booked');
    clock.advance(86_400_000);

    const copy = ok(await bank.addLine({ duplicateOf: original.bankLineId }));
    expect(copy.bankLineId).not.toBe(original.bankLineId);
    expect(copy).toMatchObject({
      direction: original.direction,
      amountMinor: original.amountMinor,
      currency: original.currency,
      valueDate: original.valueDate,
      reference: original.reference,
      raw: original.raw,
      origin: 'duplicate',
      duplicateOf: original.bankLineId,
      // A copy is not the payout's own line; reconciliation must find it by its bytes.
      paymentId: null,
      visible: true,
    });
    expect(await bank.statementSource().balance('VES')).toBe(DEFAULT_VES_OPENING_MINOR - 300000n);
  });

  it('accepts matching fields with duplicateOf and refuses differing ones', async () => {
    const original = ok(await bank.addLine({ direction: 'debit', amountMinor: 900n, reference: 'R-9' }));
    const same = {
      direction: 'debit',
      amountMinor: 900n,
      currency: 'VES',
      reference: 'R-9',
      duplicateOf: original.bankLineId,
    } as const;
    expect(ok(await bank.addLine(same)).raw).toBe(original.raw);
    for (const differing of [
      { ...same, direction: 'credit' as const },
      { ...same, amountMinor: 901n },
      { ...same, currency: 'USD' },
      { ...same, reference: 'R-8' },
    ]) {
      expect(await bank.addLine(differing)).toEqual({ ok: false, error: 'duplicate_mismatch' });
    }
    expect(await bank.listLines()).toHaveLength(2);
  });

  it('refuses to copy an unknown line', async () => {
    expect(await bank.addLine({ duplicateOf: 'SBL000000000042' })).toEqual({
      ok: false,
      error: 'unknown_line',
    });
    expect(await bank.listLines()).toEqual([]);
  });

  it('shows a copy of a settling debit when the original shows', async () => {
    const tr = transfer('PM', 150003n);
    await rail.submit(tr);
    const [pendingDebit] = await bank.listLines();
    if (pendingDebit === undefined) throw new Error('no debit booked');
    expect(pendingDebit.visible).toBe(false);

    const copy = ok(await bank.addLine({ duplicateOf: pendingDebit.bankLineId }));
    expect(copy).toMatchObject({ visible: false, raw: pendingDebit.raw, visibleAt: pendingDebit.visibleAt });
    clock.advance(SETTLE_MS);
    const lines = await bank.listLines();
    expect(lines.map((l) => [l.origin, l.visible])).toEqual([
      ['payout', true],
      ['duplicate', true],
    ]);
    expect(await bank.statementSource().balance('VES')).toBe(DEFAULT_VES_OPENING_MINOR - 300006n);
  });

  it('lists the whole statement in visibility order, marking what is not yet visible', async () => {
    const settling = transfer('CCE', 150000n);
    const instant = transfer('PM', 150000n);
    await rail.submit(settling);
    clock.advance(100);
    await rail.submit(instant);
    const lines = await bank.listLines();
    expect(lines.map((l) => [l.reference, l.visible])).toEqual([
      [instant.railReference, true],
      [settling.railReference, false],
    ]);
  });
});

describe('sandbox bank debit suppression', () => {
  it('books no debit for a payment suppressed before it is submitted', async () => {
    const tr = transfer('PM', 150000n);
    expect(await bank.suppressDebit(tr.paymentId)).toEqual({
      paymentId: tr.paymentId,
      removedLineIds: [],
      remainingLineIds: [],
    });
    expect(await rail.submit(tr)).toEqual({ kind: 'completed' });
    clock.advance(SETTLE_MS);
    expect(await bank.listLines()).toEqual([]);
    expect(await rail.query(tr.railReference)).toEqual({ kind: 'completed' });
    expect(await bank.statementSource().balance('VES')).toBe(DEFAULT_VES_OPENING_MINOR);
  });

  it('removes a settling debit not yet visible; the rail still reports completion', async () => {
    const tr = transfer('PM', 150003n);
    const other = transfer('PM', 150003n);
    await rail.submit(tr);
    await rail.submit(other);
    const [debit] = await bank.listLines();
    clock.advance(SETTLE_MS - 1);

    const result = await bank.suppressDebit(tr.paymentId);
    expect(result).toEqual({
      paymentId: tr.paymentId,
      removedLineIds: [debit?.bankLineId],
      remainingLineIds: [],
    });
    clock.advance(1);
    expect(await visibleOf(tr.paymentId)).toEqual([]);
    expect(await visibleOf(other.paymentId)).toEqual(['debit']);
    expect((await rail.query(tr.railReference)).kind).toBe('completed');
    expect(await bank.statementSource().balance('VES')).toBe(DEFAULT_VES_OPENING_MINOR - 150003n);
  });

  it('removes the return of a clearing-house rejection with its debit', async () => {
    const tr = transfer('CCE', 150007n);
    await rail.submit(tr);
    const booked = (await bank.listLines()).map((l) => l.bankLineId);
    expect(booked).toHaveLength(2);
    const result = await bank.suppressDebit(tr.paymentId);
    expect(result.removedLineIds).toEqual(booked);
    clock.advance(SETTLE_MS);
    expect(await bank.listLines()).toEqual([]);
  });

  it('keeps a debit already visible and says so', async () => {
    const tr = transfer('PM', 150000n);
    await rail.submit(tr);
    const [debit] = await bank.listLines();
    const result = await bank.suppressDebit(tr.paymentId);
    expect(result).toEqual({
      paymentId: tr.paymentId,
      removedLineIds: [],
      remainingLineIds: [debit?.bankLineId],
    });
    expect(await visibleOf(tr.paymentId)).toEqual(['debit']);
  });

  it('is idempotent and touches no other payment', async () => {
    const tr = transfer('CCE', 150000n);
    const other = transfer('CCE', 150000n);
    await rail.submit(tr);
    await rail.submit(other);
    expect((await bank.suppressDebit(tr.paymentId)).removedLineIds).toHaveLength(1);
    expect(await bank.suppressDebit(tr.paymentId)).toEqual({
      paymentId: tr.paymentId,
      removedLineIds: [],
      remainingLineIds: [],
    });
    clock.advance(SETTLE_MS);
    expect(await visibleOf(tr.paymentId)).toEqual([]);
    expect(await visibleOf(other.paymentId)).toEqual(['debit']);
  });

  it('never lets a concurrent suppression miss a debit being booked', async () => {
    // Bounded: a handful of races between submit and suppress of a debit that settles later. In either
    // order no debit may show: suppression first books none, submit first has its debit removed.
    for (let i = 0; i < 10; i++) {
      const settling = transfer('PM', 150003n);
      await Promise.all([rail.submit(settling), bank.suppressDebit(settling.paymentId)]);
      clock.advance(SETTLE_MS);
      expect((await bank.listLines()).filter((l) => l.paymentId === settling.paymentId)).toEqual([]);
    }
  });
});
