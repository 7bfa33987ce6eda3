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
import { availableBalance } from '../../src/ledger/ledger.ts';
import { createLogger } from '../../src/logger.ts';
import { resolvePayment } from '../../src/payments/resolve.ts';
import { insertServiceClient } from '../support/service-client.ts';
import { createTestDb, type TestDb } from '../support/test-db.ts';

/**
 * Random sequences of fundings, payments with random sandbox outcomes and operator resolutions, driven through the
 * real services on a real database: after every sequence the ledger's invariants hold and each client's available
 * balance equals funded − completed − held.
 */

let testDb: TestDb;
let composed: Composed;
let payments: Composed['domains']['payments']['service'];

// The service's generated secrets land in its data directory: one of the test's own, removed after it.
const dataDir = mkdtempSync(path.join(tmpdir(), 'dispersa-prop-'));

beforeAll(async () => {
  testDb = await createTestDb();
  const config = loadConfig({
    DISPERSA_ADMIN_TOKEN: 'x'.repeat(32),
    DISPERSA_DATA_DIR: dataDir,
    DISPERSA_LOG_LEVEL: 'silent',
  });
  composed = await compose({
    config: { ...config, adminToken: 'x'.repeat(32) },
    db: testDb.db,
    logger: createLogger('silent'),
  });
  payments = composed.domains.payments.service;
});
afterAll(async () => {
  await composed.stop();
  await testDb.close();
  rmSync(dataDir, { recursive: true, force: true });
});

// Endings of the sandbox: completed, declined (01), unknown (02, 03, 04), wrong beneficiary (05), limit (09).
const ENDINGS = ['00', '01', '02', '03', '04', '05', '09', '17'];

type Op =
  | { kind: 'fund'; client: number; amount: number }
  | { kind: 'pay'; client: number; amount: number; ending: string; rail: 'PM' | 'CCE' }
  | { kind: 'resolve'; client: number; outcome: 'completed' | 'failed' };

const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({
    kind: fc.constant('fund' as const),
    client: fc.integer({ min: 0, max: 1 }),
    amount: fc.integer({ min: 1, max: 2_000_000 }),
  }),
  fc.record({
    kind: fc.constant('pay' as const),
    client: fc.integer({ min: 0, max: 1 }),
    amount: fc.integer({ min: 1, max: 3_000 }),
    ending: fc.constantFrom(...ENDINGS),
    rail: fc.constantFrom('PM' as const, 'CCE' as const),
  }),
  fc.record({
    kind: fc.constant('resolve' as const),
    client: fc.integer({ min: 0, max: 1 }),
    outcome: fc.constantFrom('completed' as const, 'failed' as const),
  }),
);

let run = 0;

const newClient = (): Promise<AuthContext> => insertServiceClient(testDb.db, `cli_prop_${run}`);

describe('ledger properties', () => {
  it('invariants hold and available = funded − completed − held after any sequence', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(op, { minLength: 1, maxLength: 16 }),
        fc.integer({ min: 0, max: 1_000_000 }),
        async (ops, opening) => {
          run++;
          const clients = [await newClient(), await newClient()];
          const funded = [0n, 0n];
          let n = 0;
          const openings: Op[] = [
            { kind: 'fund', client: 0, amount: opening + 1 },
            { kind: 'fund', client: 1, amount: 1_000_001 - opening },
          ];
          for (const o of [...openings, ...ops]) {
            const client = clients[o.client]!;
            if (o.kind === 'fund') {
              const r = await createFunding({ db: testDb.db, clock: composed.ctx.clock }, client.clientId, {
                amountMinor: String(o.amount),
                reference: `prop-${run}-${n++}`,
              });
              expect(r.kind).toBe('created');
              funded[o.client]! += BigInt(o.amount);
            } else if (o.kind === 'pay') {
              const destination =
                o.rail === 'PM'
                  ? { rail: 'PM', beneficiary: '04141234567', bankCode: '0102', docType: 'V', docNumber: '1' }
                  : {
                      rail: 'CCE',
                      beneficiary: '01020000000000000001',
                      bankCode: '0102',
                      docType: 'V',
                      docNumber: '1',
                      beneficiaryName: 'X',
                    };
              const r = await payments.create(client, `prop-${run}-${n++}`, {
                amountMinor: `${o.amount}${o.ending}`,
                currency: 'VES',
                ...destination,
              });
              expect(['created', 'rejected']).toContain(r.kind);
            } else {
              const { rows } = await testDb.db.query<{ id: string }>(
                "SELECT id FROM payments WHERE client_id = $1 AND state = 'unknown' ORDER BY seq LIMIT 1",
                [client.clientId],
              );
              if (rows[0]) {
                const r = await resolvePayment({ db: testDb.db, clock: composed.ctx.clock }, rows[0].id, {
                  outcome: o.outcome,
                  note: 'property test',
                });
                expect(r.kind).toBe('resolved');
              }
            }
          }
          expect(await ledgerViolations(testDb.db)).toEqual([]);
          for (const [i, client] of clients.entries()) {
            const { rows } = await testDb.db.query<{ completed: string; held: string }>(
              `SELECT coalesce(sum(source_amount_minor) FILTER (WHERE state = 'completed'), 0)::text AS completed,
                    coalesce(sum(source_amount_minor) FILTER (WHERE state IN ('processing', 'pending', 'unknown')), 0)::text AS held
             FROM payments WHERE client_id = $1`,
              [client.clientId],
            );
            const expected = funded[i]! - BigInt(rows[0]!.completed) - BigInt(rows[0]!.held);
            expect(await availableBalance(testDb.db, client.clientId, 'VES')).toBe(expected);
            expect(expected >= 0n).toBe(true);
          }
        },
      ),
      { numRuns: 25 },
    );
    // The sequences really exercised every outcome.
    const { rows } = await testDb.db.query<{ state: string; n: string }>(
      'SELECT state, count(*)::text AS n FROM payments GROUP BY state',
    );
    const states = new Map(rows.map((r) => [r.state, Number(r.n)]));
    expect(states.get('completed') ?? 0).toBeGreaterThan(0);
    expect(states.get('failed') ?? 0).toBeGreaterThan(0);
    expect(states.get('unknown') ?? 0).toBeGreaterThan(0);
  });
});
