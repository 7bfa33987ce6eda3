import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db, Queryable } from '../../src/db/db.ts';
import { createFunding } from '../../src/fundings/service.ts';
import type { StatementSource } from '../../src/rails/rail.ts';
import { DEFAULT_VES_OPENING_MINOR } from '../../src/rails/sandbox/bank.ts';
import { ingestNextPage } from '../../src/reconciliation/ingest.ts';
import { ManualClock } from '../../src/shared/clock.ts';
import type { TestClient } from '../support/test-server.ts';
import { ledgerProblems, type ReconServer, reconciliationOver, startReconServer } from './support.ts';

/**
 * The balance check against a statement that another process ingests while it runs: the bank's balance is
 * read, then a funding commits and another node ingests its credit before this node reads the ledger. The
 * ledger then holds a credit the bank's figure does not; on a currency's first check that difference would
 * become the baseline for good (an unexplained difference an operator must clear by hand, for ever after).
 * And a funding that commits while the check reads the ledger's figures: they must all come from one moment.
 */

const FUND = 1_000_000_000n;
const RACING_FUND = 7_000_000n;

let r: ReconServer;
let clock: ManualClock;
let c: TestClient;

beforeAll(async () => {
  clock = new ManualClock(Date.UTC(2026, 2, 2, 12, 0, 0));
  r = await startReconServer({ clock });
  c = await r.server.newClient({ fundMinor: FUND });
});

afterAll(async () => {
  expect(await ledgerProblems(r.db)).toEqual([]);
  await r.stop();
});

/** A second node's reconciliation whose bank balance read of VES runs `meanwhile` once, just after it returns. */
function nodeWithRace(meanwhile: () => Promise<void>) {
  const real = r.server.running.domains.payments.rails.statements;
  let pending: (() => Promise<void>) | null = meanwhile;
  const statements: StatementSource = {
    ...real,
    async balance(currency) {
      const minor = await real.balance(currency);
      const hook = currency === 'VES' ? pending : null;
      if (hook !== null) {
        pending = null;
        await hook();
      }
      return minor;
    },
  };
  return reconciliationOver(r.server, { statements });
}

async function vesRow() {
  const { rows } = await r.db.query<{ baseline_minor: string | null; unexplained_minor: string | null }>(
    "SELECT baseline_minor, unexplained_minor FROM recon_balance WHERE currency = 'VES'",
  );
  return rows[0];
}

describe('a line ingested by another node between the bank read and the ledger read', () => {
  it('skips the check instead of taking the difference into the baseline; the next pass takes the true one', async () => {
    const { ctx, domains } = r.server.running;
    const racing = nodeWithRace(async () => {
      const f = await r.admin('POST', `/admin/v1/clients/${c.clientId}/fundings`, {
        amountMinor: RACING_FUND.toString(),
        reference: `race-${c.clientId}`,
      });
      expect(f.status).toBe(201);
      const other = await ingestNextPage({
        db: r.db,
        clock,
        source: domains.payments.rails.statements,
        logger: ctx.logger,
      });
      expect(other.kind).toBe('ingested');
    });
    clock.advance(200);
    const raced = await racing.reconcileOnce();
    expect(raced.balances.map((b) => b.currency)).not.toContain('VES');
    expect((await vesRow())?.baseline_minor ?? null).toBeNull();

    clock.advance(200);
    const next = await r.recon.reconcileOnce();
    expect(next.balances.find((b) => b.currency === 'VES')).toMatchObject({
      baselineMinor: DEFAULT_VES_OPENING_MINOR,
      unexplainedMinor: 0n,
    });
    const { rows } = await r.db.query<{ n: string }>(
      "SELECT count(*)::text AS n FROM recon_lines WHERE direction = 'credit' AND status = 'matched'",
    );
    expect(rows[0]!.n).toBe('2');
  });
});

/**
 * The database as the check's transaction sees it, where `meanwhile` runs once right after the first statement that
 * reads the ledger's figures, inside that transaction: to the statements after it, that is what a commit of another
 * connection at that instant looks like under READ COMMITTED, on either back-end.
 */
function dbWithCommitDuringFigures(inner: Db, meanwhile: (q: Queryable) => Promise<void>): Db {
  let pending: ((q: Queryable) => Promise<void>) | null = meanwhile;
  return {
    kind: inner.kind,
    query: (sql, params) => inner.query(sql, params),
    exec: (sql) => inner.exec(sql),
    close: () => inner.close(),
    tx: (fn, options) =>
      inner.tx(async (q) => {
        const watched: Queryable = {
          async query(sql, params) {
            const result = await q.query(sql, params);
            const hook = sql.includes('AS fundings') ? pending : null;
            if (hook !== null) {
              pending = null;
              await hook(q);
            }
            return result as never;
          },
          exec: (sql) => q.exec(sql),
        };
        return fn(watched);
      }, options),
  };
}

describe('a funding committed while the check reads the ledger', () => {
  it('counts in none of the figures or in all of them: the difference stays explained', async () => {
    const bank = r.server.running.domains.payments.rails.sandboxBank!;
    let funded = false;
    const db = dbWithCommitDuringFigures(r.db, async (q) => {
      // The funding's own code, its transaction being the one it lands in.
      const sameTx: Db = { ...r.db, query: (sql, params) => q.query(sql, params), tx: (fn) => fn(q) };
      const f = await createFunding(
        {
          db: sameTx,
          clock,
          onFunded: async (tq, funding) => {
            await bank.bookCredit(
              { amountMinor: funding.amountMinor, currency: funding.currency, reference: funding.reference },
              tq,
            );
          },
        },
        c.clientId,
        { amountMinor: RACING_FUND.toString(), reference: `during-figures-${c.clientId}` },
      );
      expect(f.kind).toBe('created');
      funded = true;
    });
    const node = reconciliationOver(r.server, { db });
    clock.advance(200);
    const pass = await node.reconcileOnce();
    expect(funded).toBe(true);
    expect(pass.balances.find((b) => b.currency === 'VES')).toMatchObject({
      baselineMinor: DEFAULT_VES_OPENING_MINOR,
      unexplainedMinor: 0n,
    });

    // The next pass reads the funding's credit and still finds nothing unexplained.
    clock.advance(200);
    const next = await r.recon.reconcileOnce();
    expect(next.balances.find((b) => b.currency === 'VES')).toMatchObject({ unexplainedMinor: 0n });
  });
});
