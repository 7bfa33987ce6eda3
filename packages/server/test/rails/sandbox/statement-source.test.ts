import fc from 'fast-check';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Db, Queryable } from '../../../src/db/db.ts';
import type { BankStatementLine, StatementSource } from '../../../src/rails/rail.ts';
import {
  createSandboxBank,
  createSandboxRail,
  DEFAULT_VES_OPENING_MINOR,
  type SandboxBank,
} from '../../../src/rails/sandbox/index.ts';
import { ManualClock } from '../../../src/shared/clock.ts';
import { withQuery } from '../../support/test-db.ts';
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

function setUp(statementPageSize?: number): void {
  clock = new ManualClock(START);
  bank = createSandboxBank({
    db: t.db,
    clock,
    settleMs: SETTLE_MS,
    ownBankCode: OWN_BANK,
    ...(statementPageSize === undefined ? {} : { statementPageSize }),
  });
  rail = createSandboxRail({ bank, db: t.db, clock });
}

beforeEach(async () => {
  await t.resetBank();
  setUp();
});

/** A reader that follows its cursor, as reconciliation does. */
function reader(source: StatementSource) {
  let cursor: string | null = null;
  return {
    async next(): Promise<BankStatementLine[]> {
      const page = await source.fetchSince(cursor);
      cursor = page.cursor;
      return page.lines;
    },
    cursor: () => cursor,
  };
}

const refs = (lines: BankStatementLine[]) => lines.map((l) => l.reference);

/** Lines of the statement this transaction has read so far (sequentially or through an index). */
async function linesRead(q: Queryable): Promise<number> {
  const { rows } = await q.query<{ n: string }>(
    `SELECT (coalesce(sum(seq_tup_read), 0) + coalesce(sum(idx_tup_fetch), 0))::text AS n
       FROM pg_stat_xact_user_tables WHERE relname = 'sandbox_bank_lines'`,
  );
  return Number(rows[0]!.n);
}

/**
 * The database, noting how many lines of the statement each call of the SQL function `fn` read: the source calls
 * each of its functions as one statement outside a transaction (its fetch, migration 0040; its balance, 0039), so
 * the call runs here inside a transaction of its own, where the counters before and after it are its own.
 */
function countingReadsOf(inner: Db, fn: string): Db & { reads: number[] } {
  const reads: number[] = [];
  return {
    ...withQuery(inner, async (sql, params) => {
      if (!sql.includes(`${fn}(`)) return inner.query(sql, params);
      return inner.tx(async (q) => {
        const before = await linesRead(q);
        const result = await q.query(sql, params);
        reads.push((await linesRead(q)) - before);
        return result as never;
      });
    }),
    reads,
  };
}

/** The bank's balance as the sum of every line visible by now: what `balance` answered before migration 0039. */
async function balanceBySum(currency: string): Promise<bigint> {
  const { rows } = await t.db.query<{ movements: string }>(
    `SELECT coalesce(sum(CASE WHEN direction = 'credit' THEN amount_minor ELSE -amount_minor END), 0)::text AS movements
       FROM sandbox_bank_lines WHERE currency = $1 AND visible_at <= $2`,
    [currency, clock.now()],
  );
  const opening = currency === 'VES' ? DEFAULT_VES_OPENING_MINOR : 0n;
  return opening + BigInt(rows[0]!.movements);
}

describe('sandbox statement source', () => {
  it('returns nothing and no cursor from an empty statement', async () => {
    expect(await bank.statementSource().fetchSince(null)).toEqual({ lines: [], cursor: null });
  });

  it('returns a line booked later but visible earlier, and the earlier booking when it shows', async () => {
    const settling = transfer('PM', 150003n);
    const instant = transfer('PM', 150000n);
    const r = reader(bank.statementSource());
    await rail.submit(settling);
    clock.advance(10);
    await rail.submit(instant);

    expect(refs(await r.next())).toEqual([instant.railReference]);
    const kept = r.cursor();
    expect(await r.next()).toEqual([]);
    // An empty page keeps the position.
    expect(r.cursor()).toBe(kept);

    clock.advance(SETTLE_MS);
    expect(refs(await r.next())).toEqual([settling.railReference]);
    expect(await r.next()).toEqual([]);
  });

  it('returns a line whose visible time is earlier than one already returned (clock set back)', async () => {
    const r = reader(bank.statementSource());
    ok(await bank.addLine({ direction: 'credit', amountMinor: 10n, reference: 'FIRST' }));
    expect(refs(await r.next())).toEqual(['FIRST']);
    clock.set(new Date(START - 60_000));
    ok(await bank.addLine({ direction: 'credit', amountMinor: 10n, reference: 'EARLIER' }));
    expect(refs(await r.next())).toEqual(['EARLIER']);
    expect(await r.next()).toEqual([]);
  });

  it('orders a page by visibility and delivers whole lines', async () => {
    const a = transfer('CCE', 150000n);
    const b = transfer('PM', 150000n);
    await rail.submit(a);
    clock.advance(1);
    await rail.submit(b);
    await bank.bookCredit({ amountMinor: 5n, currency: 'VES', reference: 'FUND' });
    clock.advance(SETTLE_MS);
    const page = await bank.statementSource().fetchSince(null);
    expect(refs(page.lines)).toEqual([b.railReference, 'FUND', a.railReference]);
    // The statement line carries exactly the interface's fields, nothing of the simulator's.
    expect(page.lines[0]).toEqual({
      bankLineId: 'SBL000000000002',
      direction: 'debit',
      amountMinor: 150000n,
      currency: 'VES',
      valueDate: '2026-03-10',
      reference: b.railReference,
      raw: `2026-03-10;D;150000;VES;${b.railReference}`,
    });
  });

  it('pages by the configured size without loss or repeat', async () => {
    await t.resetBank();
    setUp(2);
    for (let i = 0; i < 5; i++) ok(await bank.addLine({ direction: 'debit', amountMinor: 1n, reference: `L${i}` }));
    const r = reader(bank.statementSource());
    const pages: string[][] = [];
    for (let i = 0; i < 4; i++) pages.push(refs(await r.next()));
    expect(pages).toEqual([['L0', 'L1'], ['L2', 'L3'], ['L4'], []]);
  });

  it('gives statement positions to at most a page of lines per fetch, the first in visibility order', async () => {
    await t.resetBank();
    setUp(2);
    const settling = transfer('CCE', 150000n);
    await rail.submit(settling);
    for (let i = 0; i < 4; i++) ok(await bank.addLine({ direction: 'credit', amountMinor: 1n, reference: `C${i}` }));
    clock.advance(SETTLE_MS);
    const positioned = async () =>
      Number(
        (await t.db.query<{ n: string }>('SELECT count(release_seq)::text AS n FROM sandbox_bank_lines')).rows[0]!.n,
      );
    const r = reader(bank.statementSource());
    expect(refs(await r.next())).toEqual(['C0', 'C1']);
    // The backlog of five waits for the fetches that read it, instead of all being positioned by the first.
    expect(await positioned()).toBe(2);
    expect(refs(await r.next())).toEqual(['C2', 'C3']);
    expect(refs(await r.next())).toEqual([settling.railReference]);
    expect(await r.next()).toEqual([]);
    expect(await positioned()).toBe(5);
  });

  it('reads only the lines of the page, however long the statement', async () => {
    const watched = countingReadsOf(t.db, 'sandbox_fetch_statement');
    const watchedBank = createSandboxBank({ db: watched, clock, settleMs: SETTLE_MS, ownBankCode: OWN_BANK });
    for (let i = 0; i < 300; i++) ok(await bank.addLine({ direction: 'credit', amountMinor: 1n, reference: `R${i}` }));
    const r = reader(watchedBank.statementSource());
    expect(await r.next()).toHaveLength(300);
    ok(await bank.addLine({ direction: 'credit', amountMinor: 1n, reference: 'LAST' }));
    watched.reads.length = 0;
    expect(refs(await r.next())).toEqual(['LAST']);
    expect(refs(await r.next())).toEqual([]);
    // The due line and the page past the cursor are found through their indexes: a fetch reads a handful of lines
    // (the due line found and given its position, the highest position so far, the page), never the 300 before.
    expect(watched.reads).toHaveLength(2);
    for (const read of watched.reads) expect(read).toBeLessThanOrEqual(5);
  });

  it('answers the balance of every visible line, released or not, reading only the lines not yet released', async () => {
    await t.resetBank();
    setUp(2);
    const watched = countingReadsOf(t.db, 'sandbox_bank_movements');
    const source = createSandboxBank({
      db: watched,
      clock,
      settleMs: SETTLE_MS,
      ownBankCode: OWN_BANK,
      statementPageSize: 2,
    }).statementSource();
    const expectBalances = async () => {
      expect(await source.balance('VES')).toBe(await balanceBySum('VES'));
      expect(await source.balance('USD')).toBe(await balanceBySum('USD'));
    };
    for (let i = 0; i < 300; i++) ok(await bank.addLine({ direction: 'debit', amountMinor: 7n, reference: `D${i}` }));
    await bank.bookCredit({ amountMinor: 500n, currency: 'USD', reference: 'FUND-USD' });
    // Settles later: not in the balance until it shows.
    await rail.submit(transfer('CCE', 150000n));
    await expectBalances();
    // Part of the backlog released (a page at a time), part not.
    const r = reader(source);
    await r.next();
    await r.next();
    await expectBalances();
    while ((await r.next()).length > 0);
    await expectBalances();
    expect(await source.balance('VES')).toBe(DEFAULT_VES_OPENING_MINOR - 2100n);
    ok(await bank.addLine({ direction: 'credit', amountMinor: 11n, reference: 'LATE' }));
    await expectBalances();
    clock.advance(SETTLE_MS);
    await expectBalances();
    expect(await source.balance('VES')).toBe(DEFAULT_VES_OPENING_MINOR - 2100n + 11n - 150000n);
    while ((await r.next()).length > 0);
    watched.reads.length = 0;
    await expectBalances();
    // A statement of 303 lines, all released: the balance is read from the totals kept as lines are released.
    expect(watched.reads).toEqual([0, 0]);
  });

  it('serves independent readers each the whole statement', async () => {
    const source = bank.statementSource();
    const first = reader(source);
    const second = reader(source);
    ok(await bank.addLine({ direction: 'credit', amountMinor: 1n, reference: 'A' }));
    expect(refs(await first.next())).toEqual(['A']);
    ok(await bank.addLine({ direction: 'credit', amountMinor: 1n, reference: 'B' }));
    expect(refs(await second.next())).toEqual(['A', 'B']);
    expect(refs(await first.next())).toEqual(['B']);
  });

  it('loses no line to bookings committing while readers fetch', async () => {
    const r = reader(bank.statementSource());
    const seen: string[] = [];
    const fetchInto = async () => {
      for (const line of await r.next()) seen.push(line.bankLineId);
    };
    // Bounded: 40 bookings racing 10 fetches through one reader (fetches are serialised on its cursor).
    let chain = Promise.resolve();
    const fetches: Promise<void>[] = [];
    const bookings = Array.from({ length: 40 }, async (_, i) => {
      await rail.submit(transfer('PM', 150000n));
      if (i % 4 === 0) {
        chain = chain.then(fetchInto);
        fetches.push(chain);
      }
    });
    await Promise.all(bookings);
    await Promise.all(fetches);
    for (;;) {
      const before = seen.length;
      await fetchInto();
      if (seen.length === before) break;
    }
    expect(seen).toHaveLength(40);
    expect(new Set(seen).size).toBe(40);
  });

  it('refuses a malformed cursor', async () => {
    await expect(bank.statementSource().fetchSince('abc')).rejects.toThrow('malformed');
    await expect(bank.statementSource().fetchSince('-1')).rejects.toThrow('malformed');
  });

  it('never loses, repeats or shows early a line, whatever the interleaving', async () => {
    type Step =
      | { op: 'book'; amount: bigint; rail: 'PM' | 'CCE' }
      | { op: 'manual' }
      | { op: 'advance'; ms: number }
      | { op: 'fetch' };
    const step = fc.oneof(
      fc.record({
        op: fc.constant('book' as const),
        amount: fc.constantFrom(150000n, 150003n, 150004n, 150006n, 150007n, 150002n),
        rail: fc.constantFrom('PM' as const, 'CCE' as const),
      }),
      fc.record({ op: fc.constant('manual' as const) }),
      fc.record({ op: fc.constant('advance' as const), ms: fc.integer({ min: 0, max: SETTLE_MS + 5 }) }),
      fc.record({ op: fc.constant('fetch' as const) }),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 4, maxLength: 30, size: 'max' }), async (steps: Step[]) => {
        await t.resetBank();
        setUp(3);
        const r = reader(bank.statementSource());
        const seen: string[] = [];
        const drain = async () => {
          for (;;) {
            const lines = await r.next();
            if (lines.length === 0) return;
            for (const line of lines) {
              const booked = (await bank.listLines()).find((l) => l.bankLineId === line.bankLineId);
              expect(booked?.visible).toBe(true);
              seen.push(line.bankLineId);
            }
          }
        };
        let manual = 0;
        for (const s of steps) {
          if (s.op === 'book') await rail.submit(transfer(s.rail, s.amount));
          else if (s.op === 'manual')
            ok(await bank.addLine({ direction: 'debit', amountMinor: 1n, reference: `M${manual++}` }));
          else if (s.op === 'advance') clock.advance(s.ms);
          else await drain();
          expect(await bank.statementSource().balance('VES')).toBe(await balanceBySum('VES'));
        }
        await drain();
        expect(await bank.statementSource().balance('VES')).toBe(await balanceBySum('VES'));
        const visible = (await bank.listLines()).filter((l) => l.visible).map((l) => l.bankLineId);
        expect([...seen].sort()).toEqual([...visible].sort());
        expect(new Set(seen).size).toBe(seen.length);
      }),
      { numRuns: 25 },
    );
  });
});

function ok<T>(result: { ok: true; line: T } | { ok: false; error: string }): T {
  if (!result.ok) throw new Error(`expected a line, got ${result.error}`);
  return result.line;
}
