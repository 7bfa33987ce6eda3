import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createApiKeyService } from '../../src/auth/api-keys.ts';
import { loadConfig } from '../../src/config.ts';
import type { AppContext } from '../../src/context.ts';
import { createFxDomain, SANDBOX_RATE } from '../../src/fx/domain.ts';
import { createLogger } from '../../src/logger.ts';
import { createMetrics } from '../../src/metrics/metrics.ts';
import { ManualClock } from '../../src/shared/clock.ts';
import { TEST_MASTER_KEY } from '../support/test-server.ts';
import { countRows, type FxTestDb, insertClient, openFxTestDb } from './fx-test-db.ts';

// The domain object itself, without HTTP: what compose and sandbox first start call.

let t: FxTestDb;
let clock: ManualClock;

beforeAll(async () => {
  t = await openFxTestDb('domain');
});
afterAll(async () => {
  await t?.close();
});
beforeEach(async () => {
  await t.db.query('DELETE FROM quotes');
  await t.db.query('DELETE FROM rates');
  clock = new ManualClock(Date.UTC(2026, 2, 1, 12, 0, 0));
});

function context(env: 'sandbox' | 'production'): AppContext {
  const config = loadConfig({
    DISPERSA_ENV: env,
    DISPERSA_ADMIN_TOKEN: 'test-admin-token-0123456789abcdef',
    DISPERSA_ALLOW_EMBEDDED_IN_PRODUCTION: 'true',
    DISPERSA_MASTER_KEY: TEST_MASTER_KEY,
  });
  return {
    config,
    db: t.db,
    clock,
    logger: createLogger('silent'),
    version: 'test',
    keys: createApiKeyService({ db: t.db }),
    metrics: createMetrics({ processMetrics: false }),
  };
}

describe('ensureRate', () => {
  it('sandbox: publishes USD at once when none is in force, and not again while it is fresh', async () => {
    const fx = createFxDomain(context('sandbox'));
    await fx.ensureRate('USD');
    const rate = await fx.rates.inForce(null, 'USD');
    expect(rate).toMatchObject({ source: 'sandbox-publisher', validFrom: clock.now() });
    await fx.ensureRate('USD');
    expect(await countRows(t.db, 'rates')).toBe(1);
    await fx.ensureRate('VES'); // nothing to convert: a no-op
    expect(await countRows(t.db, 'rates')).toBe(1);
  });

  it('production: nothing publishes by itself, so a missing rate is an error naming the operator route', async () => {
    const fx = createFxDomain(context('production'));
    await expect(fx.ensureRate('USD')).rejects.toThrow(/no rate in force for USD\/VES .*POST \/admin\/v1\/rates/);
    expect(await countRows(t.db, 'rates')).toBe(0);
    const published = await fx.rates.publish({
      base: 'USD',
      rate: '36.5',
      expiresAt: new Date(clock.now().getTime() + 60_000),
      source: 'operator',
    });
    expect(published.kind).toBe('published');
    await expect(fx.ensureRate('USD')).resolves.toBeUndefined();
  });

  it('production: rates.inForce stays null when nothing is published (no hidden default)', async () => {
    const fx = createFxDomain(context('production'));
    const usd = await insertClient(t.db, 'USD');
    expect(await fx.rates.inForce(usd.id, 'USD')).toBeNull();
    expect(await fx.rates.forClient(usd)).toEqual({ kind: 'no_rate', message: 'no rate in force for USD/VES' });
  });
});

describe('sandbox: the rate is kept in force', () => {
  it('concurrent lookups that find nothing publish once between them', async () => {
    const fx = createFxDomain(context('sandbox'));
    const usd = await insertClient(t.db, 'USD');
    const [viaClient, viaPair] = await Promise.all([
      Promise.all(Array.from({ length: 5 }, () => fx.rates.forClient(usd))),
      Promise.all(Array.from({ length: 5 }, () => fx.rates.inForce(usd.id, 'USD'))),
    ]);
    expect(await countRows(t.db, 'rates')).toBe(1);
    const ids = new Set([
      ...viaClient.map((r) => (r.kind === 'ok' ? r.rate.rateId : r.kind)),
      ...viaPair.map((r) => r?.rateId ?? null),
    ]);
    expect(ids.size).toBe(1);
    expect([...ids][0]).toMatch(/^rate_/);
  });

  it('a quote right after a lapse is priced with a fresh publication', async () => {
    const fx = createFxDomain(context('sandbox'));
    const usd = await insertClient(t.db, 'USD');
    await fx.ensureRate('USD');
    clock.advance(SANDBOX_RATE.lifetimeMs);
    const created = await fx.quotes.create(usd, 'k1', { amountType: 'TARGET', amountMinor: '150000' });
    expect(created.kind).toBe('created');
    expect(await countRows(t.db, 'rates')).toBe(2);
  });

  it('a lookup for another base is not kept: the honest no_rate', async () => {
    const fx = createFxDomain(context('sandbox'));
    const eur = await insertClient(t.db, 'EUR');
    expect(await fx.rates.forClient(eur)).toEqual({ kind: 'no_rate', message: 'no rate in force for EUR/VES' });
    expect(await countRows(t.db, 'rates')).toBe(0);
  });
});

describe('start and abort', () => {
  it('sandbox: start publishes at once; after abort the publisher does nothing more', async () => {
    const fx = createFxDomain(context('sandbox'));
    const abort = new AbortController();
    fx.start!(abort.signal);
    await expect.poll(() => countRows(t.db, 'rates'), { timeout: 5_000 }).toBe(1);
    abort.abort(); // the signal alone must stop the timer (compose calls stop() only later)
    clock.advance(SANDBOX_RATE.lifetimeMs);
    await new Promise((r) => setTimeout(r, SANDBOX_RATE.tickMs + 500));
    expect(await countRows(t.db, 'rates')).toBe(1);
    await fx.stop!();
  });

  it('production: start publishes nothing', async () => {
    const fx = createFxDomain(context('production'));
    const abort = new AbortController();
    fx.start!(abort.signal);
    await new Promise((r) => setTimeout(r, 200));
    abort.abort();
    await fx.stop!();
    expect(await countRows(t.db, 'rates')).toBe(0);
  });
});
