import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Rate } from '../../src/fx/model.ts';
import {
  CREATE_QUOTE_STATUS,
  type CreateQuoteResult,
  createQuoteService,
  type QuoteConfig,
  type QuoteService,
} from '../../src/fx/quotes.ts';
import { createRateService } from '../../src/fx/rates.ts';
import { ManualClock } from '../../src/shared/clock.ts';
import { countRows, type FxTestDb, insertClient, openFxTestDb } from './fx-test-db.ts';

const T0 = Date.UTC(2026, 0, 1, 12, 0, 0);
const TTL = 60;
const defaults: QuoteConfig = {
  ttlSeconds: TTL,
  maxLivePerClient: 20,
  maxLiveTotal: 10_000,
  minTargetMinor: 100n,
};

let t: FxTestDb;
let clock: ManualClock;
let rates: ReturnType<typeof createRateService>;
let usd: { id: string; currency: string };

beforeAll(async () => {
  t = await openFxTestDb('quotes');
});
afterAll(async () => {
  await t?.close();
});
beforeEach(async () => {
  await t.db.query('DELETE FROM quotes');
  await t.db.query('DELETE FROM rates');
  clock = new ManualClock(T0);
  rates = createRateService({ db: t.db, clock });
  usd = await insertClient(t.db, 'USD');
});

function service(config: Partial<QuoteConfig> = {}): QuoteService {
  return createQuoteService({ db: t.db, clock, rates, config: { ...defaults, ...config } });
}

async function publishUsd(rate = '36.5', extra: { clientId?: string; expiresInMs?: number } = {}): Promise<Rate> {
  const result = await rates.publish({
    base: 'USD',
    rate,
    expiresAt: new Date(clock.now().getTime() + (extra.expiresInMs ?? 3_600_000)),
    clientId: extra.clientId ?? null,
    source: 'operator',
  });
  if (result.kind !== 'published') throw new Error(JSON.stringify(result));
  return result.rate;
}

function created(result: CreateQuoteResult) {
  if (result.kind !== 'created') throw new Error(`expected created, got ${JSON.stringify(result)}`);
  return result.quote;
}

const liveUnused = async (clientId?: string): Promise<number> => {
  const { rows } = await t.db.query<{ n: string }>(
    `SELECT count(*) AS n FROM quotes WHERE used_by_payment_id IS NULL AND expires_at > $1
       AND ($2::text IS NULL OR client_id = $2)`,
    [clock.now(), clientId ?? null],
  );
  return Number(rows[0]!.n);
};

describe('create', () => {
  it('SOURCE keeps the source exactly and floors the target; the public form is the spec Quote', async () => {
    const rate = await publishUsd('36.123456789012');
    const quotes = service();
    const result = await quotes.create(usd, 'k1', { amountType: 'SOURCE', amountMinor: '1001' });
    expect(result.kind).toBe('created');
    expect(CREATE_QUOTE_STATUS[result.kind]).toBe(201);
    const quote = created(result);
    // 10.01 USD × 36.123456789012 = 361.595802458... VES → 36159 (floor)
    expect(quotes.toPublic(quote)).toEqual({
      quoteId: quote.quoteId,
      amountType: 'SOURCE',
      sourceCurrency: 'USD',
      sourceAmountMinor: '1001',
      targetCurrency: 'VES',
      targetAmountMinor: '36159',
      rateId: rate.rateId,
      expiresAt: '2026-01-01T12:01:00.000Z',
    });
    expect(quote.quoteId).toMatch(/^quote_[a-z2-7]+$/);
    expect(quote.clientId).toBe(usd.id);
    expect(quote.usedByPaymentId).toBeNull();
  });

  it('TARGET keeps the target exactly and ceils the source', async () => {
    await publishUsd('36.5');
    const quote = created(await service().create(usd, 'k1', { amountType: 'TARGET', amountMinor: '150000' }));
    // 1500.00 VES / 36.5 = 41.0958... USD → 4110 cents (ceil)
    expect(quote.targetAmountMinor).toBe(150000n);
    expect(quote.sourceAmountMinor).toBe(4110n);
  });

  it("uses the client's own rate when it has one", async () => {
    await publishUsd('36.5');
    const own = await publishUsd('30', { clientId: usd.id });
    const quote = created(await service().create(usd, 'k1', { amountType: 'SOURCE', amountMinor: '1000' }));
    expect(quote.rateId).toBe(own.rateId);
    expect(quote.targetAmountMinor).toBe(30000n);
  });

  it('replays the same key with the same content (200), even after the quote and its rate expired', async () => {
    await publishUsd('36.5', { expiresInMs: 30_000 });
    const quotes = service();
    const first = created(await quotes.create(usd, 'k1', { amountType: 'TARGET', amountMinor: '150000' }));
    clock.advance(10 * TTL * 1000);
    const again = await quotes.create(usd, 'k1', {
      amountType: 'TARGET',
      amountMinor: '150000',
      note: 'extra',
    });
    expect(again).toEqual({ kind: 'replayed', quote: first });
    expect(CREATE_QUOTE_STATUS.replayed).toBe(200);
    expect(await countRows(t.db, 'quotes')).toBe(1);
  });

  it('answers conflict (409) for the same key with other content', async () => {
    await publishUsd();
    const quotes = service();
    created(await quotes.create(usd, 'k1', { amountType: 'TARGET', amountMinor: '150000' }));
    for (const body of [
      { amountType: 'TARGET', amountMinor: '150001' },
      { amountType: 'SOURCE', amountMinor: '150000' },
    ]) {
      const result = await quotes.create(usd, 'k1', body);
      expect(result.kind).toBe('conflict');
      expect(CREATE_QUOTE_STATUS[result.kind]).toBe(409);
    }
  });

  it('keys are per client', async () => {
    await publishUsd();
    const other = await insertClient(t.db, 'USD');
    const quotes = service();
    const a = created(await quotes.create(usd, 'same', { amountType: 'TARGET', amountMinor: '150000' }));
    const b = created(await quotes.create(other, 'same', { amountType: 'SOURCE', amountMinor: '100' }));
    expect(b.quoteId).not.toBe(a.quoteId);
  });

  it.each([[undefined], [null], [''], ['   '], [42]])('needs an idempotency key (%j)', async (key) => {
    await publishUsd();
    const result = await service().create(usd, key, { amountType: 'SOURCE', amountMinor: '1000' });
    expect(result).toEqual({
      kind: 'missing_idempotency_key',
      message: 'idempotency-key header is required',
    });
    expect(CREATE_QUOTE_STATUS[result.kind]).toBe(400);
  });

  it('refuses an over-long idempotency key', async () => {
    const result = await service().create(usd, 'k'.repeat(256), {
      amountType: 'SOURCE',
      amountMinor: '1000',
    });
    expect(result.kind).toBe('invalid');
  });

  it.each([
    [{ amountMinor: '1000' }, /amountType is required/],
    [{ amountType: 'BOTH', amountMinor: '1000' }, /amountType must be SOURCE or TARGET/],
    [{ amountType: 'SOURCE', amountMinor: 1000 }, /amountMinor must be a positive integer/],
    [{ amountType: 'SOURCE', amountMinor: '0' }, /amountMinor must be a positive integer/],
    [{ amountType: 'SOURCE' }, /amountMinor is required/],
    ['text', /body must be object/],
  ])('answers invalid (400) for %j, creating nothing', async (body, message) => {
    await publishUsd();
    const result = await service().create(usd, 'k1', body);
    expect(result.kind).toBe('invalid');
    if (result.kind === 'invalid') expect(result.message).toMatch(message);
    expect(await countRows(t.db, 'quotes')).toBe(0);
  });

  it('validates the body before anything else: a VES wallet with a bad body gets 400', async () => {
    const ves = await insertClient(t.db, 'VES');
    expect((await service().create(ves, 'k1', { amountType: 'X', amountMinor: '1' })).kind).toBe('invalid');
  });

  it('rejects a target below the minimum, naming the minimum, on either side', async () => {
    await publishUsd('36.5');
    const quotes = service({ minTargetMinor: 100n });
    const low = await quotes.create(usd, 'k1', { amountType: 'TARGET', amountMinor: '99' });
    expect(low.kind).toBe('invalid');
    if (low.kind === 'invalid') expect(low.message).toMatch(/below the minimum of 100/);
    // 2 USD cents buy 73 VES cents: below 100 too.
    const computed = await quotes.create(usd, 'k2', { amountType: 'SOURCE', amountMinor: '2' });
    expect(computed.kind).toBe('invalid');
    if (computed.kind === 'invalid') expect(computed.message).toMatch(/target amount 73 is below the minimum of 100/);
    // Exactly the minimum passes; the failed keys stay free.
    expect(
      created(await quotes.create(usd, 'k1', { amountType: 'TARGET', amountMinor: '100' })).targetAmountMinor,
    ).toBe(100n);
  });

  it('never creates a zero target, even with no configured minimum', async () => {
    await publishUsd('0.000000000001');
    const result = await service({ minTargetMinor: 0n }).create(usd, 'k1', {
      amountType: 'SOURCE',
      amountMinor: '5',
    });
    expect(result.kind).toBe('invalid');
  });

  it('rejects a conversion whose computed side cannot be stored', async () => {
    await publishUsd('100000000000000000000');
    const result = await service().create(usd, 'k1', { amountType: 'SOURCE', amountMinor: '1000000' });
    expect(result.kind).toBe('invalid');
    if (result.kind === 'invalid') expect(result.message).toMatch(/too large/);
  });

  it('answers ves_balance (404) for a VES wallet', async () => {
    const ves = await insertClient(t.db, 'VES');
    const result = await service().create(ves, 'k1', { amountType: 'SOURCE', amountMinor: '1000' });
    expect(result).toEqual({
      kind: 'ves_balance',
      message: 'no rate applies: your wallet is already in VES',
    });
    expect(CREATE_QUOTE_STATUS[result.kind]).toBe(404);
  });

  it('answers no_rate (503) naming the pair when none is in force, and after the rate lapses', async () => {
    const eur = await insertClient(t.db, 'EUR');
    const quotes = service();
    expect(await quotes.create(eur, 'k1', { amountType: 'SOURCE', amountMinor: '1000' })).toEqual({
      kind: 'no_rate',
      message: 'no rate in force for EUR/VES',
    });
    await publishUsd('36.5', { expiresInMs: 1000 });
    clock.advance(1000);
    const lapsed = await quotes.create(usd, 'k1', { amountType: 'SOURCE', amountMinor: '1000' });
    expect(lapsed).toEqual({ kind: 'no_rate', message: 'no rate in force for USD/VES' });
    expect(CREATE_QUOTE_STATUS[lapsed.kind]).toBe(503);
  });
});

describe('ceilings of live, unused quotes', () => {
  const body = { amountType: 'SOURCE', amountMinor: '1000' };

  it('per client: full at the ceiling, freed by expiry and by use', async () => {
    await publishUsd();
    const quotes = service({ maxLivePerClient: 3 });
    const q1 = created(await quotes.create(usd, 'a', body));
    clock.advance(1000);
    created(await quotes.create(usd, 'b', body));
    created(await quotes.create(usd, 'c', body));
    const full = await quotes.create(usd, 'd', body);
    expect(full.kind).toBe('no_room');
    expect(CREATE_QUOTE_STATUS[full.kind]).toBe(409);
    // Another client still has room.
    const other = await insertClient(t.db, 'USD');
    created(await quotes.create(other, 'a', body));
    // Using one frees a place.
    const used = await t.db.tx((q) =>
      quotes.consume(q, { quoteId: q1.quoteId, clientId: usd.id, paymentId: 'pay_1', at: clock.now() }),
    );
    expect(used.kind).toBe('ok');
    created(await quotes.create(usd, 'd', body));
    expect((await quotes.create(usd, 'e', body)).kind).toBe('no_room');
    // Expiry frees the rest (b, c, d expire at T0+1s+TTL).
    clock.advance(TTL * 1000);
    created(await quotes.create(usd, 'e', body));
  });

  it('in total, across clients', async () => {
    await publishUsd();
    const quotes = service({ maxLivePerClient: 10, maxLiveTotal: 2 });
    const other = await insertClient(t.db, 'USD');
    created(await quotes.create(usd, 'a', body));
    created(await quotes.create(other, 'a', body));
    const full = await quotes.create(usd, 'b', body);
    expect(full.kind).toBe('no_room');
    if (full.kind === 'no_room') expect(full.message).toMatch(/service-wide/);
    clock.advance(TTL * 1000);
    created(await quotes.create(usd, 'b', body));
  });

  it('per client holds under concurrent creation', async () => {
    await publishUsd();
    const quotes = service({ maxLivePerClient: 5 });
    const results = await Promise.all(Array.from({ length: 40 }, (_, i) => quotes.create(usd, `k${i}`, body)));
    const kinds = results.map((r) => r.kind);
    expect(kinds.filter((k) => k === 'created')).toHaveLength(5);
    expect(kinds.filter((k) => k === 'no_room')).toHaveLength(35);
    expect(await liveUnused(usd.id)).toBe(5);
  });

  it('in total holds under concurrent creation by many clients', async () => {
    await publishUsd();
    const quotes = service({ maxLivePerClient: 100, maxLiveTotal: 7 });
    const clients = await Promise.all(Array.from({ length: 6 }, () => insertClient(t.db, 'USD')));
    const results = await Promise.all(
      clients.flatMap((c) => Array.from({ length: 8 }, (_, i) => quotes.create(c, `k${i}`, body))),
    );
    expect(results.filter((r) => r.kind === 'created')).toHaveLength(7);
    expect(results.filter((r) => r.kind === 'no_room')).toHaveLength(41);
    expect(await liveUnused()).toBe(7);
  });

  it('concurrent duplicates of one key create one quote', async () => {
    await publishUsd();
    const quotes = service();
    const results = await Promise.all(
      Array.from({ length: 25 }, () => quotes.create(usd, 'dup', { amountType: 'TARGET', amountMinor: '150000' })),
    );
    const made = results.filter((r) => r.kind === 'created');
    expect(made).toHaveLength(1);
    const id = created(made[0]!).quoteId;
    for (const r of results) {
      expect(r.kind === 'created' || r.kind === 'replayed').toBe(true);
      if (r.kind === 'replayed') expect(r.quote.quoteId).toBe(id);
    }
    expect(await countRows(t.db, 'quotes')).toBe(1);
  });
});

describe('consume and peek', () => {
  async function oneQuote(quotes: QuoteService, key = 'k1') {
    return created(await quotes.create(usd, key, { amountType: 'TARGET', amountMinor: '150000' }));
  }

  it('consumes once; a second payment gets used, the same payment gets its consumption back', async () => {
    await publishUsd();
    const quotes = service();
    const quote = await oneQuote(quotes);
    const input = { quoteId: quote.quoteId, clientId: usd.id, paymentId: 'pay_1', at: clock.now() };
    const first = await t.db.tx((q) => quotes.consume(q, input));
    expect(first.kind).toBe('ok');
    if (first.kind === 'ok') {
      expect(first.quote.usedByPaymentId).toBe('pay_1');
      expect(first.quote.usedAt?.getTime()).toBe(T0);
      expect(first.quote.targetAmountMinor).toBe(150000n);
    }
    expect(await t.db.tx((q) => quotes.consume(q, { ...input, paymentId: 'pay_2' }))).toEqual({
      kind: 'used',
      message: 'quote already used',
    });
    expect((await t.db.tx((q) => quotes.consume(q, input))).kind).toBe('ok');
  });

  it("answers not_found for an unknown quote and for another client's", async () => {
    await publishUsd();
    const quotes = service();
    const quote = await oneQuote(quotes);
    const other = await insertClient(t.db, 'USD');
    for (const [quoteId, clientId] of [
      ['quote_nope', usd.id],
      [quote.quoteId, other.id],
    ] as const) {
      const result = await t.db.tx((q) => quotes.consume(q, { quoteId, clientId, paymentId: 'p', at: clock.now() }));
      expect(result.kind).toBe('not_found');
      expect(await quotes.peek(t.db, quoteId, clientId)).toBeNull();
    }
    expect((await quotes.peek(t.db, quote.quoteId, usd.id))?.usedByPaymentId).toBeNull();
  });

  it('is live until expiresAt and dead from then on', async () => {
    await publishUsd();
    const quotes = service();
    const a = await oneQuote(quotes, 'a');
    const b = await oneQuote(quotes, 'b');
    const expiry = a.expiresAt.getTime();
    expect(expiry).toBe(T0 + TTL * 1000);
    const late = await t.db.tx((q) =>
      quotes.consume(q, { quoteId: a.quoteId, clientId: usd.id, paymentId: 'p1', at: new Date(expiry) }),
    );
    expect(late).toEqual({ kind: 'expired', message: 'quote expired' });
    const justInTime = await t.db.tx((q) =>
      quotes.consume(q, { quoteId: b.quoteId, clientId: usd.id, paymentId: 'p2', at: new Date(expiry - 1) }),
    );
    expect(justInTime.kind).toBe('ok');
    // Used and then expired: "used" is the more useful answer.
    const afterwards = await t.db.tx((q) =>
      quotes.consume(q, { quoteId: b.quoteId, clientId: usd.id, paymentId: 'p3', at: new Date(expiry + 1) }),
    );
    expect(afterwards.kind).toBe('used');
  });

  it('exactly one of two concurrent consumes wins', async () => {
    await publishUsd();
    const quotes = service();
    for (let round = 0; round < 5; round++) {
      const quote = await oneQuote(quotes, `race${round}`);
      const attempt = (paymentId: string) =>
        t.db.tx(async (q) => {
          const result = await quotes.consume(q, {
            quoteId: quote.quoteId,
            clientId: usd.id,
            paymentId,
            at: clock.now(),
          });
          // Hold the transaction open so the other one runs into the row while this one is uncommitted.
          await new Promise((r) => setTimeout(r, 30));
          return result;
        });
      const results = await Promise.all([attempt(`a${round}`), attempt(`b${round}`)]);
      expect(results.map((r) => r.kind).sort()).toEqual(['ok', 'used']);
      const stored = await quotes.peek(t.db, quote.quoteId, usd.id);
      const winner = results.find((r) => r.kind === 'ok');
      expect(stored?.usedByPaymentId).toBe(winner?.kind === 'ok' ? winner.quote.usedByPaymentId : 'none');
    }
  });

  it('a rolled-back consumption leaves the quote usable', async () => {
    await publishUsd();
    const quotes = service();
    const quote = await oneQuote(quotes);
    const input = { quoteId: quote.quoteId, clientId: usd.id, at: clock.now() };
    await expect(
      t.db.tx(async (q) => {
        expect((await quotes.consume(q, { ...input, paymentId: 'p1' })).kind).toBe('ok');
        throw new Error('payment failed later in the transaction');
      }),
    ).rejects.toThrow('payment failed');
    expect((await t.db.tx((q) => quotes.consume(q, { ...input, paymentId: 'p2' }))).kind).toBe('ok');
  });

  it('the table itself refuses a second use and a payment backing two quotes', async () => {
    await publishUsd();
    const quotes = service();
    const a = await oneQuote(quotes, 'a');
    const b = await oneQuote(quotes, 'b');
    await t.db.tx((q) => quotes.consume(q, { quoteId: a.quoteId, clientId: usd.id, paymentId: 'p1', at: clock.now() }));
    await expect(
      t.db.tx((q) => quotes.consume(q, { quoteId: b.quoteId, clientId: usd.id, paymentId: 'p1', at: clock.now() })),
    ).rejects.toMatchObject({ code: '23505' });
    await expect(
      t.db.query("UPDATE quotes SET used_by_payment_id = 'p9', used_at = NULL WHERE quote_id = $1", [b.quoteId]),
    ).rejects.toMatchObject({ code: '23514' });
  });
});
