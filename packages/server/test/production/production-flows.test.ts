import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type BankSim, startBankSim } from '../../src/bank-sim/bank-sim.ts';
import { expectLedgerSound } from '../support/ledger.ts';
import { balanceOf, CCE, PM, pay, waitForPayment } from '../support/payments.ts';
import { startTestServer, TEST_MASTER_KEY, type TestClient, type TestServer } from '../support/test-server.ts';

/**
 * The money-core and reconciliation flows with DISPERSA_ENV=production against the bank simulator over HTTP,
 * one fault class at a time: each payment ends in the state the spec demands, and none is paid twice.
 */

const KEY_ID = 'gw_prod_flows';
const SECRET = 'production-flows-secret-of-32-characters-or-more';
let sim: BankSim;
let server: TestServer;
let c: TestClient;
const FUNDED = 1_000_000_000n;

beforeAll(async () => {
  sim = await startBankSim({
    port: 0,
    keyId: KEY_ID,
    secret: SECRET,
    openingBalances: { VES: 10n ** 15n },
    // The CCE case answers pending only if its 201 is booked before the bank settles and reconciliation reads the
    // debit: with 300 ms a loaded machine (a CI run beside other work) sometimes answered completed. Two seconds
    // (the simulator's default) keeps the exact expectation with a margin no answer comes near.
    settleMs: 2000,
  });
  server = await startTestServer({
    env: {
      DISPERSA_ENV: 'production',
      DISPERSA_ALLOW_EMBEDDED_IN_PRODUCTION: 'true',
      DISPERSA_MASTER_KEY: TEST_MASTER_KEY,
      DISPERSA_RAILS: 'PM,CCE',
      DISPERSA_BANK_GATEWAY_URL: sim.url,
      DISPERSA_BANK_GATEWAY_KEY_ID: KEY_ID,
      DISPERSA_BANK_GATEWAY_SECRET: SECRET,
      DISPERSA_BANK_GATEWAY_TIMEOUT_MS: '700',
      DISPERSA_RECONCILE_INTERVAL_MS: '150',
      DISPERSA_UNKNOWN_BUDGET_SECONDS: '3',
      DISPERSA_DISPATCH_TIMEOUT_MS: '2000',
    },
  });
  c = await server.newClient({ fundMinor: FUNDED });
});
afterAll(async () => {
  await server?.stop();
  await sim?.close();
});

const final = (p: { state: string; subStatus: string | null }) =>
  p.state === 'completed' || p.state === 'failed' || (p.state === 'unknown' && p.subStatus === 'under_review');

function debitsOf(railReference: string) {
  return sim.ledger.linesFor(railReference).filter((l) => l.direction === 'debit');
}

async function railReferenceOf(paymentId: string): Promise<string> {
  const { rows } = await server.testDb.db.query<{ r: string }>(
    'SELECT rail_reference AS r FROM payments WHERE id = $1',
    [paymentId],
  );
  return rows[0]!.r;
}

it('reports simulado false with a gateway configured, and takes sk_live_ keys', async () => {
  const version: any = await (await fetch(`${server.baseUrl}/v2/version`)).json();
  expect(version.payload).toMatchObject({ environment: 'production', simulado: false, rails: ['PM', 'CCE'] });
  expect(c.apiKey.startsWith('sk_live_')).toBe(true);
});

interface Case {
  name: string;
  fault: Record<string, unknown> | null;
  destination?: Record<string, unknown>;
  /** State of the 201. */
  first: { state: string; subStatus: string | null };
  /** Final state, reached by the service alone (settlement, reconciliation). */
  last: { state: string; subStatus: string | null };
  /** Whether the bank moved money in the end (once). */
  debited: boolean;
}

const CASES: Case[] = [
  {
    name: 'confirmed',
    fault: null,
    first: { state: 'completed', subStatus: null },
    last: { state: 'completed', subStatus: null },
    debited: true,
  },
  {
    name: 'declined',
    fault: { kind: 'decline' },
    first: { state: 'failed', subStatus: 'declined' },
    last: { state: 'failed', subStatus: 'declined' },
    debited: false,
  },
  {
    name: 'destination refused',
    fault: { kind: 'invalid_destination', reasonCode: 'invalid_phone_number' },
    first: { state: 'failed', subStatus: 'wrong_beneficiary' },
    last: { state: 'failed', subStatus: 'wrong_beneficiary' },
    debited: false,
  },
  {
    name: 'duplicate report (booked once)',
    fault: { kind: 'duplicate_report' },
    first: { state: 'unknown', subStatus: 'reconciling' },
    last: { state: 'completed', subStatus: null },
    debited: true,
  },
  {
    name: 'time-out after booking',
    fault: { kind: 'timeout_after_booking', answerAfterMs: null },
    first: { state: 'unknown', subStatus: 'reconciling' },
    last: { state: 'completed', subStatus: null },
    debited: true,
  },
  {
    name: 'bank wait timed out, debited anyway',
    fault: { kind: 'bank_timeout', booked: true },
    first: { state: 'unknown', subStatus: 'reconciling' },
    last: { state: 'completed', subStatus: null },
    debited: true,
  },
  {
    name: 'connection cut after booking',
    fault: { kind: 'drop_connection', afterBooking: true },
    first: { state: 'unknown', subStatus: 'reconciling' },
    last: { state: 'completed', subStatus: null },
    debited: true,
  },
  {
    name: 'cannot process (nothing booked)',
    fault: { kind: 'cannot_process' },
    first: { state: 'unknown', subStatus: 'reconciling' },
    last: { state: 'failed', subStatus: null },
    debited: false,
  },
  {
    name: 'system offline (nothing booked)',
    fault: { kind: 'offline' },
    first: { state: 'unknown', subStatus: 'reconciling' },
    last: { state: 'failed', subStatus: null },
    debited: false,
  },
  {
    name: 'outside hours (nothing booked)',
    fault: { kind: 'outside_hours' },
    first: { state: 'unknown', subStatus: 'reconciling' },
    last: { state: 'failed', subStatus: null },
    debited: false,
  },
  {
    name: 'CCE held at the clearing house, then settled',
    fault: { kind: 'hold_at_clearing', releaseAfterMs: 300, outcome: 'settled' },
    destination: CCE,
    first: { state: 'unknown', subStatus: 'at_rail' },
    last: { state: 'completed', subStatus: null },
    debited: true,
  },
  {
    name: 'CCE held at the clearing house, then returned',
    fault: { kind: 'hold_at_clearing', releaseAfterMs: 300, outcome: 'returned' },
    destination: CCE,
    first: { state: 'unknown', subStatus: 'at_rail' },
    last: { state: 'failed', subStatus: 'declined' },
    debited: true,
  },
  {
    name: 'CCE interbank, pending until settlement',
    fault: null,
    destination: CCE,
    first: { state: 'pending', subStatus: null },
    last: { state: 'completed', subStatus: null },
    debited: true,
  },
];

describe('each fault class ends in the state the spec demands, none double-paid', () => {
  const made: { c: Case; id: string; amount: bigint }[] = [];

  it('answers each submission as the spec maps it (never failed when money may have moved)', async () => {
    for (const [i, kase] of CASES.entries()) {
      if (kase.fault) sim.faults.inject({ ...kase.fault, count: 1 });
      const amount = BigInt(100_000 + i * 1000);
      const res = await pay(c, amount.toString(), kase.destination ?? PM);
      expect(res.status, kase.name).toBe(201);
      const got = { state: res.body.payload.state, subStatus: res.body.payload.subStatus };
      if (kase.first.state === 'unknown' && kase.debited) {
        // Money may have moved: never failed. Reconciliation may already have seen the real debit by the time the
        // answer is booked, and then the payment is (truthfully) completed.
        expect([kase.first, { state: 'completed', subStatus: null }], kase.name).toContainEqual(got);
      } else {
        expect(got, kase.name).toEqual(kase.first);
      }
      made.push({ c: kase, id: res.body.payload.id, amount });
    }
  });

  it("finishes every payment from the bank's evidence, debiting at most once", async () => {
    for (const m of made) {
      const p = await waitForPayment(c, m.id, final, 20_000);
      const ref = await railReferenceOf(m.id);
      const debits = debitsOf(ref);
      expect(debits.length, m.c.name).toBeLessThanOrEqual(1);
      expect(debits.length === 1, `${m.c.name}: debited`).toBe(m.c.debited);
      expect({ state: p.state, subStatus: p.subStatus }, m.c.name).toMatchObject({ state: m.c.last.state });
      if (m.c.last.subStatus !== null) expect(p.subStatus, m.c.name).toBe(m.c.last.subStatus);
      // The bank never submitted a reference twice.
      expect(sim.ledger.transfers().filter((t) => t.reference === ref).length).toBeLessThanOrEqual(1);
    }
    await expectLedgerSound(server.testDb.db);
    const { rows } = await server.testDb.db.query<{ completed: string; held: string }>(
      `SELECT coalesce(sum(source_amount_minor) FILTER (WHERE state = 'completed'), 0)::text AS completed,
              coalesce(sum(source_amount_minor) FILTER (WHERE state IN ('processing', 'pending', 'unknown')), 0)::text AS held
       FROM payments WHERE client_id = $1`,
      [c.clientId],
    );
    expect(await balanceOf(c)).toBe(FUNDED - BigInt(rows[0]!.completed) - BigInt(rows[0]!.held));
  });
});
