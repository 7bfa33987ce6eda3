import { createServer } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type BankSim, startBankSim } from '../../../src/bank-sim/bank-sim.ts';
import { createGatewayRail } from '../../../src/rails/gateway/gateway-rail.ts';
import type { Rail, RailOutcome, RailStatus } from '../../../src/rails/rail.ts';
import { ManualClock } from '../../../src/shared/clock.ts';
import { cceTransfer, eventually, gatewayConfig, KEY_ID, pmTransfer, SECRET } from '../../bank-sim/sim-fixture.ts';

/** The production connector against the bank simulator, over real HTTP on 127.0.0.1. */

let clock: ManualClock;
let sim: BankSim;
let rail: Rail;
/** The same connector with a 200 ms bound, for the tests that make it time out. */
let quick: Rail;

beforeEach(async () => {
  // 14:00 in Caracas (UTC-4): inside business hours.
  clock = new ManualClock(Date.UTC(2026, 0, 5, 18, 0));
  sim = await startBankSim({
    port: 0,
    keyId: KEY_ID,
    secret: SECRET,
    clock,
    ownBankCode: '0102',
    openingBalances: { VES: 10_000_000n },
    settleMs: 1000,
    perTransferLimitMinor: 5_000_000n,
  });
  rail = createGatewayRail({ config: gatewayConfig(sim.url) });
  quick = createGatewayRail({ config: gatewayConfig(sim.url, 200) });
});

afterEach(async () => {
  await sim.close();
});

function debitsOf(reference: string) {
  return sim.ledger.linesFor(reference).filter((line) => line.direction === 'debit');
}

function expectReconciling(outcome: RailOutcome | RailStatus): void {
  expect(outcome.kind).toBe('unknown');
  expect(outcome.kind).not.toBe('failed');
  if (outcome.kind === 'unknown') expect(outcome.subStatus).toBe('reconciling');
}

describe('the gateway rail', () => {
  it('names itself and is not simulated', () => {
    expect(rail.name).toBe('bank-gateway');
    expect(rail.simulated).toBe(false);
  });

  it('confirmed → completed, booked once, and the re-query agrees', async () => {
    const transfer = pmTransfer();
    expect(await rail.submit(transfer)).toEqual({ kind: 'completed' });
    expect(debitsOf(transfer.railReference)).toHaveLength(1);
    expect(sim.ledger.balance('VES')).toBe(10_000_000n - 150_000n);
    expect(await rail.query(transfer.railReference)).toEqual({ kind: 'completed' });
  });

  it('a CCE transfer within the same bank completes at once', async () => {
    expect(await rail.submit(cceTransfer('0102'))).toEqual({ kind: 'completed' });
  });

  it('an interbank CCE transfer is pending until settled, then completed', async () => {
    const transfer = cceTransfer('0105');
    expect(await rail.submit(transfer)).toEqual({ kind: 'pending' });
    expect(debitsOf(transfer.railReference)).toHaveLength(1);
    expect(await rail.query(transfer.railReference)).toEqual({ kind: 'pending' });
    clock.advance(1000);
    expect(await rail.query(transfer.railReference)).toEqual({ kind: 'completed' });
  });

  it('never sends the payment id to the bank', async () => {
    const bodies: string[] = [];
    const spying = createGatewayRail({
      config: gatewayConfig(sim.url),
      fetch: (url, init) => {
        bodies.push(String(init.body ?? ''));
        return fetch(url, init);
      },
    });
    const transfer = pmTransfer();
    await spying.submit(transfer);
    expect(bodies).toHaveLength(1);
    const sent = JSON.parse(bodies[0]!) as Record<string, unknown>;
    expect(sent).toEqual({
      reference: transfer.railReference,
      rail: 'PM',
      amountMinor: '150000',
      currency: 'VES',
      destination: {
        account: '04141234567',
        bankCode: '0105',
        docType: 'V',
        docNumber: '12345678',
        name: null,
      },
    });
    expect(bodies[0]).not.toContain('pay_never_sent_to_bank');
  });

  it('an unknown reference is not_found', async () => {
    expect(await rail.query('rr_never_submitted')).toEqual({ kind: 'not_found' });
  });
});

describe('declines and destination problems are failed, nothing booked', () => {
  it('insufficient funds in the real ledger → failed declined insufficient_funds', async () => {
    const transfer = pmTransfer({ amountMinor: 4_000_000n });
    await rail.submit(pmTransfer({ amountMinor: 4_000_000n }));
    await rail.submit(pmTransfer({ amountMinor: 4_000_000n }));
    expect(await rail.submit(transfer)).toEqual({
      kind: 'failed',
      subStatus: 'declined',
      failureCode: 'insufficient_funds',
    });
    expect(debitsOf(transfer.railReference)).toHaveLength(0);
    expect(await rail.query(transfer.railReference)).toMatchObject({ kind: 'failed', subStatus: 'declined' });
  });

  it('over the per-transfer limit → failed declined limit_exceeded', async () => {
    const transfer = pmTransfer({ amountMinor: 5_000_001n });
    expect(await rail.submit(transfer)).toEqual({
      kind: 'failed',
      subStatus: 'declined',
      failureCode: 'limit_exceeded',
    });
    expect(debitsOf(transfer.railReference)).toHaveLength(0);
  });

  it('a decline chosen by the control API carries its reason code', async () => {
    const transfer = pmTransfer();
    sim.faults.inject({ kind: 'decline', reasonCode: 'account_blocked', reference: transfer.railReference });
    expect(await rail.submit(transfer)).toEqual({
      kind: 'failed',
      subStatus: 'declined',
      failureCode: 'account_blocked',
    });
    expect(debitsOf(transfer.railReference)).toHaveLength(0);
  });

  it('a bad phone number → failed wrong_beneficiary invalid_phone_number', async () => {
    const transfer = pmTransfer({
      destination: { account: '4141234567', bankCode: '0105', docType: 'V', docNumber: '1', name: null },
    });
    expect(await rail.submit(transfer)).toEqual({
      kind: 'failed',
      subStatus: 'wrong_beneficiary',
      failureCode: 'invalid_phone_number',
    });
    expect(debitsOf(transfer.railReference)).toHaveLength(0);
  });

  it('a bad account number → failed wrong_beneficiary invalid_account_number', async () => {
    const transfer = cceTransfer('0105');
    transfer.destination.account = '0105123';
    expect(await rail.submit(transfer)).toMatchObject({
      kind: 'failed',
      subStatus: 'wrong_beneficiary',
      failureCode: 'invalid_account_number',
    });
  });

  it('a restricted beneficiary → failed wrong_beneficiary restricted_beneficiary', async () => {
    const transfer = pmTransfer();
    sim.faults.inject({ kind: 'invalid_destination', count: 1 });
    expect(await rail.submit(transfer)).toEqual({
      kind: 'failed',
      subStatus: 'wrong_beneficiary',
      failureCode: 'restricted_beneficiary',
    });
  });
});

describe('answers that do not prove absence of a debit are unknown, never failed', () => {
  it('a reference submitted twice is booked once; the second answer (duplicate) is unknown', async () => {
    const transfer = pmTransfer();
    expect(await rail.submit(transfer)).toEqual({ kind: 'completed' });
    expectReconciling(await rail.submit(transfer));
    expect(debitsOf(transfer.railReference)).toHaveLength(1);
  });

  it('duplicate report: booked once, answered duplicate → unknown; the re-query finds it completed', async () => {
    const transfer = pmTransfer();
    sim.faults.inject({ kind: 'duplicate_report', count: 1 });
    expectReconciling(await rail.submit(transfer));
    expect(debitsOf(transfer.railReference)).toHaveLength(1);
    expect(await rail.query(transfer.railReference)).toEqual({ kind: 'completed' });
  });

  it("the bank's own time-out after booking → unknown; money moved", async () => {
    const transfer = pmTransfer();
    sim.faults.inject({ kind: 'bank_timeout', booked: true, count: 1 });
    expectReconciling(await rail.submit(transfer));
    expect(debitsOf(transfer.railReference)).toHaveLength(1);
    expect(await rail.query(transfer.railReference)).toEqual({ kind: 'completed' });
  });

  it("the bank's own time-out before booking → unknown; the re-query finds nothing", async () => {
    const transfer = pmTransfer();
    sim.faults.inject({ kind: 'bank_timeout', booked: false, count: 1 });
    expectReconciling(await rail.submit(transfer));
    expect(debitsOf(transfer.railReference)).toHaveLength(0);
    expect(await rail.query(transfer.railReference)).toEqual({ kind: 'not_found' });
  });

  for (const kind of ['outside_hours', 'offline', 'cannot_process'] as const) {
    it(`${kind} → unknown, nothing booked, not_found on re-query`, async () => {
      const transfer = pmTransfer();
      sim.faults.inject({ kind, reference: transfer.railReference });
      const outcome = await rail.submit(transfer);
      expectReconciling(outcome);
      expect(outcome.kind === 'unknown' && outcome.detail).toContain(kind);
      expect(debitsOf(transfer.railReference)).toHaveLength(0);
      expect(await rail.query(transfer.railReference)).toEqual({ kind: 'not_found' });
    });
  }

  it('an outside-hours window applies only while the clock is inside it', async () => {
    sim.faults.inject({ kind: 'outside_hours', window: { start: '22:00', end: '06:00' } });
    expect(await rail.submit(pmTransfer())).toEqual({ kind: 'completed' });
    clock.set(new Date(Date.UTC(2026, 0, 6, 3, 30))); // 23:30 in Caracas
    expectReconciling(await rail.submit(pmTransfer()));
    clock.set(new Date(Date.UTC(2026, 0, 6, 10, 0))); // 06:00 in Caracas
    expect(await rail.submit(pmTransfer())).toEqual({ kind: 'completed' });
  });

  it('an offline period ends by itself', async () => {
    sim.faults.inject({ kind: 'offline', forMs: 60_000 });
    expectReconciling(await rail.submit(pmTransfer()));
    clock.advance(60_000);
    expect(await rail.submit(pmTransfer())).toEqual({ kind: 'completed' });
  });

  it('time-out after booking, never answered → unknown within the timeout; the debit is there', async () => {
    const transfer = pmTransfer();
    sim.faults.inject({ kind: 'timeout_after_booking', reference: transfer.railReference });
    const started = Date.now();
    const outcome = await quick.submit(transfer);
    // Bounded by the client's timeout, not by the time it would take on an idle machine.
    expect(Date.now() - started).toBeLessThan(10_000);
    expectReconciling(outcome);
    expect(debitsOf(transfer.railReference)).toHaveLength(1);
    expect(await rail.query(transfer.railReference)).toEqual({ kind: 'completed' });
  });

  it("time-out after booking, answered after the client's timeout → unknown", async () => {
    const transfer = pmTransfer();
    sim.faults.inject({ kind: 'timeout_after_booking', answerAfterMs: 400, count: 1 });
    expectReconciling(await quick.submit(transfer));
    expect(debitsOf(transfer.railReference)).toHaveLength(1);
  });

  it('latency past the timeout → unknown, and the bank books it anyway once the request lands', async () => {
    const transfer = pmTransfer();
    const slow = sim.faults.inject({ kind: 'latency', ms: 400, reference: transfer.railReference });
    expectReconciling(await quick.submit(transfer));
    await eventually(() => debitsOf(transfer.railReference).length === 1);
    // A re-query that times out as well still says nothing new.
    expectReconciling(await quick.query(transfer.railReference));
    sim.faults.remove(slow);
    expect(await rail.query(transfer.railReference)).toEqual({ kind: 'completed' });
  });

  it('latency below the timeout changes nothing', async () => {
    sim.faults.inject({ kind: 'latency', ms: 20, count: 1 });
    expect(await rail.submit(pmTransfer())).toEqual({ kind: 'completed' });
  });

  it('a connection cut after booking → unknown; money moved', async () => {
    const transfer = pmTransfer();
    sim.faults.inject({ kind: 'drop_connection', afterBooking: true, count: 1 });
    expectReconciling(await rail.submit(transfer));
    expect(debitsOf(transfer.railReference)).toHaveLength(1);
  });

  it('a connection cut before booking → unknown as well (the connector cannot tell the two apart)', async () => {
    const transfer = pmTransfer();
    sim.faults.inject({ kind: 'drop_connection', afterBooking: false, count: 1 });
    expectReconciling(await rail.submit(transfer));
    expect(debitsOf(transfer.railReference)).toHaveLength(0);
  });

  it('a 5xx → unknown', async () => {
    const transfer = pmTransfer();
    sim.faults.inject({ kind: 'http_error', status: 503, afterBooking: true, count: 1 });
    const outcome = await rail.submit(transfer);
    expectReconciling(outcome);
    expect(outcome.kind === 'unknown' && outcome.detail).toContain('503');
    expect(debitsOf(transfer.railReference)).toHaveLength(1);
  });

  it('an unparseable 200 → unknown', async () => {
    sim.faults.inject({ kind: 'malformed_answer', count: 1 });
    expectReconciling(await rail.submit(pmTransfer()));
  });

  it('a refused connection → unknown (conservative: an earlier attempt may have landed)', async () => {
    const port = await freePort();
    const offline = createGatewayRail({ config: gatewayConfig(`http://127.0.0.1:${port}`) });
    const outcome = await offline.submit(pmTransfer());
    expectReconciling(outcome);
    expect(outcome.kind === 'unknown' && outcome.detail).toContain('ECONNREFUSED');
    expectReconciling(await offline.query('rr_anything'));
  });

  it('a rejected signature (401) → unknown, nothing booked', async () => {
    const wrongSecret = createGatewayRail({
      config: { ...gatewayConfig(sim.url), secret: 'another-secret-of-at-least-thirty-two-chars' },
    });
    const transfer = pmTransfer();
    const outcome = await wrongSecret.submit(transfer);
    expectReconciling(outcome);
    expect(outcome.kind === 'unknown' && outcome.detail).toContain('401');
    expect(debitsOf(transfer.railReference)).toHaveLength(0);
  });

  it('a bare 404 (wrong base URL) on re-query is unknown, not not_found', async () => {
    const misrouted = createGatewayRail({ config: gatewayConfig(`${sim.url}/wrong-prefix`) });
    expectReconciling(await misrouted.query('rr_never_submitted'));
  });
});

describe('asynchronous CCE outcomes', () => {
  it('held at clearing → unknown at_rail, then completed when released', async () => {
    const transfer = cceTransfer('0105');
    sim.faults.inject({ kind: 'hold_at_clearing', releaseAfterMs: 5000, reference: transfer.railReference });
    expect(await rail.submit(transfer)).toEqual({ kind: 'unknown', subStatus: 'at_rail' });
    expect(await rail.query(transfer.railReference)).toEqual({ kind: 'unknown', subStatus: 'at_rail' });
    clock.advance(5000);
    expect(await rail.query(transfer.railReference)).toEqual({ kind: 'completed' });
  });

  it('late rejection: pending, then failed declined returned, with the money credited back', async () => {
    const transfer = cceTransfer('0105');
    sim.faults.inject({ kind: 'late_return', returnAfterMs: 3000, reference: transfer.railReference });
    expect(await rail.submit(transfer)).toEqual({ kind: 'pending' });
    expect(sim.ledger.balance('VES')).toBe(10_000_000n - 150_000n);
    clock.advance(3000);
    expect(await rail.query(transfer.railReference)).toEqual({
      kind: 'failed',
      subStatus: 'declined',
      failureCode: 'returned',
    });
    expect(sim.ledger.balance('VES')).toBe(10_000_000n);
    const lines = sim.ledger.linesFor(transfer.railReference).map((l) => [l.direction, l.amountMinor]);
    expect(lines).toEqual([
      ['debit', 150_000n],
      ['credit', 150_000n],
    ]);
  });

  it('held at clearing and then returned → failed declined returned', async () => {
    const transfer = cceTransfer('0105');
    sim.faults.inject({ kind: 'hold_at_clearing', releaseAfterMs: 100, outcome: 'returned', count: 1 });
    expect(await rail.submit(transfer)).toEqual({ kind: 'unknown', subStatus: 'at_rail' });
    clock.advance(100);
    expect(await rail.query(transfer.railReference)).toMatchObject({
      kind: 'failed',
      failureCode: 'returned',
    });
  });
});

describe('without a configured gateway', () => {
  it('submit is failed rejected_by_us rail_not_configured and makes no network call', async () => {
    let calls = 0;
    const unconfigured = createGatewayRail({
      config: null,
      fetch: async (url, init) => {
        calls += 1;
        return fetch(url, init);
      },
    });
    expect(unconfigured.name).toBe('bank-gateway');
    expect(unconfigured.simulated).toBe(false);
    expect(await unconfigured.submit(pmTransfer())).toMatchObject({
      kind: 'failed',
      subStatus: 'rejected_by_us',
      failureCode: 'rail_not_configured',
    });
    expect(await unconfigured.query('rr_x')).toEqual({ kind: 'not_found' });
    expect(calls).toBe(0);
  });
});

/** A port nothing listens on: bound, then released. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}
