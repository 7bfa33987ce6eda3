import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { parseRate } from '../../src/fx/arithmetic.ts';
import { createSandboxRatePublisher } from '../../src/fx/rate-publisher.ts';
import { createRateService } from '../../src/fx/rates.ts';
import { ManualClock } from '../../src/shared/clock.ts';
import { countRows, type FxTestDb, openFxTestDb } from './fx-test-db.ts';

const LIFETIME = 60_000;

let t: FxTestDb;
let clock: ManualClock;
let rates: ReturnType<typeof createRateService>;

beforeAll(async () => {
  t = await openFxTestDb('publisher');
});
afterAll(async () => {
  await t?.close();
});
beforeEach(async () => {
  await t.db.query('DELETE FROM quotes');
  await t.db.query('DELETE FROM rates');
  clock = new ManualClock(Date.UTC(2026, 0, 1));
  rates = createRateService({ db: t.db, clock });
});

/** A seeded generator, so a failing walk can be replayed. */
function seeded(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

const scaled = (text: string): bigint => {
  const parsed = parseRate(text);
  if (!parsed.ok) throw new Error(text);
  return parsed.scaled;
};

describe('sandbox rate publisher', () => {
  it('publishes the start rate when none is in force, then waits until half the lifetime has passed', async () => {
    const publisher = createSandboxRatePublisher({ rates, clock, lifetimeMs: LIFETIME, driftBps: 50 });
    const first = await publisher.tick();
    expect(first).toMatchObject({ base: 'USD', quote: 'VES', rateScaled: scaled('36.5'), clientId: null });
    expect(first?.source).toBe('sandbox-publisher');
    expect(first?.expiresAt.getTime()).toBe(clock.now().getTime() + LIFETIME);
    expect(await publisher.tick()).toBeNull();
    clock.advance(LIFETIME / 2 - 1);
    expect(await publisher.tick()).toBeNull();
    clock.advance(1);
    const second = await publisher.tick();
    expect(second).not.toBeNull();
    expect(second?.rateId).not.toBe(first?.rateId);
    expect((await rates.inForce(null, 'USD'))?.rateId).toBe(second?.rateId);
  });

  it('keeps a rate in force across simulated time, moving by at most driftBps per step within the bound', async () => {
    const random = seeded(7);
    const publisher = createSandboxRatePublisher({
      rates,
      clock,
      lifetimeMs: LIFETIME,
      driftBps: 100,
      maxDeviationBps: 500,
      random,
    });
    const centre = scaled('36.5');
    let previous: bigint | null = null;
    const values = new Set<bigint>();
    for (let i = 0; i < 150; i++) {
      const published = await publisher.tick();
      if (published !== null) {
        if (previous !== null) {
          // one step: |Δ| ≤ drift (plus the 4-decimal quantisation)
          const delta = published.rateScaled - previous;
          const bound = (previous * 100n) / 10_000n + 10n ** 8n;
          expect(delta <= bound && -delta <= bound).toBe(true);
        }
        expect(published.rateScaled >= (centre * 9_500n) / 10_000n).toBe(true);
        expect(published.rateScaled <= (centre * 10_500n) / 10_000n).toBe(true);
        values.add(published.rateScaled);
        previous = published.rateScaled;
      }
      // The demo never runs dry between ticks spaced under half a lifetime.
      expect(await rates.inForce(null, 'USD')).not.toBeNull();
      clock.advance(Math.floor(random() * (LIFETIME / 2 - 1)) + 1);
      expect(await rates.inForce(null, 'USD')).not.toBeNull();
    }
    expect(values.size).toBeGreaterThan(5); // it does move
  });

  it('recovers after a gap longer than the lifetime, walking on from the last value', async () => {
    const publisher = createSandboxRatePublisher({
      rates,
      clock,
      base: 'EUR',
      start: '40',
      lifetimeMs: LIFETIME,
      driftBps: 0,
    });
    await publisher.tick();
    clock.advance(10 * LIFETIME);
    expect(await rates.inForce(null, 'EUR')).toBeNull();
    const again = await publisher.tick();
    expect(again?.rateScaled).toBe(scaled('40'));
    expect((await rates.inForce(null, 'EUR'))?.rateId).toBe(again?.rateId);
  });

  it('leaves a fresh operator rate alone and takes over when it nears expiry', async () => {
    const operator = await rates.publish({
      base: 'USD',
      rate: '38',
      expiresAt: new Date(clock.now().getTime() + 4 * LIFETIME),
      source: 'operator',
    });
    expect(operator.kind).toBe('published');
    const publisher = createSandboxRatePublisher({ rates, clock, lifetimeMs: LIFETIME, driftBps: 0 });
    expect(await publisher.tick()).toBeNull();
    clock.advance(2 * LIFETIME);
    const next = await publisher.tick();
    expect(next?.rateScaled).toBe(scaled('38')); // drift 0: continues from the operator's value
  });

  it('start() ticks at once and on a timer; stop() ends the loop', async () => {
    const errors: unknown[] = [];
    const publisher = createSandboxRatePublisher({
      rates,
      clock,
      lifetimeMs: LIFETIME,
      driftBps: 10,
      onError: (err) => errors.push(err),
    });
    publisher.start(5);
    await expect.poll(() => rates.inForce(null, 'USD'), { timeout: 5000 }).not.toBeNull();
    clock.advance(LIFETIME); // the rate lapses; the loop must notice without help
    await expect.poll(() => rates.inForce(null, 'USD'), { timeout: 5000 }).not.toBeNull();
    await publisher.stop();
    const count = await countRows(t.db, 'rates');
    expect(count).toBeGreaterThanOrEqual(2);
    clock.advance(LIFETIME);
    await new Promise((r) => setTimeout(r, 50));
    expect(await countRows(t.db, 'rates')).toBe(count);
    expect(errors).toEqual([]);
  });

  it('refuses a nonsensical configuration', () => {
    expect(() => createSandboxRatePublisher({ rates, clock, lifetimeMs: 0, driftBps: 10 })).toThrow(RangeError);
    expect(() => createSandboxRatePublisher({ rates, clock, lifetimeMs: 1000, driftBps: -1 })).toThrow(RangeError);
    expect(() => createSandboxRatePublisher({ rates, clock, lifetimeMs: 1000, driftBps: 10, start: '0' })).toThrow(
      RangeError,
    );
  });
});
