import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db, Queryable } from '../../src/db/db.ts';
import { CCE, newKey, PM, pay } from '../support/payments.ts';
import { withQuery } from '../support/test-db.ts';
import type { TestClient, TestServer } from '../support/test-server.ts';
import { startWrappedServer } from '../support/wrapped-server.ts';

/**
 * The money path's functions keep their plans for the life of a connection, made while the tables were nearly
 * empty (a fresh deployment, or the embedded database, which never analyzes). Those plans must still go straight
 * to the rows they need: a sequential scan, or an index read over all of a client's payments, costs more with
 * every payment ever made. Each call of a money-path function runs here in a transaction that reads the
 * connection's unreported table statistics (pg_stat_xact_user_tables) before and after it, so everything it read
 * is seen, on both databases.
 */

const MONEY_PATH = /\b(advance_payments|reserve_payments|book_payments|sandbox_submit_transfers|consume_nonces)\(/;

interface Call {
  fn: string;
  items: number;
  /** Tables the call scanned sequentially. */
  seqScanned: string[];
  /** Payment rows it read through an index. */
  paymentRowsRead: number;
  /** Entries it read from holds_open, the index of every hold still held. */
  openHoldsRead: number;
}

interface TableReads {
  seqScans: number;
  indexRows: number;
}

async function tableReads(q: Queryable): Promise<Map<string, TableReads>> {
  const { rows } = await q.query<{ relname: string; seq_scan: string; idx_tup_fetch: string | null }>(
    `SELECT relname, seq_scan::text, idx_tup_fetch::text FROM pg_stat_xact_user_tables
     UNION ALL SELECT 'holds_open', '0', pg_stat_get_xact_tuples_returned('holds_open'::regclass)::text`,
  );
  return new Map(
    rows.map((r) => [r.relname, { seqScans: Number(r.seq_scan), indexRows: Number(r.idx_tup_fetch ?? 0) }]),
  );
}

/** The items of a call: a step's reserves and bookings together (payments/advance.ts). */
function itemsOf(fn: string, params: readonly unknown[]): number {
  const count = (p: unknown) => (Array.isArray(p) ? p.length : (JSON.parse(String(p)) as unknown[]).length);
  return count(params[0]) + (fn === 'advance_payments' ? count(params[2]) : 0);
}

function withReadWatch(inner: Db): Db & { calls: Call[] } {
  const calls: Call[] = [];
  const watched = withQuery(inner, async (sql, params) => {
    const fn = MONEY_PATH.exec(sql)?.[1];
    if (fn === undefined) return inner.query(sql, params);
    return inner.tx(async (q) => {
      // The counters hold whatever this connection has not yet reported: the call's own reads are the change.
      const before = await tableReads(q);
      const result = await q.query(sql, params);
      const after = await tableReads(q);
      const change = (t: string, k: keyof TableReads): number => (after.get(t)?.[k] ?? 0) - (before.get(t)?.[k] ?? 0);
      calls.push({
        fn,
        items: itemsOf(fn, params ?? []),
        seqScanned: [...after.keys()].filter((t) => change(t, 'seqScans') > 0).sort(),
        paymentRowsRead: change('payments', 'indexRows'),
        openHoldsRead: change('holds_open', 'indexRows'),
      });
      return result as never;
    });
  });
  return { ...watched, calls };
}

describe('plans of the money path', () => {
  let server: TestServer;
  let watched: ReturnType<typeof withReadWatch>;
  let client: TestClient;

  let close: (() => Promise<void>) | undefined;

  beforeAll(async () => {
    ({ server, close } = await startWrappedServer(
      (inner) => {
        watched = withReadWatch(inner);
        return watched;
      },
      // Interbank payments stay pending (their holds held) for the whole test, whatever its speed.
      { env: { DISPERSA_SANDBOX_SETTLE_MS: '3600000' } },
    ));
    client = await server.newClient({ fundMinor: 10_000_000_000n });
  }, 60_000);
  afterAll(() => close?.());

  it('go straight to their rows, however small the tables were when the plans were made', async () => {
    // Completed, failed at the bank, refused by a rule, pending interbank: every branch of reserve and booking.
    const requests: [string, Record<string, unknown>, number][] = [
      ['10000', PM, 201],
      ['10001', PM, 201],
      ['10000', CCE, 201],
      ['999999999999', PM, 422],
    ];
    const round = async (): Promise<void> => {
      for (const [amount, destination, status] of requests) {
        expect((await pay(client, amount, destination, newKey('plan'))).status).toBe(status);
      }
    };
    // The first calls plan on nearly empty tables; PL/pgSQL keeps a generic plan from the sixth call on.
    for (let i = 0; i < 4; i++) await round();
    // A history for the client, which a lookup by the client's id alone would read through.
    for (let i = 0; i < 12; i++) await round();
    watched.calls.length = 0;
    for (let i = 0; i < 2; i++) await round();

    // One request at a time: each step reserves or books, never both (advance_payments calls the same two).
    expect([...new Set(watched.calls.map((c) => c.fn))].sort()).toEqual([
      'book_payments',
      'reserve_payments',
      'sandbox_submit_transfers',
    ]);
    expect(watched.calls.filter((c) => c.seqScanned.length > 0)).toEqual([]);
    // Booking reads each of its payments a few times (its lock, its read, its update, a failure its balance);
    // reserve reads none. A step counts both.
    expect(watched.calls.filter((c) => c.paymentRowsRead > 4 * c.items)).toEqual([]);
    // Holds are found by their payment: a read of the held-holds index grows with every payment still pending.
    const { rows } = await server.testDb.db.query<{ n: string }>(
      `SELECT count(*)::text AS n FROM holds WHERE status = 'held'`,
    );
    expect(Number(rows[0]!.n)).toBeGreaterThan(8);
    expect(watched.calls.filter((c) => c.openHoldsRead > 0)).toEqual([]);
  });
});
