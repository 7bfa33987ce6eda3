import type { Queryable } from '../db/db.ts';
import type { Clock } from '../shared/clock.ts';
import { randomId } from '../shared/ids.ts';
import { isoTime } from '../shared/money.ts';
import { formatRate, isKnownCurrency, parseRate, RATE_SCALE } from './arithmetic.ts';
import { type PublicRate, QUOTE_CURRENCY, RATE_ORIGINS, type Rate, type RateOrigin } from './model.ts';

export interface PublishRateInput {
  base: string;
  /** Decimal text, > 0, at most 12 decimals (see parseRate). */
  rate: string;
  expiresAt: Date | string;
  /** Default: now. */
  validFrom?: Date | string | null;
  /** A rate for that client only; absent or null: the pair's general rate. */
  clientId?: string | null;
  source: RateOrigin;
}

export type PublishRateResult =
  | { kind: 'published'; rate: Rate }
  | { kind: 'invalid'; message: string }
  | { kind: 'unknown_client'; message: string };

/** HTTP status of each publication outcome on the operator API. */
export const PUBLISH_RATE_STATUS: Record<PublishRateResult['kind'], number> = {
  published: 201,
  invalid: 400,
  unknown_client: 404,
};

export type RateForClientResult =
  | { kind: 'ok'; rate: Rate }
  | { kind: 'ves_balance'; message: string }
  | { kind: 'no_rate'; message: string };

/** HTTP status of each outcome of GET /v2/rate (and of the same checks in quotes and payments). */
export const RATE_FOR_CLIENT_STATUS: Record<RateForClientResult['kind'], number> = {
  ok: 200,
  ves_balance: 404,
  no_rate: 503,
};

export const VES_BALANCE_MESSAGE = 'no rate applies: your wallet is already in VES';

export function noRateMessage(base: string): string {
  return `no rate in force for ${base}/${QUOTE_CURRENCY}`;
}

export interface RateService {
  publish(input: PublishRateInput): Promise<PublishRateResult>;
  /**
   * The rate in force for the pair base/VES at `at` (default now): the client's own if one is in force,
   * else the general one; among candidates the most recently published with validFrom ≤ at < expiresAt.
   * null when none is in force; never an expired one. clientId null asks for the general rate only.
   */
  inForce(clientId: string | null, base: string, at?: Date): Promise<Rate | null>;
  /** GET /v2/rate semantics for a client: its balance currency is the base. */
  forClient(client: { id: string; currency: string }, at?: Date): Promise<RateForClientResult>;
  /** The latest publication for the pair, in force or not (the sandbox publisher walks on from it). */
  lastPublished(clientId: string | null, base: string): Promise<Rate | null>;
}

export interface RateServiceDeps {
  db: Queryable;
  clock: Clock;
}

export interface RateRow {
  rate_id: string;
  base: string;
  rate_scaled: string;
  client_id: string | null;
  valid_from: Date;
  expires_at: Date;
  created_at: Date;
  source: RateOrigin;
}

export const RATE_COLUMNS = 'rate_id, base, rate_scaled, client_id, valid_from, expires_at, created_at, source';

export function rateFromRow(row: RateRow): Rate {
  return {
    rateId: row.rate_id,
    base: row.base,
    quote: QUOTE_CURRENCY,
    rateScaled: BigInt(row.rate_scaled),
    clientId: row.client_id,
    validFrom: new Date(row.valid_from),
    expiresAt: new Date(row.expires_at),
    createdAt: new Date(row.created_at),
    source: row.source,
  };
}

export function toPublicRate(rate: Rate): PublicRate {
  return {
    rateId: rate.rateId,
    base: rate.base,
    quote: rate.quote,
    rate: formatRate(rate.rateScaled),
    validFrom: isoTime(rate.validFrom),
    expiresAt: isoTime(rate.expiresAt),
  };
}

// ISO 8601 with a date, a time and an explicit zone: a bare date or a zone-less time would be read in the
// server's local zone, which is not something an operator can see from the outside.
const INSTANT = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?(?:Z|[+-](\d{2}):(\d{2}))$/;

function parseInstant(value: Date | string): Date | null {
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? null : value;
  if (typeof value !== 'string') return null;
  const m = INSTANT.exec(value);
  if (m === null) return null;
  const [year, month, day, hour, minute, second, zoneHour, zoneMinute] = m.slice(1).map((p) => Number(p ?? 0));
  // Date would roll 2026-02-30 over into March; a typo in an expiry must be refused, not reinterpreted.
  const daysInMonth = new Date(Date.UTC(year!, month!, 0)).getUTCDate();
  if (month! < 1 || month! > 12 || day! < 1 || day! > daysInMonth) return null;
  if (hour! > 23 || minute! > 59 || second! > 59 || zoneHour! > 23 || zoneMinute! > 59) return null;
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? null : date;
}

export function createRateService(deps: RateServiceDeps): RateService {
  const { db, clock } = deps;

  async function publish(input: PublishRateInput): Promise<PublishRateResult> {
    const invalid = (message: string): PublishRateResult => ({ kind: 'invalid', message });
    const now = clock.now();
    const { base } = input;
    if (typeof base !== 'string' || !/^[A-Z]{3}$/.test(base)) {
      return invalid('base must be a 3-letter currency code');
    }
    if (base === QUOTE_CURRENCY) return invalid('base must not be VES: the quote currency is VES');
    if (!isKnownCurrency(base)) return invalid(`base ${base} is not a supported currency`);
    const parsed = parseRate(input.rate);
    if (!parsed.ok) return invalid(parsed.error.message);
    // The spec promises clients a rate that is never 1: that is the value of a missing conversion, not a price.
    if (parsed.scaled === RATE_SCALE) return invalid('rate must not be exactly 1: that is no conversion, not a price');
    if (!RATE_ORIGINS.includes(input.source)) return invalid(`source must be one of ${RATE_ORIGINS.join(', ')}`);
    const validFrom = input.validFrom === undefined || input.validFrom === null ? now : parseInstant(input.validFrom);
    if (validFrom === null) return invalid('validFrom must be an ISO 8601 timestamp with a time zone');
    const expiresAt = parseInstant(input.expiresAt);
    if (expiresAt === null) return invalid('expiresAt must be an ISO 8601 timestamp with a time zone');
    if (expiresAt.getTime() <= validFrom.getTime()) return invalid('expiresAt must be after validFrom');
    if (expiresAt.getTime() <= now.getTime()) return invalid('expiresAt must be in the future');

    const clientId = input.clientId ?? null;
    if (clientId !== null) {
      if (typeof clientId !== 'string') return invalid('clientId must be a string');
      const { rows } = await db.query<{ currency: string }>('SELECT currency FROM clients WHERE id = $1', [clientId]);
      const client = rows[0];
      if (client === undefined) return { kind: 'unknown_client', message: `unknown client ${clientId}` };
      // A client's own rate is only ever looked up by its balance currency; any other base would never apply.
      if (client.currency !== base) {
        return invalid(`client ${clientId} holds ${client.currency}, so a ${base} rate never applies to it`);
      }
    }

    const { rows } = await db.query<RateRow>(
      `INSERT INTO rates (rate_id, base, quote, rate_scaled, client_id, valid_from, expires_at, created_at, source)
       VALUES ($1, $2, 'VES', $3, $4, $5, $6, $7, $8)
       RETURNING ${RATE_COLUMNS}`,
      [randomId('rate'), base, parsed.scaled.toString(), clientId, validFrom, expiresAt, now, input.source],
    );
    return { kind: 'published', rate: rateFromRow(rows[0]!) };
  }

  async function inForce(clientId: string | null, base: string, at?: Date): Promise<Rate | null> {
    const when = at ?? clock.now();
    // Two index-friendly branches instead of one OR, each already narrowed to its newest live row.
    const { rows } = await db.query<RateRow>(
      `(SELECT ${RATE_COLUMNS} FROM rates
         WHERE client_id = $2 AND base = $1 AND valid_from <= $3 AND expires_at > $3
         ORDER BY seq DESC LIMIT 1)
       UNION ALL
       (SELECT ${RATE_COLUMNS} FROM rates
         WHERE client_id IS NULL AND base = $1 AND valid_from <= $3 AND expires_at > $3
         ORDER BY seq DESC LIMIT 1)`,
      [base, clientId, when],
    );
    const own = rows.find((r) => r.client_id !== null);
    const chosen = own ?? rows.find((r) => r.client_id === null);
    return chosen === undefined ? null : rateFromRow(chosen);
  }

  async function forClient(client: { id: string; currency: string }, at?: Date): Promise<RateForClientResult> {
    if (client.currency === QUOTE_CURRENCY) return { kind: 'ves_balance', message: VES_BALANCE_MESSAGE };
    const rate = await inForce(client.id, client.currency, at);
    if (rate === null) return { kind: 'no_rate', message: noRateMessage(client.currency) };
    return { kind: 'ok', rate };
  }

  async function lastPublished(clientId: string | null, base: string): Promise<Rate | null> {
    const { rows } = await db.query<RateRow>(
      `SELECT ${RATE_COLUMNS} FROM rates
        WHERE base = $1 AND client_id IS NOT DISTINCT FROM $2
        ORDER BY seq DESC LIMIT 1`,
      [base, clientId],
    );
    return rows[0] === undefined ? null : rateFromRow(rows[0]);
  }

  return { publish, inForce, forClient, lastPublished };
}
