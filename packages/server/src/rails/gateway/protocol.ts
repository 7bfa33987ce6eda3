import type { RailCode } from '../../config.ts';
import type { DocType, RailDestination, WireStatementLine } from '../rail.ts';

/**
 * The bank gateway protocol (docs/bank-gateway.md): the wire shapes both sides share, and the checks
 * that turn an untrusted JSON body into one of them. The connector and the bank simulator use the same
 * checks, so the simulator cannot drift from what the connector accepts.
 */

export const TRANSFERS_PATH = '/v1/transfers';
export const STATEMENT_PATH = '/v1/statement';
export const BALANCE_PATH = '/v1/balance';

/** Answers to POST /v1/transfers. */
export const SUBMIT_RESULTS = [
  'confirmed',
  'accepted_pending_settlement',
  'held_at_clearing',
  'declined',
  'invalid_destination',
  'duplicate',
  'timeout',
  'outside_hours',
  'offline',
  'cannot_process',
] as const;

/** Answers to GET /v1/transfers/{reference}: the submit vocabulary plus the two later states. */
export const TRANSFER_RESULTS = [...SUBMIT_RESULTS, 'settled', 'returned'] as const;

export type SubmitResult = (typeof SUBMIT_RESULTS)[number];
export type TransferResult = (typeof TRANSFER_RESULTS)[number];

/** Error codes of non-200 answers; the body is `{ error, detail? }`. */
export const GATEWAY_ERROR_CODES = [
  'invalid_request',
  'missing_auth',
  'unknown_key',
  'stale_timestamp',
  'bad_signature',
  'transfer_not_found',
  'not_found',
  'method_not_allowed',
  'body_too_large',
  'invalid_cursor',
  'internal',
] as const;
export type GatewayErrorCode = (typeof GATEWAY_ERROR_CODES)[number];

/** The rail's destination as the gateway protocol carries it (the same fields, as JSON). */
export type WireDestination = RailDestination;

export interface WireTransferRequest {
  reference: string;
  rail: RailCode;
  amountMinor: string;
  currency: string;
  destination: WireDestination;
}

export interface WireTransferAnswer {
  reference: string;
  result: TransferResult;
  /** Only on declined / invalid_destination (and returned, optionally). */
  reasonCode: string | null;
  detail: string | null;
}

/** The statement line of rail.ts, in its JSON form. */
export type { WireStatementLine } from '../rail.ts';

export interface WireStatementAnswer {
  lines: WireStatementLine[];
  cursor: string | null;
}

export interface WireBalanceAnswer {
  currency: string;
  balanceMinor: string;
}

export interface WireError {
  error: GatewayErrorCode;
  detail?: string;
}

export type Checked<T> = { ok: true; value: T } | { ok: false; problem: string };

// Starts with a letter or digit so that a reference can never be a path segment like `..`.
export const REFERENCE_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$/;
export const REASON_CODE_PATTERN = /^[A-Za-z0-9_.-]{1,64}$/;
export const CURRENCY_PATTERN = /^[A-Z]{3}$/;
const POSITIVE_MINOR = /^[1-9][0-9]{0,29}$/;
const SIGNED_MINOR = /^-?(0|[1-9][0-9]{0,29})$/;
const DOC_TYPES: readonly string[] = ['V', 'E', 'J', 'P', 'G'];
const RAILS: readonly string[] = ['PM', 'CCE'];
const MAX_DETAIL = 500;

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A real calendar date in YYYY-MM-DD (rejects 2026-02-30). */
export function isCalendarDate(text: string): boolean {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(text)) return false;
  const at = new Date(`${text}T00:00:00Z`);
  return !Number.isNaN(at.getTime()) && at.toISOString().slice(0, 10) === text;
}

function optionalText(value: unknown, pattern: RegExp | null): string | null | undefined {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'string') return undefined;
  if (pattern !== null && !pattern.test(value)) return undefined;
  return value;
}

/** Checks a 200 answer about a transfer; the echoed reference must be the one asked about. */
export function checkTransferAnswer(body: unknown, expectedReference: string): Checked<WireTransferAnswer> {
  if (!isRecord(body)) return { ok: false, problem: 'answer is not a JSON object' };
  const { reference, result, reasonCode, detail } = body;
  if (typeof result !== 'string') return { ok: false, problem: 'answer has no result' };
  if (!(TRANSFER_RESULTS as readonly string[]).includes(result)) {
    return { ok: false, problem: `unknown result "${result.slice(0, 64)}"` };
  }
  if (reference !== expectedReference) {
    return { ok: false, problem: 'answer names a different reference than the one sent' };
  }
  const code = optionalText(reasonCode, REASON_CODE_PATTERN);
  if (code === undefined) return { ok: false, problem: 'reasonCode is not a short code' };
  const text = optionalText(detail, null);
  if (text === undefined) return { ok: false, problem: 'detail is not a string' };
  return {
    ok: true,
    value: {
      reference,
      result: result as TransferResult,
      reasonCode: code,
      detail: text === null ? null : text.slice(0, MAX_DETAIL),
    },
  };
}

function checkLine(value: unknown, index: number): Checked<WireStatementLine> {
  const where = `lines[${index}]`;
  if (!isRecord(value)) return { ok: false, problem: `${where} is not an object` };
  const { bankLineId, direction, amountMinor, currency, valueDate, reference, raw } = value;
  if (typeof bankLineId !== 'string' || bankLineId.length === 0 || bankLineId.length > 128) {
    return { ok: false, problem: `${where}.bankLineId must be a non-empty string of at most 128 characters` };
  }
  if (direction !== 'debit' && direction !== 'credit') {
    return { ok: false, problem: `${where}.direction must be "debit" or "credit"` };
  }
  if (typeof amountMinor !== 'string' || !POSITIVE_MINOR.test(amountMinor)) {
    return { ok: false, problem: `${where}.amountMinor must be a string holding a positive integer` };
  }
  if (typeof currency !== 'string' || !CURRENCY_PATTERN.test(currency)) {
    return { ok: false, problem: `${where}.currency must be three upper-case letters` };
  }
  if (typeof valueDate !== 'string' || !isCalendarDate(valueDate)) {
    return { ok: false, problem: `${where}.valueDate must be a date YYYY-MM-DD` };
  }
  if (typeof reference !== 'string') return { ok: false, problem: `${where}.reference must be a string` };
  if (typeof raw !== 'string' || raw.length === 0) {
    return { ok: false, problem: `${where}.raw must be a non-empty string` };
  }
  return { ok: true, value: { bankLineId, direction, amountMinor, currency, valueDate, reference, raw } };
}

/** Checks a statement page. One bad line rejects the page: ingestion is all or nothing. */
export function checkStatementAnswer(body: unknown): Checked<WireStatementAnswer> {
  if (!isRecord(body)) return { ok: false, problem: 'answer is not a JSON object' };
  if (!Array.isArray(body.lines)) return { ok: false, problem: 'answer has no lines array' };
  const cursor = body.cursor;
  if (cursor !== null && (typeof cursor !== 'string' || cursor.length === 0 || cursor.length > 512)) {
    return { ok: false, problem: 'cursor must be null or a non-empty string of at most 512 characters' };
  }
  const lines: WireStatementLine[] = [];
  for (const [i, raw] of body.lines.entries()) {
    const line = checkLine(raw, i);
    if (!line.ok) return line;
    lines.push(line.value);
  }
  return { ok: true, value: { lines, cursor } };
}

export function checkBalanceAnswer(body: unknown, expectedCurrency: string): Checked<WireBalanceAnswer> {
  if (!isRecord(body)) return { ok: false, problem: 'answer is not a JSON object' };
  const { currency, balanceMinor } = body;
  if (currency !== expectedCurrency) return { ok: false, problem: 'answer names a different currency' };
  if (typeof balanceMinor !== 'string' || !SIGNED_MINOR.test(balanceMinor)) {
    return { ok: false, problem: 'balanceMinor must be a string holding an integer' };
  }
  return { ok: true, value: { currency, balanceMinor } };
}

/** The receiving side's check of POST /v1/transfers (used by the simulator; adapters do the same). */
export function checkTransferRequest(body: unknown): Checked<WireTransferRequest> {
  if (!isRecord(body)) return { ok: false, problem: 'body is not a JSON object' };
  const { reference, rail, amountMinor, currency, destination } = body;
  if (typeof reference !== 'string' || !REFERENCE_PATTERN.test(reference)) {
    return {
      ok: false,
      problem: 'reference must be 1-64 characters of A-Z a-z 0-9 . _ : -, starting with a letter or digit',
    };
  }
  if (typeof rail !== 'string' || !RAILS.includes(rail)) return { ok: false, problem: 'rail must be PM or CCE' };
  if (typeof amountMinor !== 'string' || !POSITIVE_MINOR.test(amountMinor)) {
    return { ok: false, problem: 'amountMinor must be a string holding a positive integer' };
  }
  if (typeof currency !== 'string' || !CURRENCY_PATTERN.test(currency)) {
    return { ok: false, problem: 'currency must be three upper-case letters' };
  }
  if (!isRecord(destination)) return { ok: false, problem: 'destination must be an object' };
  const { account, bankCode, docType, docNumber, name } = destination;
  for (const [field, value] of [
    ['account', account],
    ['bankCode', bankCode],
    ['docNumber', docNumber],
  ] as const) {
    if (typeof value !== 'string' || value.length === 0 || value.length > 64) {
      return { ok: false, problem: `destination.${field} must be a non-empty string` };
    }
  }
  if (typeof docType !== 'string' || !DOC_TYPES.includes(docType)) {
    return { ok: false, problem: 'destination.docType must be one of V E J P G' };
  }
  if (name !== undefined && name !== null && (typeof name !== 'string' || name.length > 140)) {
    return { ok: false, problem: 'destination.name must be null or a string' };
  }
  return {
    ok: true,
    value: {
      reference,
      rail: rail as RailCode,
      amountMinor,
      currency,
      destination: {
        account: account as string,
        bankCode: bankCode as string,
        docType: docType as DocType,
        docNumber: docNumber as string,
        name: typeof name === 'string' ? name : null,
      },
    },
  };
}
