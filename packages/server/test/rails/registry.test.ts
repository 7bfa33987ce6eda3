import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startBankSim } from '../../src/bank-sim/bank-sim.ts';
import { loadConfig } from '../../src/config.ts';
import { createRails, statementPageLinesFor } from '../../src/rails/registry.ts';
import { ManualClock } from '../../src/shared/clock.ts';
import { gatewayConfig, KEY_ID, pmTransfer, SECRET } from '../bank-sim/sim-fixture.ts';
import { openTestDb, type TestDb } from './sandbox/test-db.ts';

/**
 * Reconciliation stores at least a whole statement page in one transaction, and on the embedded database that
 * transaction holds every request: whichever rail the service has, its statement source pages no longer than the
 * database's batch (reconciliation/ingest.ts).
 */

let t: TestDb;
const clock = new ManualClock(Date.UTC(2026, 0, 5, 18, 0));

beforeAll(async () => {
  t = await openTestDb();
});
afterAll(async () => {
  await t.cleanup();
});

const baseEnv = { DISPERSA_ADMIN_TOKEN: 'a'.repeat(32), DISPERSA_LOG_LEVEL: 'silent' };

describe('the rails the service is given', () => {
  it('page the statement by what this database stores in one transaction', () => {
    expect(statementPageLinesFor(t.db.kind)).toBe(t.db.kind === 'embedded' ? 100 : 250);
  });

  it('sandbox: the simulated bank hands out pages of that size', async () => {
    await t.resetBank();
    const config = loadConfig({ ...baseEnv, DISPERSA_SANDBOX_SETTLE_MS: '0' });
    const rails = createRails({ config, db: t.db, clock });
    const page = statementPageLinesFor(t.db.kind);
    for (let i = 0; i <= page; i++) {
      const added = await rails.sandboxBank!.addLine({ direction: 'credit', amountMinor: 1n, reference: `P${i}` });
      expect(added.ok).toBe(true);
    }
    const first = await rails.statements.fetchSince(null);
    expect(first.lines).toHaveLength(page);
    const rest = await rails.statements.fetchSince(first.cursor);
    expect(rest.lines.map((l) => l.reference)).toEqual([`P${page}`]);
  });

  it('production: the bank gateway is asked for pages of that size', async () => {
    const sim = await startBankSim({
      port: 0,
      keyId: KEY_ID,
      secret: SECRET,
      clock,
      openingBalances: { VES: 10n ** 12n },
    });
    try {
      const gateway = gatewayConfig(sim.url);
      // Production's configuration insists on a server database and a master key; the rails read only which kind of
      // database the service was given (this test's), never its address.
      const config = loadConfig({
        ...baseEnv,
        DISPERSA_ENV: 'production',
        DATABASE_URL: 'postgres://unused.invalid/db',
        DISPERSA_MASTER_KEY: randomBytes(32).toString('base64'),
        DISPERSA_BANK_GATEWAY_URL: gateway.url,
        DISPERSA_BANK_GATEWAY_KEY_ID: gateway.keyId,
        DISPERSA_BANK_GATEWAY_SECRET: gateway.secret,
      });
      const rails = createRails({ config, db: t.db, clock });
      const page = statementPageLinesFor(t.db.kind);
      for (let i = 0; i <= page; i++) expect(await rails.rail.submit(pmTransfer())).toEqual({ kind: 'completed' });
      const first = await rails.statements.fetchSince(null);
      expect(first.lines).toHaveLength(page);
      const rest = await rails.statements.fetchSince(first.cursor);
      expect(rest.lines).toHaveLength(1);
    } finally {
      await sim.close();
    }
  });
});
