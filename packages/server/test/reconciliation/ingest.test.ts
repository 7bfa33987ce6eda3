import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { GatewayError } from '../../src/rails/gateway/statement-source.ts';
import type { BankStatementLine, StatementPage, StatementSource } from '../../src/rails/rail.ts';
import { ingestNextPage, readCursor } from '../../src/reconciliation/ingest.ts';
import { rawHashOf } from '../../src/reconciliation/model.ts';
import { listParam, packRows, packRowsInSlices } from '../../src/reconciliation/packed.ts';
import { ManualClock } from '../../src/shared/clock.ts';
import { createTestDb, type TestDb } from '../support/test-db.ts';

/**
 * Statement ingestion against a statement source of the test's own (the boundary to the bank): idempotent on the
 * bank's line id, a source that fails is retried without losing its place, pages read ahead into one
 * transaction, and a page another runner stored first is dropped.
 */

let testDb: TestDb;
const clock = new ManualClock(Date.UTC(2026, 1, 1));
const warnings: string[] = [];
const logger = {
  warn: (_obj: object, msg: string) => void warnings.push(msg),
  error: (_obj: object, msg: string) => void warnings.push(msg),
};

beforeAll(async () => {
  testDb = await createTestDb();
});
afterAll(async () => {
  await testDb.close();
});
beforeEach(async () => {
  await testDb.db.query('DELETE FROM recon_exceptions');
  await testDb.db.query('DELETE FROM recon_lines');
  await testDb.db.query('DELETE FROM recon_sources');
  warnings.length = 0;
});

function line(n: number, direction: 'debit' | 'credit' = 'debit', raw?: string): BankStatementLine {
  return {
    bankLineId: `T${n}`,
    direction,
    amountMinor: BigInt(100 + n),
    currency: 'VES',
    valueDate: '2026-02-01',
    reference: `NOBODY-${n}`,
    raw: raw ?? `line ${n}`,
  };
}

/** A statement as a bank serves it: pages of `pageSize` after a numeric cursor; `failAt` throws on those calls. */
function source(lines: BankStatementLine[], options: { pageSize?: number; failAt?: number[] } = {}) {
  let calls = 0;
  const s: StatementSource & { calls(): number } = {
    name: 'test-bank',
    calls: () => calls,
    async fetchSince(cursor: string | null): Promise<StatementPage> {
      calls++;
      if (options.failAt?.includes(calls)) throw new GatewayError('transport', 'connection reset');
      const from = cursor === null ? 0 : Number(cursor);
      const page = lines.slice(from, from + (options.pageSize ?? 2));
      return { lines: page, cursor: page.length === 0 ? cursor : String(from + page.length) };
    },
    async balance() {
      return 0n;
    },
  };
  return s;
}

async function stored(): Promise<{ bank_line_id: string; status: string; exception_kind: string | null }[]> {
  const { rows } = await testDb.db.query<{ bank_line_id: string; status: string; exception_kind: string | null }>(
    'SELECT bank_line_id, status, exception_kind FROM recon_lines ORDER BY id',
  );
  return rows;
}

describe('statement ingestion', () => {
  it('reads pages ahead into one transaction and stores each line with its raw hash', async () => {
    const src = source([line(1), line(2), line(3), line(4), line(5)]);
    const r = await ingestNextPage({ db: testDb.db, clock, source: src, logger, maxBatchLines: 4 });
    // Stopped at the most lines a batch takes, not at the statement's end.
    expect(r).toMatchObject({ kind: 'ingested', atEnd: false, summary: { lines: 4, fresh: 4, exceptions: 4 } });
    expect(await readCursor(testDb.db, 'test-bank')).toBe('4');
    const again = await ingestNextPage({ db: testDb.db, clock, source: src, logger, maxBatchLines: 4 });
    expect(again).toMatchObject({ kind: 'ingested', atEnd: true, summary: { lines: 1 } });
    expect(await ingestNextPage({ db: testDb.db, clock, source: src, logger })).toEqual({
      kind: 'caught_up',
      cursor: '5',
    });
    expect((await stored()).map((l) => l.bank_line_id)).toEqual(['T1', 'T2', 'T3', 'T4', 'T5']);
    const { rows } = await testDb.db.query<{ raw_hash: string }>(
      "SELECT encode(raw_hash, 'hex') AS raw_hash FROM recon_lines WHERE bank_line_id = 'T1'",
    );
    expect(rows[0]!.raw_hash).toBe(rawHashOf('line 1'));
  });

  it('lets the event loop turn between reading a batch and storing it', async () => {
    // A source that answers without I/O, as the sandbox bank does on the embedded database: the callback below
    // stands for a request's socket read, which must not wait for the storing transaction as well.
    const inner = source([line(1), line(2)]);
    const events: string[] = [];
    const src = {
      ...inner,
      async fetchSince(cursor: string | null) {
        const page = await inner.fetchSince(cursor);
        if (page.lines.length > 0) setImmediate(() => events.push('turn'));
        return page;
      },
    };
    const db = {
      ...testDb.db,
      tx: ((fn, options) => {
        events.push('store');
        return testDb.db.tx(fn, options);
      }) as typeof testDb.db.tx,
    };
    const r = await ingestNextPage({ db, clock, source: src, logger });
    expect(r).toMatchObject({ kind: 'ingested', summary: { lines: 2 } });
    expect(events).toEqual(['turn', 'store']);
  });

  it('is idempotent: a line delivered again (same bank id) is stored once and decided once', async () => {
    const lines = [line(1), line(2)];
    await ingestNextPage({ db: testDb.db, clock, source: source(lines), logger });
    // The bank sends the same lines again, and one within a page twice.
    await testDb.db.query('UPDATE recon_sources SET cursor = NULL');
    const r = await ingestNextPage({
      db: testDb.db,
      clock,
      source: source([...lines, line(2), line(3)], { pageSize: 9 }),
      logger,
    });
    expect(r).toMatchObject({ kind: 'ingested', summary: { lines: 4, fresh: 1 } });
    expect((await stored()).map((l) => l.bank_line_id)).toEqual(['T1', 'T2', 'T3']);
    const { rows } = await testDb.db.query<{ n: string }>('SELECT count(*)::text AS n FROM recon_exceptions');
    expect(rows[0]!.n).toBe('3');
  });

  it('keeps a byte-identical second debit with its own bank id, as a double debit', async () => {
    const r = await ingestNextPage({
      db: testDb.db,
      clock,
      source: source([line(1, 'debit', 'same bytes'), line(2, 'debit', 'same bytes')]),
      logger,
    });
    expect(r.kind).toBe('ingested');
    expect(await stored()).toEqual([
      { bank_line_id: 'T1', status: 'exception', exception_kind: 'orphan_debit' },
      { bank_line_id: 'T2', status: 'exception', exception_kind: 'double_debit' },
    ]);
    // And across transactions too.
    await ingestNextPage({
      db: testDb.db,
      clock,
      source: source([line(1), line(2), line(3, 'debit', 'same bytes')]),
      logger,
    });
    expect((await stored()).at(-1)).toEqual({
      bank_line_id: 'T3',
      status: 'exception',
      exception_kind: 'double_debit',
    });
  });

  it('stores a reference carrying the packing separators exactly (the batch goes the slower way)', async () => {
    const odd = { ...line(1, 'credit'), reference: 'REF\x1fWITH\x1eSEPARATORS\ttab' };
    const r = await ingestNextPage({ db: testDb.db, clock, source: source([odd, line(2)]), logger });
    expect(r).toMatchObject({ kind: 'ingested', summary: { fresh: 2 } });
    const { rows } = await testDb.db.query<{ reference: string; exception_kind: string }>(
      'SELECT reference, exception_kind FROM recon_lines ORDER BY id',
    );
    expect(rows).toEqual([
      { reference: odd.reference, exception_kind: 'unfunded_credit' },
      { reference: 'NOBODY-2', exception_kind: 'orphan_debit' },
    ]);
    expect(packRows([['a', 'b\x1fc']])).toBeNull();
    expect(packRows([['a', null]])).toBe('a\x1f');
    // In slices (a batch of thousands): the same text, and null as soon as any slice has a separator.
    const packable = Array.from({ length: 7 }, (_, i) => [`L${i}`, i % 2 === 0 ? null : 'x']);
    expect(await packRowsInSlices(packable, 3)).toBe(packRows(packable));
    expect(await packRowsInSlices([...packable, ['a', 'b\x1ec']], 3)).toBeNull();
    expect(await packRowsInSlices([['a', 'b'], ['c']], 1)).toBeNull();
    expect(await packRowsInSlices([])).toBe('');
    expect(listParam(['x\x1ey']).value).toEqual(['x\x1ey']);
    expect(listParam(['x', 'y']).value).toBe('x\x1ey');
    expect(listParam(['x', '']).value).toEqual(['x', '']);
  });

  it('a source that fails is logged and read again next time from the same place', async () => {
    const src = source([line(1), line(2), line(3)], { failAt: [1, 3] });
    expect(await ingestNextPage({ db: testDb.db, clock, source: src, logger })).toEqual({ kind: 'unavailable' });
    expect(warnings).toEqual(['statement source unavailable; retrying next cycle']);
    expect(await stored()).toEqual([]);
    expect(await readCursor(testDb.db, 'test-bank')).toBeNull();
    // Second call: the first page comes, the read-ahead fails; what came is stored, the rest is read next time.
    const r = await ingestNextPage({ db: testDb.db, clock, source: src, logger });
    expect(r).toMatchObject({ kind: 'ingested', summary: { lines: 2 } });
    expect(await ingestNextPage({ db: testDb.db, clock, source: src, logger })).toMatchObject({
      kind: 'ingested',
      summary: { lines: 1 },
    });
    expect((await stored()).map((l) => l.bank_line_id)).toEqual(['T1', 'T2', 'T3']);
  });

  it('drops a page another runner stored first (the cursor moved meanwhile)', async () => {
    const lines = [line(1), line(2), line(3), line(4)];
    const slow = source(lines, { pageSize: 9 });
    const original = slow.fetchSince.bind(slow);
    let release: () => void = () => {};
    const gate = new Promise<void>((r) => {
      release = r;
    });
    // The first runner reads its page, then waits while a second runner reads and stores the same page.
    slow.fetchSince = async (cursor) => {
      const page = await original(cursor);
      await gate;
      return page;
    };
    const first = ingestNextPage({ db: testDb.db, clock, source: slow, logger });
    await new Promise((r) => setTimeout(r, 20));
    const second = await ingestNextPage({ db: testDb.db, clock, source: source(lines, { pageSize: 9 }), logger });
    expect(second.kind).toBe('ingested');
    release();
    expect(await first).toEqual({ kind: 'raced' });
    expect((await stored()).map((l) => l.bank_line_id)).toEqual(['T1', 'T2', 'T3', 'T4']);
  });
});
