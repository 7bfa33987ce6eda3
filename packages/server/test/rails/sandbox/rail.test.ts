import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { RailCode } from '../../../src/config.ts';
import type { RailStatus, RailTransfer } from '../../../src/rails/rail.ts';
import {
  createSandboxBank,
  createSandboxRail,
  DEFAULT_VES_OPENING_MINOR,
  type SandboxBank,
} from '../../../src/rails/sandbox/index.ts';
import { ManualClock } from '../../../src/shared/clock.ts';
import { OTHER_BANK, OWN_BANK, SETTLE_MS, START, transfer } from './fixtures.ts';
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

type Answer = { kind: string; subStatus?: string; failureCode?: string };

/** The answer without its free-text detail, so that a changed wording does not matter. */
function answer(status: RailStatus): Answer {
  const { kind } = status;
  if (status.kind === 'failed') return { kind, subStatus: status.subStatus, failureCode: status.failureCode ?? '' };
  if (status.kind === 'unknown') return { kind, subStatus: status.subStatus };
  return { kind };
}

async function linesOf(paymentId: string): Promise<string[]> {
  const all = await bank.listLines();
  return all.filter((l) => l.paymentId === paymentId && l.visible).map((l) => l.direction);
}

const COMPLETED: Answer = { kind: 'completed' };
const PENDING: Answer = { kind: 'pending' };
const RECONCILING: Answer = { kind: 'unknown', subStatus: 'reconciling' };
const AT_RAIL: Answer = { kind: 'unknown', subStatus: 'at_rail' };
const failed = (subStatus: string, failureCode: string): Answer => ({
  kind: 'failed',
  subStatus,
  failureCode,
});

interface Case {
  rail: RailCode;
  amount: bigint;
  bankCode?: string;
  account?: string;
  /** Answer of submit, and of query until settleMs has passed. */
  submit: Answer;
  /** Answer of query from settleMs on. */
  settled: Answer;
  /** Visible lines of the payment right after submit and from settleMs on. */
  linesNow: string[];
  linesSettled: string[];
}

const NONE: string[] = [];
const DEBIT = ['debit'];

const CASES: Record<string, Case> = {
  'PM 00 completes with the debit at once': {
    rail: 'PM',
    amount: 150000n,
    submit: COMPLETED,
    settled: COMPLETED,
    linesNow: DEBIT,
    linesSettled: DEBIT,
  },
  'PM 01 fails for insufficient funds': {
    rail: 'PM',
    amount: 150001n,
    submit: failed('declined', 'insufficient_funds'),
    settled: failed('declined', 'insufficient_funds'),
    linesNow: NONE,
    linesSettled: NONE,
  },
  'PM 02 stays unknown with nothing moved': {
    rail: 'PM',
    amount: 150002n,
    submit: RECONCILING,
    settled: RECONCILING,
    linesNow: NONE,
    linesSettled: NONE,
  },
  'PM 03 is unknown but the money moves': {
    rail: 'PM',
    amount: 150003n,
    submit: RECONCILING,
    settled: COMPLETED,
    linesNow: NONE,
    linesSettled: DEBIT,
  },
  'PM 04 reports a duplicate and executes once': {
    rail: 'PM',
    amount: 150004n,
    submit: RECONCILING,
    settled: COMPLETED,
    linesNow: NONE,
    linesSettled: DEBIT,
  },
  'PM 05 fails for a restricted beneficiary': {
    rail: 'PM',
    amount: 150005n,
    submit: failed('wrong_beneficiary', 'restricted_beneficiary'),
    settled: failed('wrong_beneficiary', 'restricted_beneficiary'),
    linesNow: NONE,
    linesSettled: NONE,
  },
  'PM 06 settles normally': {
    rail: 'PM',
    amount: 150006n,
    submit: COMPLETED,
    settled: COMPLETED,
    linesNow: DEBIT,
    linesSettled: DEBIT,
  },
  'PM 07 settles normally': {
    rail: 'PM',
    amount: 150007n,
    submit: COMPLETED,
    settled: COMPLETED,
    linesNow: DEBIT,
    linesSettled: DEBIT,
  },
  'PM 09 fails over the limit': {
    rail: 'PM',
    amount: 150009n,
    submit: failed('declined', 'limit_exceeded'),
    settled: failed('declined', 'limit_exceeded'),
    linesNow: NONE,
    linesSettled: NONE,
  },
  'PM malformed phone fails before the magic amount': {
    rail: 'PM',
    amount: 150003n,
    account: '4141234567',
    submit: failed('wrong_beneficiary', 'invalid_phone_number'),
    settled: failed('wrong_beneficiary', 'invalid_phone_number'),
    linesNow: NONE,
    linesSettled: NONE,
  },
  'CCE 00 to another bank is pending until settlement': {
    rail: 'CCE',
    amount: 150000n,
    submit: PENDING,
    settled: COMPLETED,
    linesNow: NONE,
    linesSettled: DEBIT,
  },
  'CCE 00 to the bank itself completes at once': {
    rail: 'CCE',
    amount: 150000n,
    bankCode: OWN_BANK,
    submit: COMPLETED,
    settled: COMPLETED,
    linesNow: DEBIT,
    linesSettled: DEBIT,
  },
  'CCE 01 fails for insufficient funds': {
    rail: 'CCE',
    amount: 150001n,
    submit: failed('declined', 'insufficient_funds'),
    settled: failed('declined', 'insufficient_funds'),
    linesNow: NONE,
    linesSettled: NONE,
  },
  'CCE 02 stays unknown with nothing moved': {
    rail: 'CCE',
    amount: 150002n,
    submit: RECONCILING,
    settled: RECONCILING,
    linesNow: NONE,
    linesSettled: NONE,
  },
  'CCE 03 is unknown but the money moves': {
    rail: 'CCE',
    amount: 150003n,
    submit: RECONCILING,
    settled: COMPLETED,
    linesNow: NONE,
    linesSettled: DEBIT,
  },
  'CCE 04 reports a duplicate and executes once': {
    rail: 'CCE',
    amount: 150004n,
    bankCode: OWN_BANK,
    submit: RECONCILING,
    settled: COMPLETED,
    linesNow: NONE,
    linesSettled: DEBIT,
  },
  'CCE 05 fails for a restricted beneficiary': {
    rail: 'CCE',
    amount: 150005n,
    submit: failed('wrong_beneficiary', 'restricted_beneficiary'),
    settled: failed('wrong_beneficiary', 'restricted_beneficiary'),
    linesNow: NONE,
    linesSettled: NONE,
  },
  'CCE 06 is at the rail, then completes': {
    rail: 'CCE',
    amount: 150006n,
    submit: AT_RAIL,
    settled: COMPLETED,
    linesNow: NONE,
    linesSettled: DEBIT,
  },
  'CCE 07 is at the rail, then returned with the money': {
    rail: 'CCE',
    amount: 150007n,
    submit: AT_RAIL,
    settled: failed('declined', 'returned_by_clearing_house'),
    linesNow: NONE,
    linesSettled: ['debit', 'credit'],
  },
  'CCE 09 fails over the limit': {
    rail: 'CCE',
    amount: 150009n,
    bankCode: OWN_BANK,
    submit: failed('declined', 'limit_exceeded'),
    settled: failed('declined', 'limit_exceeded'),
    linesNow: NONE,
    linesSettled: NONE,
  },
  'CCE malformed account fails before the magic amount': {
    rail: 'CCE',
    amount: 150006n,
    account: '0105000000123456789',
    submit: failed('wrong_beneficiary', 'invalid_account_number'),
    settled: failed('wrong_beneficiary', 'invalid_account_number'),
    linesNow: NONE,
    linesSettled: NONE,
  },
};

function build(c: Case): RailTransfer {
  return transfer(c.rail, c.amount, {
    bankCode: c.bankCode ?? OTHER_BANK,
    ...(c.account === undefined ? {} : { account: c.account }),
  });
}

describe('sandbox rail magic amounts', () => {
  it.each(Object.entries(CASES))('%s', async (_name, c) => {
    const tr = build(c);
    const source = bank.statementSource();
    const moved = (lines: string[]) => lines.reduce((sum, d) => (d === 'debit' ? sum - c.amount : sum + c.amount), 0n);

    expect(answer(await rail.submit(tr))).toEqual(c.submit);
    expect(await linesOf(tr.paymentId)).toEqual(c.linesNow);
    expect(answer(await rail.query(tr.railReference))).toEqual(c.submit);
    expect(await source.balance('VES')).toBe(DEFAULT_VES_OPENING_MINOR + moved(c.linesNow));

    clock.advance(SETTLE_MS - 1);
    expect(await linesOf(tr.paymentId)).toEqual(c.linesNow);
    expect(answer(await rail.query(tr.railReference))).toEqual(c.submit);

    clock.advance(1);
    expect(await linesOf(tr.paymentId)).toEqual(c.linesSettled);
    expect(answer(await rail.query(tr.railReference))).toEqual(c.settled);
    expect(await source.balance('VES')).toBe(DEFAULT_VES_OPENING_MINOR + moved(c.linesSettled));

    // Nothing changes later: the bank never learns more than it knew at settlement.
    clock.advance(3_600_000);
    expect(await linesOf(tr.paymentId)).toEqual(c.linesSettled);
    expect(answer(await rail.query(tr.railReference))).toEqual(c.settled);

    // Every line the payment booked, visible or not, is accounted for above.
    const all = (await bank.listLines()).filter((l) => l.paymentId === tr.paymentId);
    expect(all.map((l) => l.direction)).toEqual(c.linesSettled);
    for (const line of all) {
      expect(line).toMatchObject({ amountMinor: c.amount, currency: 'VES', reference: tr.railReference });
    }
  });

  it('books the lines of a payout as the bank shows them', async () => {
    clock.set(new Date('2026-03-10T23:59:59.000Z'));
    const now = transfer('PM', 250000n);
    const later = transfer('CCE', 250007n);
    await rail.submit(now);
    await rail.submit(later);
    clock.advance(SETTLE_MS);

    const lines = await bank.listLines();
    expect(lines).toEqual([
      expect.objectContaining({
        bankLineId: 'SBL000000000001',
        direction: 'debit',
        amountMinor: 250000n,
        currency: 'VES',
        valueDate: '2026-03-10',
        reference: now.railReference,
        raw: `2026-03-10;D;250000;VES;${now.railReference}`,
        origin: 'payout',
        paymentId: now.paymentId,
        visible: true,
        visibleAt: new Date('2026-03-10T23:59:59.000Z'),
      }),
      // Settled after midnight: the value date is the day the bank shows it.
      expect.objectContaining({
        bankLineId: 'SBL000000000002',
        direction: 'debit',
        valueDate: '2026-03-11',
        raw: `2026-03-11;D;250007;VES;${later.railReference}`,
        origin: 'payout',
        paymentId: later.paymentId,
        visibleAt: new Date('2026-03-11T00:00:01.000Z'),
      }),
      expect.objectContaining({
        bankLineId: 'SBL000000000003',
        direction: 'credit',
        valueDate: '2026-03-11',
        reference: later.railReference,
        raw: `2026-03-11;C;250007;VES;${later.railReference}`,
        origin: 'return',
        paymentId: later.paymentId,
      }),
    ]);
  });

  it('answers not_found for a reference never submitted', async () => {
    expect(await rail.query('SBXNEVER')).toEqual({ kind: 'not_found' });
    await rail.submit(transfer('PM', 150002n));
    expect(await rail.query('SBXNEVER')).toEqual({ kind: 'not_found' });
  });

  it('names itself as a simulated rail', () => {
    expect(rail.name).toBe('sandbox');
    expect(rail.simulated).toBe(true);
  });

  it('uses its own settle delay and bank code when given', async () => {
    const own = createSandboxRail({ bank, db: t.db, clock, settleMs: 10, ownBankCode: OTHER_BANK });
    const tr = transfer('CCE', 150000n, { bankCode: OTHER_BANK });
    expect(answer(await own.submit(tr))).toEqual(COMPLETED);
    const slow = transfer('CCE', 150003n);
    await own.submit(slow);
    clock.advance(10);
    expect(answer(await own.query(slow.railReference))).toEqual(COMPLETED);
    expect(await linesOf(slow.paymentId)).toEqual(DEBIT);
  });
});

describe('sandbox rail re-submission of a reference', () => {
  it('books nothing new and answers unknown', async () => {
    const tr = transfer('PM', 150000n);
    const source = bank.statementSource();
    expect(answer(await rail.submit(tr))).toEqual(COMPLETED);
    expect(answer(await rail.submit(tr))).toEqual(RECONCILING);
    // Even with other terms: the bank goes by the reference it has seen.
    expect(answer(await rail.submit({ ...tr, amountMinor: 990000n }))).toEqual(RECONCILING);
    clock.advance(SETTLE_MS);
    expect(await linesOf(tr.paymentId)).toEqual(DEBIT);
    expect(await source.balance('VES')).toBe(DEFAULT_VES_OPENING_MINOR - 150000n);
    expect(answer(await rail.query(tr.railReference))).toEqual(COMPLETED);
  });

  it('does not book a settling transfer twice', async () => {
    const tr = transfer('CCE', 150006n);
    expect(answer(await rail.submit(tr))).toEqual(AT_RAIL);
    clock.advance(SETTLE_MS / 2);
    expect(answer(await rail.submit(tr))).toEqual(RECONCILING);
    clock.advance(SETTLE_MS);
    expect(answer(await rail.submit(tr))).toEqual(RECONCILING);
    expect(await linesOf(tr.paymentId)).toEqual(DEBIT);
    // The first submission's settlement time still governs.
    expect(answer(await rail.query(tr.railReference))).toEqual(COMPLETED);
  });

  it('books once under concurrent submissions', async () => {
    const tr = transfer('PM', 150000n);
    const answers = await Promise.all(Array.from({ length: 8 }, () => rail.submit(tr)));
    const kinds = answers.map((a) => answer(a).kind).sort();
    expect(kinds).toEqual(['completed', ...Array(7).fill('unknown')]);
    expect(await linesOf(tr.paymentId)).toEqual(DEBIT);
  });

  it('in one batch takes the first of a reference and counts every other submission of it', async () => {
    const seen = transfer('PM', 150000n);
    await rail.submit(seen);
    const twice = transfer('PM', 150000n);
    const fresh = transfer('PM', 150000n);
    const answers = await rail.submitBatch!([twice, seen, twice, fresh, seen]);
    expect(answers.map(answer)).toEqual([COMPLETED, RECONCILING, RECONCILING, COMPLETED, RECONCILING]);
    const { rows } = await t.db.query<{ rail_reference: string; resubmissions: number }>(
      'SELECT rail_reference, resubmissions FROM sandbox_bank_transfers WHERE rail_reference = ANY ($1::text[])',
      [[seen.railReference, twice.railReference, fresh.railReference]],
    );
    const counts = new Map(rows.map((r) => [r.rail_reference, Number(r.resubmissions)]));
    expect(counts).toEqual(
      new Map([
        [seen.railReference, 2],
        [twice.railReference, 1],
        [fresh.railReference, 0],
      ]),
    );
    for (const tr of [seen, twice, fresh]) expect(await linesOf(tr.paymentId)).toEqual(DEBIT);
  });
});

describe('sandbox rail commits', () => {
  // The bank's own commit need not wait for the disk (migration 0026); the service's next commit on the same
  // connection must. The embedded database has a single session, so a setting that outlived the bank's
  // transaction would show here.
  it('leave the connection committing synchronously', async () => {
    await t.db.tx(async (q) => {
      await q.query('SELECT * FROM sandbox_submit_transfers($1::jsonb)', ['[]']);
      const inside = await q.query<{ synchronous_commit: string }>('SHOW synchronous_commit');
      expect(inside.rows[0]!.synchronous_commit).toBe('off');
    });
    await rail.submit(transfer('PM', 150000n));
    const after = await t.db.query<{ synchronous_commit: string }>('SHOW synchronous_commit');
    expect(after.rows[0]!.synchronous_commit).toBe('on');
  });
});

describe('sandbox rail when the bank is unreachable', () => {
  it('answers unknown, never failed', async () => {
    const broken = await openTestDb();
    const brokenBank = createSandboxBank({ db: broken.db, clock, settleMs: SETTLE_MS });
    const brokenRail = createSandboxRail({ bank: brokenBank, db: broken.db, clock });
    await broken.db.close();
    try {
      expect(answer(await brokenRail.submit(transfer('PM', 150001n)))).toEqual(RECONCILING);
      expect(answer(await brokenRail.query('SBXANY'))).toEqual(RECONCILING);
    } finally {
      await broken.cleanup();
    }
  });
});
