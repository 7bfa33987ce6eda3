import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AuthContext } from '../../src/auth/authenticate.ts';
import { type Composed, compose } from '../../src/compose.ts';
import { loadConfig } from '../../src/config.ts';
import { createFunding } from '../../src/fundings/service.ts';
import { ledgerViolations } from '../../src/ledger/invariants.ts';
import { createLogger } from '../../src/logger.ts';
import type { SandboxBank } from '../../src/rails/sandbox/bank.ts';
import { createReconciliationDomain, type ReconciliationDomain } from '../../src/reconciliation/domain.ts';
import { ManualClock } from '../../src/shared/clock.ts';
import { insertServiceClient } from '../support/service-client.ts';
import { createTestDb, type TestDb } from '../support/test-db.ts';

/**
 * Random payment sets through the real payment service and sandbox rail, random bank statements on top of what
 * the simulated bank books for them (orphan debits, unfunded credits, byte-identical copies, returns, suppressed
 * debits, more fundings), reconciled in passes at random moments on a real database. After the last pass:
 * every statement line is stored once and ends matched or in exactly one exception; the ledger balances; the
 * balance check explains the whole difference between the bank and the ledger; and every payment's final state
 * agrees with its lines. Two reconciliation runners work at once, as two processes would.
 */

const SETTLE_MS = 1000;
const BUDGET_S = 30;

let testDb: TestDb;
let composed: Composed;
let recon: ReconciliationDomain;
/** A second runner over the same database, as a second process would be. */
let recon2: ReconciliationDomain;
let bank: SandboxBank;
const clock = new ManualClock(Date.UTC(2026, 4, 4, 9, 0, 0));

// The service's generated secrets land in its data directory: one of the test's own, removed after it.
const dataDir = mkdtempSync(path.join(tmpdir(), 'dispersa-recon-prop-'));

beforeAll(async () => {
  testDb = await createTestDb();
  const config = loadConfig({
    DISPERSA_ADMIN_TOKEN: 'x'.repeat(32),
    DISPERSA_DATA_DIR: dataDir,
    DISPERSA_LOG_LEVEL: 'silent',
    DISPERSA_SANDBOX_SETTLE_MS: String(SETTLE_MS),
    DISPERSA_UNKNOWN_BUDGET_SECONDS: String(BUDGET_S),
    DISPERSA_RECONCILE_INTERVAL_MS: '100',
  });
  // Composed but never started: no background loop runs; the test's passes are the only reconciliation.
  composed = await compose({
    config: { ...config, adminToken: 'x'.repeat(32) },
    db: testDb.db,
    logger: createLogger('silent'),
    clock,
  });
  recon = createReconciliationDomain(composed.ctx, { rails: composed.domains.payments.rails });
  recon2 = createReconciliationDomain(composed.ctx, { rails: composed.domains.payments.rails });
  bank = composed.domains.payments.rails.sandboxBank!;
});

afterAll(async () => {
  await composed.stop();
  await testDb.close();
  rmSync(dataDir, { recursive: true, force: true });
});

let run = 0;

/**
 * One pass of every loop that finishes payments: the payment domain's follow-ups, then reconciliation by two
 * runners at once (on PostgreSQL they really race: pages taken twice, claims skipped, balance checks).
 */
async function pass(): Promise<void> {
  for (const w of composed.domains.payments.workers ?? []) {
    for (let i = 0; i < 1000 && (await w.processNext()) !== undefined; i++);
  }
  await Promise.all([recon.reconcileOnce(), recon2.reconcileOnce()]);
}

const newClient = (): Promise<AuthContext> => insertServiceClient(testDb.db, `cli_rp_${run}`);

const DESTINATIONS = {
  PM: { rail: 'PM', beneficiary: '04141234567', bankCode: '0102', docType: 'V', docNumber: '1' },
  CCE_SAME: {
    rail: 'CCE',
    beneficiary: '01020000000000000001',
    bankCode: '0102',
    docType: 'V',
    docNumber: '1',
    beneficiaryName: 'X',
  },
  CCE_OTHER: {
    rail: 'CCE',
    beneficiary: '01050000000000000001',
    bankCode: '0105',
    docType: 'V',
    docNumber: '1',
    beneficiaryName: 'X',
  },
} as const;

type Op =
  | { kind: 'pay'; amount: number; ending: string; to: keyof typeof DESTINATIONS }
  | { kind: 'orphan_debit'; amount: number }
  | { kind: 'unfunded_credit'; amount: number }
  | { kind: 'copy_line'; pick: number }
  | { kind: 'return'; pick: number; wrongAmount: boolean }
  | { kind: 'suppress'; pick: number }
  | { kind: 'fund'; amount: number }
  | { kind: 'pass'; advanceMs: number };

const op: fc.Arbitrary<Op> = fc.oneof(
  {
    arbitrary: fc.record({
      kind: fc.constant('pay' as const),
      amount: fc.integer({ min: 1, max: 500 }),
      ending: fc.constantFrom('00', '02', '03', '04', '05', '06', '07', '17'),
      to: fc.constantFrom('PM' as const, 'CCE_SAME' as const, 'CCE_OTHER' as const),
    }),
    weight: 6,
  },
  {
    arbitrary: fc.record({ kind: fc.constant('orphan_debit' as const), amount: fc.integer({ min: 1, max: 9999 }) }),
    weight: 1,
  },
  {
    arbitrary: fc.record({ kind: fc.constant('unfunded_credit' as const), amount: fc.integer({ min: 1, max: 9999 }) }),
    weight: 1,
  },
  { arbitrary: fc.record({ kind: fc.constant('copy_line' as const), pick: fc.nat() }), weight: 2 },
  {
    arbitrary: fc.record({ kind: fc.constant('return' as const), pick: fc.nat(), wrongAmount: fc.boolean() }),
    weight: 2,
  },
  { arbitrary: fc.record({ kind: fc.constant('suppress' as const), pick: fc.nat() }), weight: 2 },
  {
    arbitrary: fc.record({ kind: fc.constant('fund' as const), amount: fc.integer({ min: 1, max: 99999 }) }),
    weight: 1,
  },
  {
    arbitrary: fc.record({ kind: fc.constant('pass' as const), advanceMs: fc.constantFrom(0, 150, 600, SETTLE_MS) }),
    weight: 2,
  },
);

describe('reconciliation over random statements', () => {
  it('every line ends matched or in exactly one exception, and the ledger and the balance check agree', async () => {
    const db = testDb.db;
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 8, maxLength: 30 }), async (ops) => {
        run++;
        const client = await newClient();
        const made: { id: string; railReference: string; amount: bigint }[] = [];
        let n = 0;
        const fund = async (amount: bigint) => {
          const r = await createFunding({ db, clock, onFunded: fundOnBank }, client.clientId, {
            amountMinor: amount.toString(),
            reference: `rp-${run}-${n++}`,
          });
          expect(r.kind).toBe('created');
        };
        await fund(100_000_000n);
        for (const o of ops) {
          clock.advance(10);
          switch (o.kind) {
            case 'pay': {
              const r = await composed.domains.payments.service.create(client, `rp-${run}-${n++}`, {
                amountMinor: `${o.amount}${o.ending}`,
                currency: 'VES',
                ...DESTINATIONS[o.to],
              });
              if (r.kind === 'created') {
                made.push({
                  id: r.payment.id,
                  railReference: r.payment.railReference,
                  amount: r.payment.amountMinor,
                });
              }
              break;
            }
            case 'orphan_debit':
            case 'unfunded_credit':
              await bank.addLine({
                direction: o.kind === 'orphan_debit' ? 'debit' : 'credit',
                amountMinor: BigInt(o.amount),
                reference: `RANDOM-${run}-${n++}`,
              });
              break;
            case 'copy_line': {
              const lines = await bank.listLines();
              const line = lines[o.pick % lines.length]!;
              expect((await bank.addLine({ duplicateOf: line.bankLineId })).ok).toBe(true);
              break;
            }
            case 'return': {
              if (made.length === 0) break;
              const p = made[o.pick % made.length]!;
              await bank.addLine({
                direction: 'credit',
                amountMinor: o.wrongAmount ? p.amount + 1n : p.amount,
                reference: p.railReference,
              });
              break;
            }
            case 'suppress':
              if (made.length > 0) await bank.suppressDebit(made[o.pick % made.length]!.id);
              break;
            case 'fund':
              await fund(BigInt(o.amount));
              break;
            case 'pass':
              clock.advance(o.advanceMs);
              await pass();
              break;
          }
        }
        // Let everything settle, the budget run out, and the grace period pass.
        for (const advance of [SETTLE_MS, 200, BUDGET_S * 1000 + 1, 200, BUDGET_S * 1000 + 1, 200]) {
          clock.advance(advance);
          await pass();
        }
        await checkInvariants(made.map((m) => m.id));
      }),
      {
        numRuns: 15,
        // One fixed statement that meets every kind of evidence, beside the random ones.
        examples: [
          [
            [
              { kind: 'pay', amount: 11, ending: '00', to: 'PM' },
              { kind: 'pay', amount: 12, ending: '02', to: 'PM' },
              { kind: 'pay', amount: 13, ending: '03', to: 'PM' },
              { kind: 'suppress', pick: 2 },
              { kind: 'pass', advanceMs: 150 },
              { kind: 'return', pick: 0, wrongAmount: false },
              { kind: 'pay', amount: 14, ending: '07', to: 'CCE_OTHER' },
              { kind: 'pay', amount: 15, ending: '05', to: 'PM' },
              { kind: 'copy_line', pick: 1 },
              { kind: 'orphan_debit', amount: 77 },
              { kind: 'unfunded_credit', amount: 78 },
              { kind: 'fund', amount: 500 },
            ],
          ],
        ],
      },
    );

    // The runs really met every kind of evidence.
    const { rows } = await db.query<{ k: string }>(
      `SELECT DISTINCT coalesce(match_kind, exception_kind) AS k FROM recon_lines ORDER BY 1`,
    );
    expect(rows.map((r) => r.k)).toEqual(
      expect.arrayContaining(['double_debit', 'funding', 'orphan_debit', 'payout', 'return', 'unfunded_credit']),
    );
    const decided = await db.query<{ kind: string; n: string }>(
      `SELECT kind, count(*)::text AS n FROM (
         SELECT 'reversal' AS kind FROM journal_entries WHERE kind = 'payout_reversal'
         UNION ALL SELECT 'missing_debit' FROM recon_exceptions WHERE kind = 'missing_debit'
         UNION ALL SELECT 'under_review' FROM payments WHERE sub_status = 'under_review'
         UNION ALL SELECT 'returned' FROM payments WHERE failure_code = 'returned') t GROUP BY kind ORDER BY kind`,
    );
    expect(decided.rows.map((r) => r.kind)).toEqual(['missing_debit', 'returned', 'reversal', 'under_review']);
  });
});

async function fundOnBank(
  q: import('../../src/db/db.ts').Queryable,
  f: { amountMinor: bigint; currency: string; reference: string },
) {
  await bank.bookCredit({ amountMinor: f.amountMinor, currency: f.currency, reference: f.reference }, q);
}

async function checkInvariants(paymentIds: string[]): Promise<void> {
  const db = testDb.db;
  // Every visible line of the bank stored exactly once.
  const visible = (await bank.listLines()).filter((l) => l.visible).map((l) => l.bankLineId);
  const stored = await db.query<{ bank_line_id: string; status: string }>(
    'SELECT bank_line_id, status FROM recon_lines ORDER BY bank_line_id',
  );
  expect(stored.rows.map((r) => r.bank_line_id)).toEqual([...visible].sort());
  // Matched, or in exactly one exception (and matched lines in none); nothing left awaiting after the grace.
  const inExceptions = await db.query<{ b: string; n: string }>(
    'SELECT b, count(*)::text AS n FROM recon_exceptions, unnest(bank_line_ids) AS b GROUP BY b',
  );
  const count = new Map(inExceptions.rows.map((r) => [r.b, Number(r.n)]));
  for (const r of stored.rows) {
    expect(['matched', 'exception']).toContain(r.status);
    expect(count.get(r.bank_line_id) ?? 0).toBe(r.status === 'exception' ? 1 : 0);
  }
  expect(await ledgerViolations(db)).toEqual([]);
  // The balance check explains everything: bank = baseline + ledger + explained.
  const balance = await db.query<{ unexplained_minor: string; checked_at: Date }>(
    "SELECT unexplained_minor, checked_at FROM recon_balance WHERE currency = 'VES'",
  );
  expect(balance.rows[0]!.unexplained_minor).toBe('0');
  expect(balance.rows[0]!.checked_at.getTime()).toBeGreaterThan(clock.now().getTime() - 1000);
  expect((await db.query("SELECT 1 FROM recon_exceptions WHERE kind = 'balance_mismatch'")).rows).toEqual([]);

  // Each payment's final state agrees with its lines.
  const { rows } = await db.query<{
    id: string;
    state: string;
    sub_status: string | null;
    debits: string;
    returns: string;
    booked_debits: string;
    booked_returns: string;
    missing: boolean;
    entries: string;
  }>(
    `SELECT p.id, p.state, p.sub_status,
            count(l.*) FILTER (WHERE l.match_kind = 'payout')::text AS debits,
            count(l.*) FILTER (WHERE l.match_kind = 'return')::text AS returns,
            count(l.*) FILTER (WHERE l.match_kind = 'payout' AND l.booked)::text AS booked_debits,
            count(l.*) FILTER (WHERE l.match_kind = 'return' AND l.booked)::text AS booked_returns,
            EXISTS (SELECT 1 FROM recon_exceptions e WHERE e.kind = 'missing_debit' AND e.payment_id = p.id
                      AND e.status = 'open') AS missing,
            (SELECT string_agg(kind, ',' ORDER BY id) FROM journal_entries j WHERE j.payment_id = p.id) AS entries
       FROM payments p LEFT JOIN recon_lines l ON l.payment_id = p.id
      WHERE p.id = ANY($1::text[]) GROUP BY p.id`,
    [paymentIds],
  );
  for (const p of rows) {
    const where = `${p.id} ${p.state}/${p.sub_status} debits=${p.debits} returns=${p.returns} entries=${p.entries}`;
    expect(['completed', 'failed', 'unknown'], where).toContain(p.state);
    if (p.state === 'unknown') {
      // Only a payment nothing ever proved stays unknown, with a person (02).
      expect(p.sub_status, where).toBe('under_review');
      expect(p.debits, where).toBe('0');
    }
    if (p.state === 'completed') {
      // Debited once by the ledger, and either its real debit is matched or a person knows it is missing.
      expect(p.entries, where).toBe('payout');
      expect(p.booked_debits === '1' || p.missing, where).toBe(true);
    }
    if (p.state === 'failed') {
      // No money kept: nothing booked, or a payout and its reversal (the bank sent the money back).
      expect([null, 'payout,payout_reversal'], where).toContain(p.entries);
      if (p.entries !== null) expect([p.booked_debits, p.booked_returns], where).toEqual(['1', '1']);
      else expect(p.booked_debits, where).toBe('0');
    }
  }
}
