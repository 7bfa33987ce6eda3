import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pmPaymentBody, seedClients } from '../../bench/seed.ts';
import { type ServerProcess, startServerProcess } from '../../bench/server-process.ts';
import { type Answer, createAdminCaller, createSignedCaller } from '../../bench/signing.ts';
import { createPostgresDb } from '../../src/db/postgres.ts';
import { ledgerViolations } from '../../src/ledger/invariants.ts';
import { createTestDatabaseUrl, usingPostgres } from '../support/test-db.ts';

/**
 * Two server processes on one PostgreSQL database, paying from one client at once: their batches lock the same
 * balance row (and the same daily usage rows) from two processes. The client is never overdrawn, no batch
 * deadlocks (no 5xx), and exactly as many payments complete as the balance allows. PostgreSQL only: the embedded
 * database belongs to one process.
 */

const skip = !usingPostgres();
const ADMIN_TOKEN = `two-procs-${randomBytes(12).toString('hex')}`;
const KEYS = 8;
const PER_KEY = 10;
const AMOUNT = 30_000n;
const FUNDED = 1_000_000n;

describe.skipIf(skip)('two server processes paying from one client', () => {
  let dataDir: string;
  let database: { url: string; drop(): Promise<void> };
  const servers: ServerProcess[] = [];

  beforeAll(async () => {
    database = await createTestDatabaseUrl();
    // One data directory: the webhook master key that seals the signing keys lives there.
    dataDir = await mkdtemp(path.join(tmpdir(), 'dispersa-two-procs-'));
    for (let i = 0; i < 2; i++) {
      servers.push(
        await startServerProcess({
          dataDir,
          adminToken: ADMIN_TOKEN,
          databaseUrl: database.url,
          env: { DISPERSA_LOG_LEVEL: 'error' },
        }),
      );
    }
  }, 120_000);
  afterAll(async () => {
    for (const s of servers) await s.kill();
    await database?.drop();
    await rm(dataDir, { recursive: true, force: true });
  });

  /** The client's available balance is exactly what is left, and the ledger holds every invariant. */
  async function expectAvailableAndLedgerExact(
    admin: ReturnType<typeof createAdminCaller>,
    clientId: string,
    available: bigint,
  ): Promise<void> {
    const balance = await admin('GET', `/admin/v1/clients/${clientId}`);
    expect(
      BigInt((balance.body as { payload: { balance: { availableMinor: string } } }).payload.balance.availableMinor),
    ).toBe(available);
    const db = createPostgresDb(database.url, { max: 1 });
    try {
      expect(await ledgerViolations(db)).toEqual([]);
    } finally {
      await db.close();
    }
  }

  it('never overdraws it, never deadlocks, and completes exactly what the balance allows', async () => {
    const admin = createAdminCaller(servers[0]!.adminUrl, ADMIN_TOKEN);
    const keys = await seedClients(admin, { clients: 1, keysPerClient: KEYS, fundMinor: FUNDED, label: 'two-procs' });
    const clientId = keys[0]!.clientId;
    const body = pmPaymentBody(String(AMOUNT));
    // Half the keys on each process; one write in flight per key.
    const answers: Answer[] = (
      await Promise.all(
        keys.map(async (k, i) => {
          const call = createSignedCaller(servers[i % 2]!.baseUrl, k.apiKey, k.privatePem);
          const out: Answer[] = [];
          for (let n = 0; n < PER_KEY; n++) {
            out.push(await call('POST', '/v2/payments', { body, idempotencyKey: `tp-${i}-${n}` }));
          }
          return out;
        }),
      )
    ).flat();

    const statuses = answers.map((a) => a.status);
    expect(statuses.filter((s) => s !== 201 && s !== 422)).toEqual([]);
    const allowed = FUNDED / AMOUNT;
    expect(BigInt(statuses.filter((s) => s === 201).length)).toBe(allowed);
    for (const a of answers) {
      if (a.status === 422) expect(a.body).toEqual({ error: 'insufficient balance' });
    }
    await expectAvailableAndLedgerExact(admin, clientId, FUNDED - allowed * AMOUNT);
  }, 120_000);

  it('with payments the bank declines mixed in (their holds given back outside the joint step), never deadlocks', async () => {
    const admin = createAdminCaller(servers[0]!.adminUrl, ADMIN_TOKEN);
    const keys = await seedClients(admin, {
      clients: 1,
      keysPerClient: KEYS,
      fundMinor: FUNDED,
      label: 'two-procs-mix',
    });
    const clientId = keys[0]!.clientId;
    // Every other key pays an amount the sandbox bank declines (…01: insufficient funds at the bank).
    const declined = (i: number) => i % 2 === 1;
    const answers = (
      await Promise.all(
        keys.map(async (k, i) => {
          const call = createSignedCaller(servers[i % 2]!.baseUrl, k.apiKey, k.privatePem);
          const body = pmPaymentBody(String(declined(i) ? AMOUNT + 1n : AMOUNT));
          const out: { key: number; answer: Answer }[] = [];
          for (let n = 0; n < PER_KEY; n++) {
            out.push({ key: i, answer: await call('POST', '/v2/payments', { body, idempotencyKey: `tpm-${i}-${n}` }) });
          }
          return out;
        }),
      )
    ).flat();

    expect(answers.map((a) => a.answer.status).filter((s) => s !== 201 && s !== 422)).toEqual([]);
    let completed = 0n;
    for (const { key, answer } of answers) {
      if (answer.status !== 201) continue;
      const state = (answer.body as { payload: { state: string } }).payload.state;
      expect(state).toBe(declined(key) ? 'failed' : 'completed');
      if (state === 'completed') completed++;
    }
    expect(completed).toBeGreaterThan(0n);
    await expectAvailableAndLedgerExact(admin, clientId, FUNDED - completed * AMOUNT);
  }, 120_000);
});
