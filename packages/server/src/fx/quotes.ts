import type { Config } from '../config.ts';
import { type Db, isUniqueViolation, type Queryable } from '../db/db.ts';
import type { Clock } from '../shared/clock.ts';
import { randomId } from '../shared/ids.ts';
import { isoTime } from '../shared/money.ts';
import { quoteAmounts } from './convert.ts';
import { type AmountType, type PublicQuote, QUOTE_CURRENCY, type Quote } from './model.ts';
import {
  MAX_AMOUNT_MINOR,
  MAX_IDEMPOTENCY_KEY_LENGTH,
  parseQuoteRequest,
  type QuoteRequest,
  quoteRequestFingerprint,
} from './quote-request.ts';
import type { RateService } from './rates.ts';

export interface QuoteConfig {
  ttlSeconds: number;
  maxLivePerClient: number;
  maxLiveTotal: number;
  minTargetMinor: bigint;
}

export function quoteConfigFrom(config: Config): QuoteConfig {
  return {
    ttlSeconds: config.quoteTtlSeconds,
    maxLivePerClient: config.quoteMaxLivePerClient,
    maxLiveTotal: config.quoteMaxLiveTotal,
    minTargetMinor: config.quoteMinTargetMinor,
  };
}

export type CreateQuoteResult =
  | { kind: 'created'; quote: Quote }
  | { kind: 'replayed'; quote: Quote }
  | { kind: 'invalid'; message: string }
  | { kind: 'missing_idempotency_key'; message: string }
  | { kind: 'ves_balance'; message: string }
  | { kind: 'no_rate'; message: string }
  | { kind: 'conflict'; message: string }
  | { kind: 'no_room'; message: string };

/** HTTP status of each outcome of POST /v2/quotes. */
export const CREATE_QUOTE_STATUS: Record<CreateQuoteResult['kind'], number> = {
  created: 201,
  replayed: 200,
  invalid: 400,
  missing_idempotency_key: 400,
  ves_balance: 404,
  no_rate: 503,
  conflict: 409,
  no_room: 409,
};

export const MISSING_IDEMPOTENCY_KEY_MESSAGE = 'idempotency-key header is required';

export type QuoteInputResult =
  | { ok: true; key: string; request: QuoteRequest }
  | { ok: false; kind: 'missing_idempotency_key' | 'invalid'; message: string };

/**
 * The checks of a quote request that need no database, in the order create applies them: the key, then the
 * body. Exported so the route can run them before schema validation and keep these messages.
 */
export function checkQuoteInput(idempotencyKey: unknown, body: unknown): QuoteInputResult {
  if (typeof idempotencyKey !== 'string' || idempotencyKey.trim() === '') {
    return { ok: false, kind: 'missing_idempotency_key', message: MISSING_IDEMPOTENCY_KEY_MESSAGE };
  }
  if (idempotencyKey.length > MAX_IDEMPOTENCY_KEY_LENGTH) {
    return {
      ok: false,
      kind: 'invalid',
      message: `idempotency-key must be at most ${MAX_IDEMPOTENCY_KEY_LENGTH} characters`,
    };
  }
  const parsed = parseQuoteRequest(body);
  if (!parsed.ok) return { ok: false, kind: 'invalid', message: parsed.message };
  return { ok: true, key: idempotencyKey, request: parsed.request };
}

export type ConsumeQuoteResult =
  | { kind: 'ok'; quote: Quote }
  | { kind: 'not_found'; message: string }
  | { kind: 'used'; message: string }
  | { kind: 'expired'; message: string };

/** HTTP status of POST /v2/payments citing a quote (operator contract §5); expired also fails the payment. */
export const CONSUME_QUOTE_STATUS: Record<ConsumeQuoteResult['kind'], number> = {
  ok: 201,
  not_found: 404,
  used: 409,
  expired: 422,
};

export interface ConsumeQuoteInput {
  quoteId: string;
  clientId: string;
  paymentId: string;
  at: Date;
}

export interface QuoteService {
  create(client: { id: string; currency: string }, idempotencyKey: unknown, body: unknown): Promise<CreateQuoteResult>;
  /**
   * Marks the quote used by paymentId. Call it inside the payment's transaction: the guarded UPDATE and the
   * UNIQUE column make single use hold however many payments race for the quote.
   */
  consume(q: Queryable, input: ConsumeQuoteInput): Promise<ConsumeQuoteResult>;
  /** Reads a quote of this client without consuming it; null for an unknown id or another client's quote. */
  peek(q: Queryable, quoteId: string, clientId: string): Promise<Quote | null>;
  toPublic(quote: Quote): PublicQuote;
}

export interface QuoteServiceDeps {
  db: Db;
  clock: Clock;
  rates: RateService;
  config: QuoteConfig;
}

// Advisory lock namespaces (the two-int form, a key space apart from the single-bigint migration lock).
const CLIENT_LOCK_NAMESPACE = 4_242_051;
const TOTAL_LOCK_NAMESPACE = 4_242_052;

export interface QuoteRow {
  quote_id: string;
  client_id: string;
  request_fingerprint: string;
  amount_type: AmountType;
  source_currency: string;
  source_amount_minor: string;
  target_amount_minor: string;
  rate_id: string;
  rate_scaled: string;
  created_at: Date;
  expires_at: Date;
  used_by_payment_id: string | null;
  used_at: Date | null;
}

export const QUOTE_COLUMNS = `quote_id, client_id, request_fingerprint, amount_type, source_currency, source_amount_minor,
  target_amount_minor, rate_id, rate_scaled, created_at, expires_at, used_by_payment_id, used_at`;

export function quoteFromRow(row: QuoteRow): Quote {
  return {
    quoteId: row.quote_id,
    clientId: row.client_id,
    amountType: row.amount_type,
    sourceCurrency: row.source_currency,
    sourceAmountMinor: BigInt(row.source_amount_minor),
    targetCurrency: QUOTE_CURRENCY,
    targetAmountMinor: BigInt(row.target_amount_minor),
    rateId: row.rate_id,
    rateScaled: BigInt(row.rate_scaled),
    createdAt: new Date(row.created_at),
    expiresAt: new Date(row.expires_at),
    usedByPaymentId: row.used_by_payment_id,
    usedAt: row.used_at === null ? null : new Date(row.used_at),
  };
}

export function toPublicQuote(quote: Quote): PublicQuote {
  return {
    quoteId: quote.quoteId,
    amountType: quote.amountType,
    sourceCurrency: quote.sourceCurrency,
    sourceAmountMinor: quote.sourceAmountMinor.toString(),
    targetCurrency: quote.targetCurrency,
    targetAmountMinor: quote.targetAmountMinor.toString(),
    rateId: quote.rateId,
    expiresAt: isoTime(quote.expiresAt),
  };
}

async function findByKey(q: Queryable, clientId: string, key: string): Promise<QuoteRow | undefined> {
  const { rows } = await q.query<QuoteRow>(
    `SELECT ${QUOTE_COLUMNS} FROM quotes WHERE client_id = $1 AND idempotency_key = $2`,
    [clientId, key],
  );
  return rows[0];
}

function replayOrConflict(row: QuoteRow, fingerprint: string): CreateQuoteResult {
  if (row.request_fingerprint !== fingerprint) {
    return { kind: 'conflict', message: 'idempotency-key already used with different content' };
  }
  return { kind: 'replayed', quote: quoteFromRow(row) };
}

/** Live, unused quotes counted up to `limit` only: the answer needed is "limit reached?", not the total. */
async function countLive(q: Queryable, clientId: string | null, at: Date, limit: number): Promise<number> {
  const { rows } =
    clientId === null
      ? await q.query<{ n: string }>(
          `SELECT count(*) AS n FROM (
             SELECT 1 FROM quotes WHERE used_by_payment_id IS NULL AND expires_at > $1 LIMIT $2) live`,
          [at, limit],
        )
      : await q.query<{ n: string }>(
          `SELECT count(*) AS n FROM (
             SELECT 1 FROM quotes
              WHERE client_id = $3 AND used_by_payment_id IS NULL AND expires_at > $1 LIMIT $2) live`,
          [at, limit, clientId],
        );
  return Number(rows[0]!.n);
}

export function createQuoteService(deps: QuoteServiceDeps): QuoteService {
  const { db, clock, rates, config } = deps;
  // A zero target could not be paid out; a configured minimum of 0 still means "at least one minor unit".
  const minTarget = config.minTargetMinor > 0n ? config.minTargetMinor : 1n;

  async function insertWithinCeilings(
    client: { id: string; currency: string },
    key: string,
    fingerprint: string,
    request: QuoteRequest,
    priced: { sourceAmountMinor: bigint; targetAmountMinor: bigint; rateId: string; rateScaled: bigint },
    now: Date,
  ): Promise<CreateQuoteResult> {
    return db.tx(async (q) => {
      // Count-then-insert is only correct if no other creation counts at the same time. Advisory
      // transaction locks serialise exactly that: the client's lock first (so duplicates of one key
      // and the per-client ceiling wait on it), then the one global lock for the total ceiling, always
      // in that order so two creations can never deadlock. Both are released by the commit that makes
      // the new row visible, so the next holder's count includes it. Not a counter row: space frees
      // itself when quotes expire, with no write to decrement a counter, so a counter would need a sweeper.
      await q.query('SELECT pg_advisory_xact_lock($1::int, hashtext($2))', [CLIENT_LOCK_NAMESPACE, client.id]);
      const existing = await findByKey(q, client.id, key);
      if (existing !== undefined) return replayOrConflict(existing, fingerprint);
      await q.query('SELECT pg_advisory_xact_lock($1::int, 0)', [TOTAL_LOCK_NAMESPACE]);
      if ((await countLive(q, client.id, now, config.maxLivePerClient)) >= config.maxLivePerClient) {
        return {
          kind: 'no_room',
          message: `no quote room: ${config.maxLivePerClient} live quotes for this client; wait for one to expire or be used`,
        };
      }
      if ((await countLive(q, null, now, config.maxLiveTotal)) >= config.maxLiveTotal) {
        return {
          kind: 'no_room',
          message: 'no quote room: the service-wide ceiling of live quotes is reached; wait for quotes to expire',
        };
      }
      const expiresAt = new Date(now.getTime() + config.ttlSeconds * 1000);
      const { rows } = await q.query<QuoteRow>(
        `INSERT INTO quotes (quote_id, client_id, idempotency_key, request_fingerprint, amount_type,
           source_currency, source_amount_minor, target_currency, target_amount_minor, rate_id, rate_scaled,
           created_at, expires_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, 'VES', $8, $9, $10, $11, $12)
         RETURNING ${QUOTE_COLUMNS}`,
        [
          randomId('quote'),
          client.id,
          key,
          fingerprint,
          request.amountType,
          client.currency,
          priced.sourceAmountMinor.toString(),
          priced.targetAmountMinor.toString(),
          priced.rateId,
          priced.rateScaled.toString(),
          now,
          expiresAt,
        ],
      );
      return { kind: 'created', quote: quoteFromRow(rows[0]!) };
    });
  }

  async function create(
    client: { id: string; currency: string },
    idempotencyKey: unknown,
    body: unknown,
  ): Promise<CreateQuoteResult> {
    const input = checkQuoteInput(idempotencyKey, body);
    if (!input.ok) return { kind: input.kind, message: input.message };
    const { request } = input;
    const fingerprint = quoteRequestFingerprint(request);

    // Fast path for retries: a replay needs no rate and no lock (a quote replays even after its rate lapsed).
    const earlier = await findByKey(db, client.id, input.key);
    if (earlier !== undefined) return replayOrConflict(earlier, fingerprint);

    const now = clock.now();
    const rate = await rates.forClient(client, now);
    if (rate.kind !== 'ok') return rate;

    const amounts = quoteAmounts({
      amountType: request.amountType,
      amountMinor: request.amountMinor,
      sourceCurrency: client.currency,
      rate: rate.rate,
    });
    if (amounts.sourceAmountMinor > MAX_AMOUNT_MINOR || amounts.targetAmountMinor > MAX_AMOUNT_MINOR) {
      return {
        kind: 'invalid',
        message: `amountMinor too large: the converted amount exceeds ${MAX_AMOUNT_MINOR}`,
      };
    }
    if (amounts.targetAmountMinor < minTarget) {
      return {
        kind: 'invalid',
        message: `target amount ${amounts.targetAmountMinor} is below the minimum of ${minTarget} (VES minor units)`,
      };
    }

    const priced = { ...amounts, rateId: rate.rate.rateId, rateScaled: rate.rate.rateScaled };
    try {
      return await insertWithinCeilings(client, input.key, fingerprint, request, priced, now);
    } catch (err) {
      // Only reachable if a writer bypasses the client lock; the unique key still decides the winner.
      if (!isUniqueViolation(err, 'quotes_client_idempotency_key')) throw err;
      const winner = await findByKey(db, client.id, input.key);
      if (winner === undefined) throw err;
      return replayOrConflict(winner, fingerprint);
    }
  }

  async function peek(q: Queryable, quoteId: string, clientId: string): Promise<Quote | null> {
    const { rows } = await q.query<QuoteRow>(
      `SELECT ${QUOTE_COLUMNS} FROM quotes WHERE quote_id = $1 AND client_id = $2`,
      [quoteId, clientId],
    );
    return rows[0] === undefined ? null : quoteFromRow(rows[0]);
  }

  async function consume(q: Queryable, input: ConsumeQuoteInput): Promise<ConsumeQuoteResult> {
    const { quoteId, clientId, paymentId, at } = input;
    // One guarded statement, never read-then-write: a concurrent consumer blocks on the row, then re-checks
    // used_by_payment_id IS NULL against the committed row and matches nothing.
    const { rows } = await q.query<QuoteRow>(
      `UPDATE quotes SET used_by_payment_id = $3, used_at = $4
        WHERE quote_id = $1 AND client_id = $2 AND used_by_payment_id IS NULL AND expires_at > $4
        RETURNING ${QUOTE_COLUMNS}`,
      [quoteId, clientId, paymentId, at],
    );
    if (rows[0] !== undefined) return { kind: 'ok', quote: quoteFromRow(rows[0]) };

    // Nothing matched: find out why, to give the caller the right answer.
    const quote = await peek(q, quoteId, clientId);
    if (quote === null) return { kind: 'not_found', message: 'unknown quote' };
    // The same payment consuming again (a re-entered handler) gets its own consumption back.
    if (quote.usedByPaymentId === paymentId) return { kind: 'ok', quote };
    if (quote.usedByPaymentId !== null) return { kind: 'used', message: 'quote already used' };
    if (quote.expiresAt.getTime() <= at.getTime()) return { kind: 'expired', message: 'quote expired' };
    throw new Error(`quote ${quoteId} is live and unused but could not be consumed`);
  }

  return { create, consume, peek, toPublic: toPublicQuote };
}
