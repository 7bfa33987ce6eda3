import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ServerProcess, startServerProcess } from '../../bench/server-process.ts';
import type { Db } from '../../src/db/db.ts';
import { openDatabase } from '../../src/db/open.ts';
import { ledgerViolations } from '../../src/ledger/invariants.ts';
import { placeHold } from '../../src/ledger/ledger.ts';
import { transition } from '../../src/payments/lifecycle.ts';
import { insertPayment, nextPaymentSeq, railReferenceFor } from '../../src/payments/repository.ts';
import { createSandboxBank, createSandboxRail } from '../../src/rails/sandbox/index.ts';
import { systemClock } from '../../src/shared/clock.ts';
import { testKeyPair } from '../support/keys.ts';
import { createTestDatabaseUrl, usingPostgres } from '../support/test-db.ts';

/**
 * Crash points of a payment, one by one: the service is killed (SIGKILL), the database is left exactly as a
 * process that died at that step leaves it (the same code the request path runs: the hold and the payment row
 * in one transaction, then the sandbox rail's booking, then the recorded outcome), the service is started again,
 * killed once more while it recovers, started again, and reconciliation must finish every payment from the
 * evidence: the right final state, the right balance, and no payment handed to the bank twice.
 */

const ADMIN_TOKEN = `recon-crash-${randomBytes(12).toString('hex')}`;
const SETTLE_MS = 300;
const FUND = 10_000_000n;
const ENV = {
  DISPERSA_SANDBOX_SETTLE_MS: String(SETTLE_MS),
  DISPERSA_RECONCILE_INTERVAL_MS: '100',
  DISPERSA_UNKNOWN_BUDGET_SECONDS: '3',
};

let dataDir: string;
let databaseUrl: string | null = null;
let dropDatabase: (() => Promise<void>) | null = null;
let server: ServerProcess | null = null;

async function admin(method: string, target: string, body?: unknown): Promise<{ status: number; body: any }> {
  const headers: Record<string, string> = { authorization: `Bearer ${ADMIN_TOKEN}` };
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(server!.adminUrl + target, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text === '' ? null : JSON.parse(text) };
}

async function startServer(): Promise<void> {
  server = await startServerProcess({ dataDir, adminToken: ADMIN_TOKEN, databaseUrl, env: ENV });
}

async function withDb<T>(fn: (db: Db) => Promise<T>): Promise<T> {
  const db = await openDatabase({ databaseUrl, dataDir });
  try {
    return await fn(db);
  } finally {
    await db.close();
  }
}

beforeAll(async () => {
  dataDir = await mkdtemp(path.join(tmpdir(), 'dispersa-recon-crash-'));
  if (usingPostgres()) {
    const created = await createTestDatabaseUrl();
    databaseUrl = created.url;
    dropDatabase = created.drop;
  }
}, 120_000);

afterAll(async () => {
  await server?.kill();
  await dropDatabase?.();
  await rm(dataDir, { recursive: true, force: true });
});

interface Step {
  name: string;
  amount: bigint;
  rail: 'PM' | 'CCE';
  /** How far the dead process got. */
  reached: 'hold' | 'dispatched' | 'outcome_unknown';
  expected: { state: string; subStatus: string | null; failureCode?: string | null };
  /** What stays debited from the client at the end. */
  debited: boolean;
  id?: string;
}

const STEPS: Step[] = [
  {
    name: 'died after the hold, before calling the rail: sent once by the recovery, with its reference, completed',
    amount: 111100n,
    rail: 'PM',
    reached: 'hold',
    expected: { state: 'completed', subStatus: null },
    debited: true,
  },
  {
    name: 'died after the rail booked an instant payout: completed from the debit',
    amount: 222200n,
    rail: 'PM',
    reached: 'dispatched',
    expected: { state: 'completed', subStatus: null },
    debited: true,
  },
  {
    name: 'died after dispatching 03 (no answer, money moved): completed',
    amount: 333303n,
    rail: 'PM',
    reached: 'dispatched',
    expected: { state: 'completed', subStatus: null },
    debited: true,
  },
  {
    name: 'died after dispatching CCE 07: failed, the money back',
    amount: 444407n,
    rail: 'CCE',
    reached: 'dispatched',
    expected: { state: 'failed', subStatus: 'declined' },
    debited: false,
  },
  {
    name: 'died after dispatching an interbank transfer: completed at settlement',
    amount: 555500n,
    rail: 'CCE',
    reached: 'dispatched',
    expected: { state: 'completed', subStatus: null },
    debited: true,
  },
  {
    name: 'died after dispatching 02 (nothing ever moves): under_review for a person',
    amount: 666602n,
    rail: 'PM',
    reached: 'dispatched',
    expected: { state: 'unknown', subStatus: 'under_review' },
    debited: true,
  },
  {
    name: 'died after booking unknown for 04, before reconciliation: completed',
    amount: 777704n,
    rail: 'PM',
    reached: 'outcome_unknown',
    expected: { state: 'completed', subStatus: null },
    debited: true,
  },
];

const destination = (rail: 'PM' | 'CCE') =>
  rail === 'PM'
    ? { account: '04141234567', bankCode: '0102', docType: 'V' as const, docNumber: '12345678', name: null }
    : { account: '01050000000000000001', bankCode: '0105', docType: 'J' as const, docNumber: '123', name: 'ACME' };

/** Leaves the database as a process that died at the step's point leaves it, with the request path's own code. */
async function leaveInterrupted(db: Db, clientId: string, keyId: string, step: Step): Promise<string> {
  // Dispatched a minute ago: the follow-up worker treats it as interrupted at once.
  const dispatchedAt = new Date(Date.now() - 60_000);
  const payment = await db.tx(async (q) => {
    const seq = await nextPaymentSeq(q);
    const id = `pay_${seq.toString().padStart(16, '0')}`;
    expect(await placeHold(q, { clientId, currency: 'VES', paymentId: id, amountMinor: step.amount })).toBe('ok');
    const d = destination(step.rail);
    return insertPayment(q, {
      seq,
      clientId,
      keyId,
      idempotencyKey: `crash-${step.amount}`,
      fingerprint: `fp-${step.amount}`,
      state: 'processing',
      subStatus: 'reserved',
      failureCode: null,
      amountMinor: step.amount,
      rail: step.rail,
      account: d.account,
      bankCode: d.bankCode,
      docType: d.docType,
      docNumber: d.docNumber,
      beneficiaryName: d.name,
      beneficiaryId: null,
      sourceCurrency: 'VES',
      sourceAmountMinor: step.amount,
      quoteId: null,
      rateId: null,
      railReference: railReferenceFor(seq),
      dispatchedAt,
      now: dispatchedAt,
    });
  });
  if (payment === null) throw new Error('payment not inserted');
  if (step.reached === 'hold') return payment.id;
  const bank = createSandboxBank({ db, clock: systemClock, settleMs: SETTLE_MS });
  const rail = createSandboxRail({ bank, db, clock: systemClock });
  const outcome = await rail.submit({
    railReference: payment.railReference,
    paymentId: payment.id,
    rail: step.rail,
    amountMinor: step.amount,
    currency: 'VES',
    destination: destination(step.rail),
  });
  if (step.reached === 'outcome_unknown') {
    expect(outcome).toMatchObject({ kind: 'unknown' });
    await db.tx((q) => transition(q, systemClock, payment.id, { state: 'unknown', subStatus: 'reconciling' }));
  }
  return payment.id;
}

async function paymentsOf(clientId: string): Promise<Map<string, any>> {
  const res = await admin('GET', `/admin/v1/payments?clientId=${clientId}&limit=100`);
  expect(res.status).toBe(200);
  return new Map(res.body.payload.data.map((p: any) => [p.id, p]));
}

describe('crash points of a payment, finished by reconciliation', () => {
  it('every interrupted step ends in the state the evidence proves, debited at most once', async () => {
    // A live service: a funded client with a key.
    await startServer();
    const client = await admin('POST', '/admin/v1/clients', { name: 'crash points', currency: 'VES' });
    const clientId = client.body.payload.clientId as string;
    const key = await admin('POST', `/admin/v1/clients/${clientId}/keys`, { publicKeyPem: testKeyPair(0).publicPem });
    const keyId = key.body.payload.keyId as string;
    expect(
      (
        await admin('POST', `/admin/v1/clients/${clientId}/fundings`, {
          amountMinor: FUND.toString(),
          reference: 'crash-fund',
        })
      ).status,
    ).toBe(201);
    await server!.kill();

    // The process died at each step.
    await withDb(async (db) => {
      for (const step of STEPS) step.id = await leaveInterrupted(db, clientId, keyId, step);
    });

    // Restart; kill it again while it recovers; restart once more.
    await startServer();
    await new Promise((r) => setTimeout(r, 400));
    await server!.kill();
    await startServer();

    const deadline = Date.now() + 30_000;
    let payments = await paymentsOf(clientId);
    const done = () =>
      STEPS.every((s) => {
        const p = payments.get(s.id!);
        return p.state === s.expected.state && p.subStatus === s.expected.subStatus;
      });
    while (!done() && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 200));
      payments = await paymentsOf(clientId);
    }
    for (const s of STEPS) expect(payments.get(s.id!), s.name).toMatchObject(s.expected);

    const debited = STEPS.filter((s) => s.debited).reduce((sum, s) => sum + s.amount, 0n);
    const read = await admin('GET', `/admin/v1/clients/${clientId}`);
    expect(BigInt(read.body.payload.balance.availableMinor)).toBe(FUND - debited);

    // The person resolves the one nothing proved.
    const review = STEPS.find((s) => s.expected.subStatus === 'under_review')!;
    const resolved = await admin('POST', `/admin/v1/payments/${review.id}/resolve`, {
      outcome: 'failed',
      note: 'bank statement shows nothing; released',
    });
    expect(resolved.status).toBe(200);
    expect(BigInt((await admin('GET', `/admin/v1/clients/${clientId}`)).body.payload.balance.availableMinor)).toBe(
      FUND - debited + review.amount,
    );
    const open = await admin('GET', '/admin/v1/reconciliation/exceptions?status=open');
    expect(open.body.payload.data).toEqual([]);
    await server!.stop();

    await withDb(async (db) => {
      expect(await ledgerViolations(db)).toEqual([]);
      // Never handed to the bank twice: one transfer per payment (the one the dead process never sent was sent by
      // the recovery), no resubmission.
      const transfers = await db.query<{ payment_id: string; resubmissions: number }>(
        'SELECT payment_id, resubmissions FROM sandbox_bank_transfers',
      );
      const byPayment = new Map(transfers.rows.map((t) => [t.payment_id, t.resubmissions]));
      for (const s of STEPS) expect(byPayment.get(s.id!), s.name).toBe(0);
      expect(transfers.rows).toHaveLength(STEPS.length);
      // Debited once by the ledger where it was paid; reversed or never booked where it was not.
      for (const s of STEPS) {
        const { rows } = await db.query<{ kind: string }>(
          'SELECT kind FROM journal_entries WHERE payment_id = $1 ORDER BY id',
          [s.id],
        );
        expect(
          rows.map((r) => r.kind),
          s.name,
        ).toEqual(s.expected.state === 'completed' ? ['payout'] : []);
      }
    });
  }, 120_000);
});
