import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { pmPaymentBody, seedClients } from '../../bench/seed.ts';
import { type ServerProcess, startServerProcess } from '../../bench/server-process.ts';
import { createAdminCaller, createSignedCaller } from '../../bench/signing.ts';
import type { Db } from '../../src/db/db.ts';
import { createEmbeddedDb } from '../../src/db/embedded.ts';
import { createPostgresDb } from '../../src/db/postgres.ts';
import { ledgerViolations } from '../../src/ledger/invariants.ts';
import { FAILPOINTS } from '../../src/shared/failpoints.ts';
import { createTestDatabaseUrl, usingPostgres } from '../support/test-db.ts';

/**
 * The process killed (SIGKILL) at each seam of a payment batch: after the reserve committed (nothing sent), after
 * the rail took the batch (nothing booked), after the booking committed (no answer sent). The service is started
 * again, every client retries with the same idempotency key, and every payment must end completed: sent to the
 * bank exactly once, debited exactly once, its event written, the ledger exact. On both databases.
 */

const ADMIN_TOKEN = `failpoint-admin-${randomBytes(12).toString('hex')}`;
const SENDERS = 4;
const AMOUNT = 150_000n; // ends in 00: the sandbox completes it at once
const FUNDED = 10_000_000n;

let dataDir = '';
let database: { url: string; drop(): Promise<void> } | null = null;
let server: ServerProcess | null = null;

afterEach(async () => {
  await server?.kill();
  server = null;
  await database?.drop();
  database = null;
  if (dataDir !== '') await rm(dataDir, { recursive: true, force: true });
});

function start(failpoint: string | null): Promise<ServerProcess> {
  return startServerProcess({
    dataDir,
    adminToken: ADMIN_TOKEN,
    databaseUrl: database?.url ?? null,
    env: {
      DISPERSA_LOG_LEVEL: 'error',
      DISPERSA_DISPATCH_TIMEOUT_MS: '1000',
      DISPERSA_RECONCILE_INTERVAL_MS: '100',
      ...(failpoint === null ? {} : { DISPERSA_FAILPOINTS: failpoint }),
    },
  });
}

async function openDb(): Promise<Db> {
  return database ? createPostgresDb(database.url, { max: 2 }) : createEmbeddedDb(path.join(dataDir, 'db'));
}

describe('a batch killed between its phases', () => {
  for (const point of FAILPOINTS) {
    it(`${point}: every payment completes once after the restart, the ledger exact`, async () => {
      dataDir = await mkdtemp(path.join(tmpdir(), 'dispersa-failpoint-'));
      database = usingPostgres() ? await createTestDatabaseUrl() : null;
      server = await start(null);
      const admin = createAdminCaller(server.adminUrl, ADMIN_TOKEN);
      const keys = await seedClients(admin, { clients: 1, keysPerClient: SENDERS, fundMinor: FUNDED, label: point });
      const clientId = keys[0]!.clientId;
      await server.stop();

      // Armed: the first batch to reach the point kills the process, with every request in flight.
      server = await start(point);
      const body = pmPaymentBody(String(AMOUNT));
      const callers = keys.map((k) => createSignedCaller(server!.baseUrl, k.apiKey, k.privatePem));
      const idempotencyKeys = keys.map((_, i) => `fp-${point}-${i}`);
      const first = await Promise.allSettled(
        callers.map((call, i) => call('POST', '/v2/payments', { body, idempotencyKey: idempotencyKeys[i] })),
      );
      const died = await server.exited;
      expect(died.signal, `the server passed ${point} without dying`).toBe('SIGKILL');
      // Whatever answer got out before the kill was a success; the rest were lost on the wire.
      for (const r of first) if (r.status === 'fulfilled') expect(r.value.status).toBeLessThan(300);

      server = await start(null);
      const retried = keys.map((k) => createSignedCaller(server!.baseUrl, k.apiKey, k.privatePem));
      const ids: string[] = [];
      for (const [i, call] of retried.entries()) {
        const answer = await call('POST', '/v2/payments', { body, idempotencyKey: idempotencyKeys[i] });
        expect([200, 201], JSON.stringify(answer.body)).toContain(answer.status);
        ids.push((answer.body as { payload: { id: string } }).payload.id);
      }
      // A payment the dead process reserved but never finished is finished by the recovery worker.
      const deadline = Date.now() + 20_000;
      for (const [i, id] of ids.entries()) {
        for (;;) {
          const read = await retried[i]!('GET', `/v2/payments/${id}`);
          const state = (read.body as { payload: { state: string } }).payload.state;
          if (state === 'completed') break;
          expect(['processing'], `${id} is ${state}`).toContain(state);
          if (Date.now() > deadline) throw new Error(`${id} still ${state}`);
          await new Promise((r) => setTimeout(r, 200));
        }
      }
      await server.stop();
      server = null;

      const db = await openDb();
      try {
        expect(await ledgerViolations(db)).toEqual([]);
        const transfers = await db.query<{ payment_id: string; resubmissions: number }>(
          'SELECT payment_id, resubmissions FROM sandbox_bank_transfers',
        );
        expect(transfers.rows.map((t) => t.payment_id).sort()).toEqual([...ids].sort());
        for (const t of transfers.rows) expect(t.resubmissions).toBe(0);
        const entries = await db.query<{ payment_id: string }>(
          "SELECT payment_id FROM journal_entries WHERE kind = 'payout' ORDER BY payment_id",
        );
        expect(entries.rows.map((e) => e.payment_id)).toEqual([...ids].sort());
        const events = await db.query<{ payment_id: string; body: string }>(
          'SELECT payment_id, body FROM events WHERE payment_id = ANY($1::text[])',
          [ids],
        );
        for (const id of ids) {
          const states = events.rows
            .filter((e) => e.payment_id === id)
            .map((e) => (JSON.parse(e.body) as { data: { payment: { state: string } } }).data.payment.state);
          expect(states, id).toEqual(['completed']);
        }
        const balance = await db.query<{ available_minor: string }>(
          'SELECT available_minor FROM ledger_accounts WHERE client_id = $1',
          [clientId],
        );
        expect(BigInt(balance.rows[0]!.available_minor)).toBe(FUNDED - AMOUNT * BigInt(SENDERS));
        const open = await db.query("SELECT 1 FROM holds WHERE status = 'held'");
        expect(open.rows).toEqual([]);
      } finally {
        await db.close();
      }
    }, 120_000);
  }
});
