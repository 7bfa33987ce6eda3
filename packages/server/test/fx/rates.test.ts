import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createRateService, type PublishRateInput, toPublicRate } from '../../src/fx/rates.ts';
import { ManualClock } from '../../src/shared/clock.ts';
import { countRows, type FxTestDb, insertClient, openFxTestDb } from './fx-test-db.ts';

const T0 = Date.UTC(2026, 0, 1, 12, 0, 0);
const MIN = 60_000;
const at = (ms: number) => new Date(T0 + ms);

let t: FxTestDb;
let clock: ManualClock;
let rates: ReturnType<typeof createRateService>;

beforeAll(async () => {
  t = await openFxTestDb('rates');
});
afterAll(async () => {
  await t?.close();
});
beforeEach(async () => {
  // Rates reference clients; quotes are empty here. Each test starts from no publication.
  await t.db.query('DELETE FROM quotes');
  await t.db.query('DELETE FROM rates');
  clock = new ManualClock(T0);
  rates = createRateService({ db: t.db, clock });
});

async function publish(input: Partial<PublishRateInput> & { rate: string }) {
  const result = await rates.publish({ base: 'USD', expiresAt: at(10 * MIN), source: 'operator', ...input });
  if (result.kind !== 'published') throw new Error(`publish failed: ${JSON.stringify(result)}`);
  return result.rate;
}

describe('publish', () => {
  it('returns the Rate object: new id, VES quote, 12 decimals, ISO ms timestamps', async () => {
    const rate = await publish({ rate: '36.5' });
    expect(toPublicRate(rate)).toEqual({
      rateId: rate.rateId,
      base: 'USD',
      quote: 'VES',
      rate: '36.500000000000',
      validFrom: '2026-01-01T12:00:00.000Z',
      expiresAt: '2026-01-01T12:10:00.000Z',
    });
    expect(rate.rateId).toMatch(/^rate_[a-z2-7]+$/);
    expect(rate.clientId).toBeNull();
    expect(rate.source).toBe('operator');
    const again = await publish({ rate: '36.5' });
    expect(again.rateId).not.toBe(rate.rateId);
  });

  it('accepts an explicit validFrom and timestamps as ISO text with a zone', async () => {
    const rate = await publish({
      rate: '40.123456789012',
      validFrom: '2026-01-01T13:00:00.000Z',
      expiresAt: '2026-01-01T10:00:00-04:00',
    });
    expect(toPublicRate(rate)).toMatchObject({
      rate: '40.123456789012',
      validFrom: '2026-01-01T13:00:00.000Z',
      expiresAt: '2026-01-01T14:00:00.000Z',
    });
  });

  it('accepts a leap day', async () => {
    const rate = await publish({ rate: '36.5', expiresAt: '2028-02-29T23:59:59.999Z' });
    expect(toPublicRate(rate).expiresAt).toBe('2028-02-29T23:59:59.999Z');
  });

  it.each<[string, Partial<PublishRateInput>, RegExp]>([
    ['lower-case base', { base: 'usd' }, /base must be a 3-letter currency code/],
    ['short base', { base: 'US' }, /base must be a 3-letter currency code/],
    ['VES base', { base: 'VES' }, /base must not be VES/],
    ['unsupported base', { base: 'XYZ' }, /base XYZ is not a supported currency/],
    ['zero rate', { rate: '0' }, /greater than 0/],
    ['zero rate with decimals', { rate: '0.000000000000' }, /greater than 0/],
    ['exponent', { rate: '1e3' }, /plain decimal text/],
    ['rate of exactly 1', { rate: '1.000000' }, /must not be exactly 1/],
    ['13 decimals', { rate: '36.5000000000001' }, /more than 12 decimals/],
    ['number rate', { rate: 36.5 as unknown as string }, /decimal text/],
    ['expiry equal to validFrom', { validFrom: at(MIN), expiresAt: at(MIN) }, /expiresAt must be after validFrom/],
    ['expiry before validFrom', { validFrom: at(2 * MIN), expiresAt: at(MIN) }, /expiresAt must be after validFrom/],
    ['expiry now', { expiresAt: at(0) }, /expiresAt must be after validFrom/],
    ['expiry in the past', { validFrom: at(-10 * MIN), expiresAt: at(-1) }, /expiresAt must be in the future/],
    ['zone-less expiry', { expiresAt: '2026-01-01T13:00:00' }, /expiresAt must be an ISO 8601/],
    ['date-only expiry', { expiresAt: '2026-01-02' }, /expiresAt must be an ISO 8601/],
    ['garbage validFrom', { validFrom: 'tomorrow' }, /validFrom must be an ISO 8601/],
    ['impossible hour', { expiresAt: '2026-01-02T25:00:00Z' }, /expiresAt must be an ISO 8601/],
    ['30 February', { expiresAt: '2026-02-30T10:00:00Z' }, /expiresAt must be an ISO 8601/],
    ['31 April', { expiresAt: '2026-04-31T10:00:00Z' }, /expiresAt must be an ISO 8601/],
    ['month 13', { expiresAt: '2026-13-01T10:00:00Z' }, /expiresAt must be an ISO 8601/],
    ['unknown source', { source: 'feed' as 'operator' }, /source must be one of/],
  ])('rejects %s', async (_name, override, message) => {
    const result = await rates.publish({
      base: 'USD',
      rate: '36.5',
      expiresAt: at(10 * MIN),
      source: 'operator',
      ...override,
    });
    expect(result.kind).toBe('invalid');
    if (result.kind === 'invalid') expect(result.message).toMatch(message);
    expect(await countRows(t.db, 'rates')).toBe(0);
  });

  it('rejects an unknown client and a client whose balance is another currency', async () => {
    const unknown = await rates.publish({
      base: 'USD',
      rate: '36.5',
      expiresAt: at(MIN),
      clientId: 'client_nope',
      source: 'operator',
    });
    expect(unknown).toEqual({ kind: 'unknown_client', message: 'unknown client client_nope' });
    const ves = await insertClient(t.db, 'VES');
    const mismatch = await rates.publish({
      base: 'USD',
      rate: '36.5',
      expiresAt: at(MIN),
      clientId: ves.id,
      source: 'operator',
    });
    expect(mismatch.kind).toBe('invalid');
    if (mismatch.kind === 'invalid') expect(mismatch.message).toMatch(/holds VES/);
  });

  it('the table refuses a zero rate, an empty window and a VES base even if the service is bypassed', async () => {
    const insert = (scaled: string, from: Date, to: Date, base = 'USD') =>
      t.db.query(
        `INSERT INTO rates (rate_id, base, rate_scaled, valid_from, expires_at, created_at, source)
         VALUES ($1, $2, $3, $4, $5, $4, 'operator')`,
        [`rate_${Math.random()}`, base, scaled, from, to],
      );
    await expect(insert('0', at(0), at(MIN))).rejects.toThrow();
    await expect(insert('1', at(MIN), at(MIN))).rejects.toThrow();
    await expect(insert('1', at(0), at(MIN), 'VES')).rejects.toThrow();
    await expect(insert('1', at(0), at(MIN))).resolves.toBeDefined();
  });
});

describe('inForce', () => {
  it('is null when nothing was published', async () => {
    expect(await rates.inForce(null, 'USD')).toBeNull();
  });

  it('serves a rate exactly within validFrom ≤ now < expiresAt, never an expired one', async () => {
    const rate = await publish({ rate: '36.5', validFrom: at(MIN), expiresAt: at(5 * MIN) });
    expect(await rates.inForce(null, 'USD')).toBeNull(); // not valid yet
    expect(await rates.inForce(null, 'USD', at(MIN - 1))).toBeNull();
    expect((await rates.inForce(null, 'USD', at(MIN)))?.rateId).toBe(rate.rateId);
    clock.set(at(5 * MIN - 1));
    expect((await rates.inForce(null, 'USD'))?.rateId).toBe(rate.rateId);
    clock.set(at(5 * MIN));
    expect(await rates.inForce(null, 'USD')).toBeNull();
    clock.advance(1);
    expect(await rates.inForce(null, 'USD')).toBeNull();
    expect(await rates.inForce(null, 'EUR', at(2 * MIN))).toBeNull(); // another pair
  });

  it('serves the most recently published among those in force', async () => {
    const first = await publish({ rate: '36.5', expiresAt: at(10 * MIN) });
    const second = await publish({ rate: '37', expiresAt: at(2 * MIN) });
    // Published later but not valid yet: does not displace the current one until its validFrom.
    const third = await publish({ rate: '38', validFrom: at(MIN), expiresAt: at(3 * MIN) });
    expect((await rates.inForce(null, 'USD'))?.rateId).toBe(second.rateId);
    expect((await rates.inForce(null, 'USD', at(MIN)))?.rateId).toBe(third.rateId);
    // The newest expires: the older one still in force is served again.
    expect((await rates.inForce(null, 'USD', at(3 * MIN)))?.rateId).toBe(first.rateId);
    expect(await rates.inForce(null, 'USD', at(10 * MIN))).toBeNull();
  });

  it("gives a client's own rate precedence over the general one, and only to that client", async () => {
    const alice = await insertClient(t.db, 'USD');
    const bob = await insertClient(t.db, 'USD');
    const own = await publish({ rate: '35', clientId: alice.id, expiresAt: at(2 * MIN) });
    const general = await publish({ rate: '36.5', expiresAt: at(10 * MIN) }); // newer, still loses for alice
    expect((await rates.inForce(alice.id, 'USD'))?.rateId).toBe(own.rateId);
    expect((await rates.inForce(bob.id, 'USD'))?.rateId).toBe(general.rateId);
    expect((await rates.inForce(null, 'USD'))?.rateId).toBe(general.rateId);
    // When the client's own rate lapses, the general one applies to it.
    expect((await rates.inForce(alice.id, 'USD', at(2 * MIN)))?.rateId).toBe(general.rateId);
  });

  it('serves a client rate even with no general rate at all', async () => {
    const alice = await insertClient(t.db, 'EUR');
    const own = await publish({ base: 'EUR', rate: '40', clientId: alice.id });
    expect((await rates.inForce(alice.id, 'EUR'))?.rateId).toBe(own.rateId);
    expect(await rates.inForce(null, 'EUR')).toBeNull();
  });
});

describe('forClient (GET /v2/rate semantics)', () => {
  it('answers ves_balance for a VES wallet and no_rate with the real pair otherwise', async () => {
    const ves = await insertClient(t.db, 'VES');
    const usd = await insertClient(t.db, 'USD');
    const eur = await insertClient(t.db, 'EUR');
    expect(await rates.forClient(ves)).toEqual({
      kind: 'ves_balance',
      message: 'no rate applies: your wallet is already in VES',
    });
    expect(await rates.forClient(usd)).toEqual({ kind: 'no_rate', message: 'no rate in force for USD/VES' });
    expect(await rates.forClient(eur)).toEqual({ kind: 'no_rate', message: 'no rate in force for EUR/VES' });
    const rate = await publish({ rate: '36.5' });
    const ok = await rates.forClient(usd);
    expect(ok.kind === 'ok' && ok.rate.rateId).toBe(rate.rateId);
    clock.set(at(10 * MIN));
    expect((await rates.forClient(usd)).kind).toBe('no_rate');
  });
});

describe('lastPublished', () => {
  it('returns the newest publication of the pair even after it expired', async () => {
    expect(await rates.lastPublished(null, 'USD')).toBeNull();
    await publish({ rate: '36.5' });
    const last = await publish({ rate: '36.7', expiresAt: at(MIN) });
    clock.set(at(20 * MIN));
    expect((await rates.lastPublished(null, 'USD'))?.rateId).toBe(last.rateId);
  });
});
