import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postEntry } from '../../src/ledger/ledger.ts';
import { DEFAULT_VES_OPENING_MINOR } from '../../src/rails/sandbox/bank.ts';
import { ManualClock } from '../../src/shared/clock.ts';
import { scrape } from '../support/metrics.ts';
import { balanceOf, CCE, CCE_SAME_BANK, PM, pay } from '../support/payments.ts';
import type { TestClient } from '../support/test-server.ts';
import {
  allExceptions,
  entriesOf,
  eventStatesOf,
  ledgerProblems,
  type ReconServer,
  reconLinesOf,
  startReconServer,
} from './support.ts';

/**
 * Every sandbox outcome through to its final state and balance, and every exception kind provoked through the
 * sandbox bank controls, on the real service with a manual clock; reconciliation runs as one deterministic
 * pass after each move of the clock.
 */

const SETTLE_MS = 2000;
const BUDGET_S = 60;
const FUND = 1_000_000_000n;

let r: ReconServer;
let clock: ManualClock;
let c: TestClient;

beforeAll(async () => {
  clock = new ManualClock(Date.UTC(2026, 2, 2, 12, 0, 0));
  r = await startReconServer({
    clock,
    env: {
      DISPERSA_SANDBOX_SETTLE_MS: String(SETTLE_MS),
      DISPERSA_UNKNOWN_BUDGET_SECONDS: String(BUDGET_S),
    },
  });
  c = await r.server.newClient({ fundMinor: FUND });
});

afterAll(async () => {
  expect(await ledgerProblems(r.db)).toEqual([]);
  await r.stop();
});

/** Moves the clock and runs one reconciliation pass. */
async function pass(advanceMs = 200) {
  clock.advance(advanceMs);
  return r.recon.reconcileOnce();
}

async function payment(id: string) {
  const res = await c.api.get(`/v2/payments/${id}`);
  return res.body.payload;
}

async function adminPayment(id: string) {
  const res = await r.admin('GET', `/admin/v1/payments?clientId=${c.clientId}&limit=100`);
  return res.body.payload.data.find((p: any) => p.id === id);
}

async function bankLinesOf(paymentId: string) {
  const res = await r.admin('GET', '/admin/v1/sandbox/bank/lines');
  return res.body.payload.data.filter((l: any) => l.paymentId === paymentId);
}

async function exceptionsOf(filter: (e: any) => boolean) {
  return (await allExceptions(r)).filter(filter);
}

async function vesBalanceRow() {
  const { rows } = await r.db.query<{ baseline_minor: string; unexplained_minor: string }>(
    "SELECT baseline_minor, unexplained_minor FROM recon_balance WHERE currency = 'VES'",
  );
  return rows[0];
}

describe('the first pass', () => {
  it('matches the funding credit and takes the opening balance as the baseline', async () => {
    const first = await pass();
    const ves = first.balances.find((b) => b.currency === 'VES');
    expect(ves).toMatchObject({ baselineMinor: DEFAULT_VES_OPENING_MINOR, unexplainedMinor: 0n });
    const { rows } = await r.db.query<{ status: string; match_kind: string }>(
      "SELECT status, match_kind FROM recon_lines WHERE direction = 'credit'",
    );
    expect(rows).toEqual([{ status: 'matched', match_kind: 'funding' }]);
    expect(await allExceptions(r)).toEqual([]);
  });
});

describe('every magic amount to its final state and balance', () => {
  it('any other ending: completed at once; reconciliation confirms its one debit', async () => {
    const before = await balanceOf(c);
    const res = await pay(c, '150000', PM);
    expect(res.body.payload.state).toBe('completed');
    await pass();
    const id = res.body.payload.id;
    expect(await reconLinesOf(r.db, id)).toEqual(['debit/matched/payout/booked']);
    expect(await entriesOf(r.db, id)).toEqual(['payout']);
    expect(await balanceOf(c)).toBe(before - 150000n);
    const { rows } = await r.db.query('SELECT 1 FROM recon_debit_watch WHERE payment_id = $1', [id]);
    expect(rows).toHaveLength(0);
  });

  for (const [ending, what, destination] of [
    ['03', 'no answer but the money moved', PM],
    ['04', 'the bank reports a duplicate', PM],
    ['06', 'CCE in flight at the clearing house', CCE],
  ] as const) {
    it(`${ending} (${what}) → completed, debited once`, async () => {
      const before = await balanceOf(c);
      const amount = `2000${ending}`;
      const res = await pay(c, amount, destination);
      const id = res.body.payload.id;
      expect(res.body.payload.state).toBe('unknown');
      await pass();
      expect((await payment(id)).state).toBe('unknown');
      await pass(SETTLE_MS);
      expect(await payment(id)).toMatchObject({ state: 'completed', subStatus: null, failureCode: null });
      await pass();
      expect(await balanceOf(c)).toBe(before - BigInt(amount));
      expect(await entriesOf(r.db, id)).toEqual(['payout']);
      expect(await reconLinesOf(r.db, id)).toEqual(['debit/matched/payout/booked']);
      expect((await bankLinesOf(id)).filter((l: any) => l.direction === 'debit')).toHaveLength(1);
      const events = await eventStatesOf(r.db, id);
      expect(events.at(-1)).toBe('completed');
      expect(events.filter((e) => e === 'completed')).toHaveLength(1);
    });
  }

  it('CCE 07 → failed with the money back, nothing debited', async () => {
    const before = await balanceOf(c);
    const res = await pay(c, '300007', CCE);
    const id = res.body.payload.id;
    expect(res.body.payload).toMatchObject({ state: 'unknown', subStatus: 'at_rail' });
    expect(await balanceOf(c)).toBe(before - 300007n);
    await pass(SETTLE_MS);
    const done = await payment(id);
    expect(done).toMatchObject({ state: 'failed', subStatus: 'declined' });
    expect(['returned', 'returned_by_clearing_house']).toContain(done.failureCode);
    await pass();
    expect(await balanceOf(c)).toBe(before);
    expect(await entriesOf(r.db, id)).toEqual([]);
    expect(await reconLinesOf(r.db, id)).toEqual(['debit/matched/payout/unbooked', 'credit/matched/return/unbooked']);
    expect(await eventStatesOf(r.db, id)).toEqual(['unknown/at_rail', 'failed/declined']);
    expect(await exceptionsOf((e) => e.paymentId === id)).toEqual([]);
  });

  it('02 → under_review once the budget runs out; the operator resolves it', async () => {
    const before = await balanceOf(c);
    const res = await pay(c, '400002', PM);
    const id = res.body.payload.id;
    await pass(SETTLE_MS);
    await pass((BUDGET_S * 1000) / 2);
    expect(await payment(id)).toMatchObject({ state: 'unknown', subStatus: 'reconciling' });
    await pass((BUDGET_S * 1000) / 2);
    expect(await payment(id)).toMatchObject({ state: 'unknown', subStatus: 'under_review' });
    expect(await balanceOf(c)).toBe(before - 400002n);
    const listed = await r.admin('GET', '/admin/v1/payments?state=unknown&subStatus=under_review');
    expect(listed.body.payload.data.map((p: any) => p.id)).toContain(id);

    const resolved = await r.admin('POST', `/admin/v1/payments/${id}/resolve`, {
      outcome: 'failed',
      note: 'bank confirmed by phone: never executed',
    });
    expect(resolved.status).toBe(200);
    expect(resolved.body.payload).toMatchObject({ state: 'failed', failureCode: 'resolved_by_operator' });
    expect(await balanceOf(c)).toBe(before);
    expect(await eventStatesOf(r.db, id)).toEqual(['unknown/reconciling', 'unknown/under_review', 'failed']);
    const audit = await r.db.query<{ outcome: string; note: string; resolved_by: string }>(
      'SELECT outcome, note, resolved_by FROM payment_resolutions WHERE payment_id = $1',
      [id],
    );
    expect(audit.rows).toEqual([
      { outcome: 'failed', note: 'bank confirmed by phone: never executed', resolved_by: 'operator' },
    ]);
    await pass();
    expect((await payment(id)).state).toBe('failed');
  });

  it('an interbank CCE transfer (pending) completes once, whoever sees the settlement first', async () => {
    const before = await balanceOf(c);
    const res = await pay(c, '500000', CCE);
    const id = res.body.payload.id;
    expect(res.body.payload.state).toBe('pending');
    await pass(SETTLE_MS);
    await pass();
    expect((await payment(id)).state).toBe('completed');
    expect(await balanceOf(c)).toBe(before - 500000n);
    expect(await entriesOf(r.db, id)).toEqual(['payout']);
    expect(await reconLinesOf(r.db, id)).toEqual(['debit/matched/payout/booked']);
  });
});

describe('money returned after the debit was matched: the payout is reversed', () => {
  it('VES: completed → failed (declined, returned), the client credited back exactly', async () => {
    const before = await balanceOf(c);
    const res = await pay(c, '123400', CCE_SAME_BANK);
    const id = res.body.payload.id;
    expect(res.body.payload.state).toBe('completed');
    await pass();
    expect(await balanceOf(c)).toBe(before - 123400n);
    const { railReference } = await adminPayment(id);
    const usedToday = async () => {
      const { rows } = await r.db.query<{ used: string }>(
        "SELECT coalesce(sum(used_minor), 0)::text AS used FROM key_daily_usage WHERE key_id = $1 AND rail = 'CCE'",
        [c.keyId],
      );
      return BigInt(rows[0]!.used);
    };
    const usedBefore = await usedToday();
    const line = await r.admin('POST', '/admin/v1/sandbox/bank/lines', {
      direction: 'credit',
      amountMinor: '123400',
      reference: railReference,
    });
    expect(line.status).toBe(201);
    await pass();
    expect(await payment(id)).toMatchObject({ state: 'failed', subStatus: 'declined', failureCode: 'returned' });
    expect(await balanceOf(c)).toBe(before);
    // Like any failed payment it no longer counts against the key's daily limit.
    expect(await usedToday()).toBe(usedBefore - 123400n);
    expect(await entriesOf(r.db, id)).toEqual(['payout', 'payout_reversal']);
    expect(await reconLinesOf(r.db, id)).toEqual(['debit/matched/payout/booked', 'credit/matched/return/booked']);
    expect(await eventStatesOf(r.db, id)).toEqual(['completed', 'failed/declined']);
    // A second return of the same money is not the client's: a person looks at it.
    await r.admin('POST', '/admin/v1/sandbox/bank/lines', {
      direction: 'credit',
      amountMinor: '123400',
      reference: railReference,
    });
    await pass();
    const second = await exceptionsOf((e) => e.paymentId === id);
    expect(second.map((e) => [e.kind, e.details.reason])).toEqual([['unfunded_credit', 'second_return']]);
    expect(await balanceOf(c)).toBe(before);
  });

  it('USD: the reversal goes back through the FX position and returns exactly the source amount', async () => {
    const usd = await r.server.newClient({ currency: 'USD', fundMinor: 100_000n });
    const rate = await r.admin('POST', '/admin/v1/rates', {
      base: 'USD',
      rate: '36.5',
      expiresAt: new Date(clock.now().getTime() + 86_400_000).toISOString(),
    });
    expect(rate.status).toBe(201);
    const res = await pay(usd, '365000', PM);
    expect(res.body.payload).toMatchObject({ state: 'completed', sourceCurrency: 'USD' });
    const source = BigInt(res.body.payload.sourceAmountMinor);
    expect(await balanceOf(usd)).toBe(100_000n - source);
    await pass();
    const { railReference } = (await r.admin('GET', `/admin/v1/payments?clientId=${usd.clientId}`)).body.payload
      .data[0];
    await r.admin('POST', '/admin/v1/sandbox/bank/lines', {
      direction: 'credit',
      amountMinor: '365000',
      reference: railReference,
    });
    await pass();
    expect(await balanceOf(usd)).toBe(100_000n);
    const { rows } = await r.db.query<{ account_id: string; total: string }>(
      `SELECT p.account_id, sum(p.amount_minor)::text AS total FROM postings p JOIN journal_entries e ON e.id = p.entry_id
        WHERE e.payment_id = $1 GROUP BY p.account_id ORDER BY p.account_id`,
      [res.body.payload.id],
    );
    // Payout and reversal cancel on every account they touched.
    expect(rows.map((x) => x.total)).toEqual(rows.map(() => '0'));
    expect(rows.map((x) => x.account_id)).toEqual(['bank:VES', `client:${usd.clientId}:USD`, 'fx:USD', 'fx:VES']);
  });
});

describe('exceptions provoked through the sandbox bank controls; no balance touched', () => {
  it('orphan_debit: a debit no payment owns', async () => {
    const before = await balanceOf(c);
    const line = await r.admin('POST', '/admin/v1/sandbox/bank/lines', {
      direction: 'debit',
      amountMinor: '777',
      reference: 'NOBODY-1',
    });
    await pass();
    const [e] = await exceptionsOf((x) => x.bankLines[0]?.bankLineId === line.body.payload.bankLineId);
    expect(e).toMatchObject({
      kind: 'orphan_debit',
      status: 'open',
      payment: null,
      amountMinor: '777',
      currency: 'VES',
      details: { reason: 'no_owner' },
    });
    expect(e.bankLines).toEqual([
      expect.objectContaining({ direction: 'debit', amountMinor: '777', reference: 'NOBODY-1', status: 'exception' }),
    ]);
    expect(await balanceOf(c)).toBe(before);
  });

  it('unfunded_credit: a credit with no funding record is never matched automatically', async () => {
    const line = await r.admin('POST', '/admin/v1/sandbox/bank/lines', {
      direction: 'credit',
      amountMinor: '5000',
      reference: `fund-${c.clientId}`.slice(0, 8),
    });
    // The client's real funding reference, a second time: the funding is matched already.
    const again = await r.admin('POST', '/admin/v1/sandbox/bank/lines', {
      direction: 'credit',
      amountMinor: FUND.toString(),
      reference: `fund-${c.clientId}`,
    });
    const before = await balanceOf(c);
    await pass();
    const found = await exceptionsOf((x) =>
      [line.body.payload.bankLineId, again.body.payload.bankLineId].includes(x.bankLines[0]?.bankLineId),
    );
    expect(found.map((x) => [x.kind, x.details.reason]).sort()).toEqual([
      ['unfunded_credit', 'funding_already_matched'],
      ['unfunded_credit', 'no_funding'],
    ]);
    expect(await balanceOf(c)).toBe(before);
  });

  it('double_debit: a byte-identical second debit with its own bank id', async () => {
    const res = await pay(c, '222200', PM);
    const id = res.body.payload.id;
    const [original] = (await bankLinesOf(id)).filter((l: any) => l.direction === 'debit');
    const copy = await r.admin('POST', '/admin/v1/sandbox/bank/lines', { duplicateOf: original.bankLineId });
    expect(copy.status).toBe(201);
    expect(copy.body.payload.raw).toBe(original.raw);
    const before = await balanceOf(c);
    await pass();
    const [e] = await exceptionsOf((x) => x.kind === 'double_debit' && x.paymentId === id);
    expect(e).toMatchObject({ status: 'open', details: { reason: 'byte_identical' } });
    expect(e.bankLines.map((l: any) => l.bankLineId)).toEqual([copy.body.payload.bankLineId]);
    expect(e.relatedBankLines.map((l: any) => l.bankLineId)).toEqual([original.bankLineId]);
    expect(e.payment).toMatchObject({ id, state: 'completed' });
    expect(await balanceOf(c)).toBe(before);
    expect(await entriesOf(r.db, id)).toEqual(['payout']);
  });

  it('missing_debit: a payout the rail confirmed with no real debit within the grace period', async () => {
    const res = await pay(c, '333303', PM);
    const id = res.body.payload.id;
    const suppressed = await r.admin('POST', '/admin/v1/sandbox/bank/suppress-debit', { paymentId: id });
    expect(suppressed.body.payload.removedLineIds).toHaveLength(1);
    await pass(SETTLE_MS);
    expect((await payment(id)).state).toBe('completed');
    const before = await balanceOf(c);
    await pass((BUDGET_S * 1000) / 2);
    expect(await exceptionsOf((x) => x.paymentId === id)).toEqual([]);
    await pass((BUDGET_S * 1000) / 2 + 1);
    const [e] = await exceptionsOf((x) => x.paymentId === id);
    expect(e).toMatchObject({ kind: 'missing_debit', status: 'open', bankLines: [], amountMinor: '333303' });
    expect(e.payment).toMatchObject({ id, state: 'completed' });
    await pass();
    expect(await exceptionsOf((x) => x.paymentId === id)).toHaveLength(1);
    expect(await balanceOf(c)).toBe(before);
    // The balance check knows about it: no unexplained difference.
    expect((await vesBalanceRow())!.unexplained_minor).toBe('0');

    // The debit shows up after all: it is matched, and the exception closes itself, saying why.
    const { railReference } = await adminPayment(id);
    await r.admin('POST', '/admin/v1/sandbox/bank/lines', {
      direction: 'debit',
      amountMinor: '333303',
      reference: railReference,
    });
    await pass();
    expect(await reconLinesOf(r.db, id)).toEqual(['debit/matched/payout/booked']);
    const [closed] = await exceptionsOf((x) => x.paymentId === id);
    expect(closed).toMatchObject({ status: 'resolved', resolvedBy: 'reconciliation' });
    expect(closed.note).toContain('arrived late');
    expect(await balanceOf(c)).toBe(before);
    expect((await vesBalanceRow())!.unexplained_minor).toBe('0');
  });

  it('a debit of a failed payment: awaits its return, then orphan_debit when none comes', async () => {
    const res = await pay(c, '444405', PM);
    const id = res.body.payload.id;
    expect(res.body.payload.state).toBe('failed');
    const { railReference } = await adminPayment(id);
    await r.admin('POST', '/admin/v1/sandbox/bank/lines', {
      direction: 'debit',
      amountMinor: '444405',
      reference: railReference,
    });
    await pass();
    expect(await reconLinesOf(r.db, id)).toEqual(['debit/awaiting/-/unbooked']);
    await pass(BUDGET_S * 1000 + 1);
    expect(await reconLinesOf(r.db, id)).toEqual(['debit/exception/-/unbooked']);
    const [e] = await exceptionsOf((x) => x.paymentId === id);
    expect(e).toMatchObject({ kind: 'orphan_debit', details: { reason: 'debit_of_failed_payment' } });
    expect((await payment(id)).state).toBe('failed');
  });

  it('a failed payment whose debit and return both show: matched in pairs, no exception', async () => {
    const res = await pay(c, '454505', PM);
    const id = res.body.payload.id;
    const { railReference } = await adminPayment(id);
    for (const direction of ['debit', 'credit']) {
      await r.admin('POST', '/admin/v1/sandbox/bank/lines', {
        direction,
        amountMinor: '454505',
        reference: railReference,
      });
      await pass();
    }
    expect(await reconLinesOf(r.db, id)).toEqual(['debit/matched/payout/unbooked', 'credit/matched/return/unbooked']);
    expect(await exceptionsOf((x) => x.paymentId === id)).toEqual([]);
  });
});

describe('ingestion is idempotent', () => {
  it('reading the whole statement again stores nothing twice and decides nothing again', async () => {
    await pass();
    const count = async (sql: string) => (await r.db.query<{ n: string }>(sql)).rows[0]!.n;
    const lines = await count('SELECT count(*)::text AS n FROM recon_lines');
    const exceptions = await count('SELECT count(*)::text AS n FROM recon_exceptions');
    const entries = await count('SELECT count(*)::text AS n FROM journal_entries');
    const events = await count('SELECT count(*)::text AS n FROM events');
    await r.db.query('UPDATE recon_sources SET cursor = NULL');
    const again = await pass();
    expect(again.pages).toBeGreaterThan(0);
    expect(await count('SELECT count(*)::text AS n FROM recon_lines')).toBe(lines);
    expect(await count('SELECT count(*)::text AS n FROM recon_exceptions')).toBe(exceptions);
    expect(await count('SELECT count(*)::text AS n FROM journal_entries')).toBe(entries);
    expect(await count('SELECT count(*)::text AS n FROM events')).toBe(events);
    const sandbox = await r.admin('GET', '/admin/v1/sandbox/bank/lines');
    const visible = sandbox.body.payload.data.filter((l: any) => l.visible).length;
    expect(Number(lines)).toBe(visible);
  });
});

describe('balance check', () => {
  it('every known difference is explained: the unexplained part is zero with open exceptions around', async () => {
    await pass();
    const row = await vesBalanceRow();
    expect(row).toEqual({ baseline_minor: DEFAULT_VES_OPENING_MINOR.toString(), unexplained_minor: '0' });
    expect(await exceptionsOf((x) => x.kind === 'balance_mismatch')).toEqual([]);
  });

  it('a persistent unexplained difference → one open balance_mismatch and the metric; resolving accepts it', async () => {
    // A booking the bank never saw (what a bug or a manual ledger edit would leave).
    await r.db.tx(async (q) => {
      await postEntry(q, {
        kind: 'test_phantom',
        entryRef: 'test:phantom-1',
        postings: [
          { accountId: 'bank:VES', currency: 'VES', amountMinor: 999n },
          { accountId: 'fx:VES', currency: 'VES', amountMinor: -999n },
        ],
      });
    });
    const first = await pass();
    expect(first.balances.find((b) => b.currency === 'VES')).toMatchObject({ unexplainedMinor: -999n, streak: 1 });
    expect(await exceptionsOf((x) => x.kind === 'balance_mismatch')).toEqual([]);
    await pass();
    await pass();
    await pass();
    const open = await exceptionsOf((x) => x.kind === 'balance_mismatch');
    expect(open).toHaveLength(1);
    expect(open[0]).toMatchObject({
      status: 'open',
      currency: 'VES',
      amountMinor: '-999',
      details: { unexplainedMinor: '-999', consecutiveChecks: 4 },
    });
    expect(open[0].details.explainedBy.linesNotInLedger.length).toBeGreaterThan(0);
    // Every process reports the difference, read from the database: the service's /metrics shows what this pass found.
    const metrics = await scrape(r.server.adminUrl);
    expect(metrics.value('dispersa_reconciliation_balance_unexplained_minor', { currency: 'VES' })).toBe(-999);

    const resolved = await r.admin('POST', `/admin/v1/reconciliation/exceptions/${open[0].id}/resolve`, {
      note: 'phantom booking of the test; accepted',
      resolvedBy: 'ana@ops',
    });
    expect(resolved.status).toBe(200);
    expect(resolved.body.payload).toMatchObject({ status: 'resolved', resolvedBy: 'ana@ops' });
    for (let i = 0; i < 4; i++) await pass();
    expect(await exceptionsOf((x) => x.kind === 'balance_mismatch' && x.status === 'open')).toEqual([]);
    expect((await vesBalanceRow())!.unexplained_minor).toBe('0');
  });

  it('a difference that goes away closes its exception by itself', async () => {
    const entry = async (ref: string, amount: bigint) =>
      r.db.tx((q) =>
        postEntry(q, {
          kind: 'test_phantom',
          entryRef: ref,
          postings: [
            { accountId: 'bank:VES', currency: 'VES', amountMinor: amount },
            { accountId: 'fx:VES', currency: 'VES', amountMinor: -amount },
          ],
        }),
      );
    await entry('test:phantom-2', 50n);
    for (let i = 0; i < 3; i++) await pass();
    expect(await exceptionsOf((x) => x.kind === 'balance_mismatch' && x.status === 'open')).toHaveLength(1);
    await entry('test:phantom-2-undo', -50n);
    await pass();
    const closed = await exceptionsOf((x) => x.kind === 'balance_mismatch' && x.amountMinor === '-50');
    expect(closed).toEqual([expect.objectContaining({ status: 'resolved', resolvedBy: 'reconciliation' })]);
  });
});

describe('operator API of exceptions', () => {
  it('lists by status and kind, newest first, keyset paged', async () => {
    const all = await allExceptions(r);
    expect(all.length).toBeGreaterThan(3);
    const ids = all.map((e) => e.id);
    expect([...ids].sort().reverse()).toEqual(ids);
    const page = await r.admin('GET', '/admin/v1/reconciliation/exceptions?limit=2');
    expect(page.body.payload).toMatchObject({ hasMore: true, nextCursor: ids[1] });
    expect(page.body.payload.data.map((e: any) => e.id)).toEqual(ids.slice(0, 2));
    const next = await r.admin('GET', `/admin/v1/reconciliation/exceptions?limit=2&cursor=${ids[1]}`);
    expect(next.body.payload.data.map((e: any) => e.id)).toEqual(ids.slice(2, 4));
    const orphans = await allExceptions(r, 'kind=orphan_debit&status=open');
    expect(orphans.length).toBeGreaterThan(0);
    expect(orphans.every((e) => e.kind === 'orphan_debit' && e.status === 'open')).toBe(true);
    for (const e of all) {
      expect(Object.keys(e)).toEqual(
        expect.arrayContaining(['id', 'kind', 'status', 'createdAt', 'bankLines', 'payment']),
      );
    }
  });

  it('rejects a bad filter, cursor or limit with 400', async () => {
    for (const q of ['status=closed', 'kind=weird', 'cursor=pay_1', 'limit=0']) {
      expect((await r.admin('GET', `/admin/v1/reconciliation/exceptions?${q}`)).status).toBe(400);
    }
  });

  it('resolves with a note (who and when kept); 409 the second time; 404 unknown; 400 without a note', async () => {
    const [e] = await allExceptions(r, 'kind=orphan_debit&status=open');
    const path = `/admin/v1/reconciliation/exceptions/${e.id}/resolve`;
    expect((await r.admin('POST', path, {})).status).toBe(400);
    expect((await r.admin('POST', path, { note: '   ' })).status).toBe(400);
    const ok = await r.admin('POST', path, { note: 'bank fee, booked by finance' });
    expect(ok.status).toBe(200);
    expect(ok.body.payload).toMatchObject({
      id: e.id,
      status: 'resolved',
      resolvedBy: 'operator',
      note: 'bank fee, booked by finance',
      resolvedAt: clock.now().toISOString(),
    });
    expect((await r.admin('POST', path, { note: 'again' })).status).toBe(409);
    expect(
      (await r.admin('POST', '/admin/v1/reconciliation/exceptions/rex_0000000000999999/resolve', { note: 'x' })).status,
    ).toBe(404);
    const read = await r.admin('GET', `/admin/v1/reconciliation/exceptions/${e.id}`);
    expect(read.body.payload.status).toBe('resolved');
    // A resolved exception does not come back on the next pass.
    await pass();
    expect((await r.admin('GET', `/admin/v1/reconciliation/exceptions/${e.id}`)).body.payload.status).toBe('resolved');
  });

  it('needs the operator token', async () => {
    const res = await fetch(`${r.reconAdminUrl}/admin/v1/reconciliation/exceptions`);
    expect(res.status).toBe(401);
  });
});
