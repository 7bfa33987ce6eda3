import type { Queryable } from '../db/db.ts';
import type { PaymentState } from '../payments/model.ts';
import { mapInSlices } from '../shared/event-loop.ts';
import { isoTime, minorFromDb } from '../shared/money.ts';
import type { LineOutcome } from './matcher.ts';
import {
  type FundingFacts,
  fundingKey,
  type IncomingLine,
  type LineStatus,
  type MatchFacts,
  type PaymentFacts,
} from './model.ts';
import { listParam, packedRows, packRows, packRowsInSlices } from './packed.ts';

/**
 * The ingested statement (recon_lines): the only SQL over it, plus the reads of payments and fundings it needs.
 * A batch's lists and rows travel packed (packed.ts).
 */

/** The lines of a batch the statement already holds (a source that delivers a line again). */
export async function storedAmong(q: Queryable, lines: readonly IncomingLine[]): Promise<Set<string>> {
  const ids = listParam(lines.map((l) => l.bankLineId));
  const { rows } = await q.query<{ bank_line_id: string }>(
    `SELECT bank_line_id FROM recon_lines WHERE bank_line_id IN (${ids.rows(1)})`,
    [ids.value],
  );
  return new Set(rows.map((r) => r.bank_line_id));
}

/**
 * Everything the matcher needs about a batch of lines not yet stored, read in the batch's transaction (which
 * holds the ingestion lock).
 */
export async function loadFacts(q: Queryable, fresh: readonly IncomingLine[]): Promise<MatchFacts> {
  const references = listParam([...new Set(fresh.map((l) => l.reference))]);

  const payments = new Map<string, PaymentFacts>();
  const fundings = new Map<string, FundingFacts>();
  const debitsByHash = new Map<string, { bankLineId: string; paymentId: string | null }>();
  if (fresh.length === 0) return { payments, fundings, debitsByHash };

  const paymentRows = await q.query<{
    id: string;
    state: PaymentState;
    amount_minor: string;
    currency: string;
    rail_reference: string;
  }>(
    `SELECT id, state, amount_minor, currency, rail_reference FROM payments WHERE rail_reference IN (${references.rows(1)})`,
    [references.value],
  );
  // Lock what another path could still move: every payment not completed (in id order, so two batches never
  // deadlock), and read its state again under the lock. A completed payment changes only by a reversal, which
  // only ingestion makes, and ingestion holds its own lock; the watch worker's race with it is benign (see
  // applyActions). Locking the bulk of a statement (confirmations) would cost more than all the rest.
  const open = paymentRows.rows.filter((r) => r.state !== 'completed').map((r) => r.id);
  if (open.length > 0) {
    const ids = listParam(open);
    const locked = await q.query<{ id: string; state: PaymentState }>(
      `SELECT id, state FROM payments WHERE id IN (${ids.rows(1)}) ORDER BY id FOR UPDATE`,
      [ids.value],
    );
    const now = new Map(locked.rows.map((r) => [r.id, r.state]));
    for (const r of paymentRows.rows) r.state = now.get(r.id) ?? r.state;
  }
  const byId = new Map<string, PaymentFacts>();
  for (const r of paymentRows.rows) {
    const facts: PaymentFacts = {
      id: r.id,
      state: r.state,
      amountMinor: minorFromDb(r.amount_minor),
      currency: r.currency.trim(),
      debit: null,
      returned: false,
    };
    payments.set(r.rail_reference, facts);
    byId.set(r.id, facts);
  }
  if (byId.size > 0) {
    // Every stored line of these payments: their debit and return, and the hashes a copy would repeat.
    const ids = listParam([...byId.keys()]);
    const payoutLines = await q.query<{
      payment_id: string;
      bank_line_id: string;
      direction: 'debit' | 'credit';
      status: LineStatus;
      match_kind: string | null;
      raw_hash: string;
    }>(
      `SELECT payment_id, bank_line_id, direction, status, match_kind, encode(raw_hash, 'hex') AS raw_hash
         FROM recon_lines WHERE payment_id IN (${ids.rows(1)}) ORDER BY id`,
      [ids.value],
    );
    for (const r of payoutLines.rows) {
      const p = byId.get(r.payment_id)!;
      const owns = r.status === 'awaiting' || r.match_kind === 'payout';
      if (r.direction === 'debit' && owns && p.debit === null) {
        p.debit = { bankLineId: r.bank_line_id, status: r.status };
      }
      if (r.match_kind === 'return') p.returned = true;
      if (r.direction === 'debit' && !debitsByHash.has(r.raw_hash)) {
        debitsByHash.set(r.raw_hash, { bankLineId: r.bank_line_id, paymentId: r.payment_id });
      }
    }
  }

  const credits = new Map<string, IncomingLine>();
  for (const l of fresh) if (l.direction === 'credit') credits.set(fundingKey(l.currency, l.reference), l);
  if (credits.size > 0) {
    // By (currency, reference), the funding's unique key, so its index serves the lookup.
    const keys = [...credits.values()].map((l) => [l.currency, l.reference]);
    const packed = packRows(keys);
    const fundingRows = await q.query<{
      id: string;
      amount_minor: string;
      currency: string;
      reference: string;
      matched: boolean;
    }>(
      `SELECT f.id, f.amount_minor, f.currency, f.reference, l.funding_id IS NOT NULL AS matched
         FROM fundings f LEFT JOIN recon_lines l ON l.funding_id = f.id
        WHERE (f.currency, f.reference) IN (${
          packed === null
            ? 'SELECT c::char(3), r FROM unnest($1::text[], $2::text[]) AS t(c, r)'
            : `SELECT x[1]::char(3), x[2] FROM (${packedRows(1)}) p`
        })`,
      packed === null ? [keys.map((k) => k[0]), keys.map((k) => k[1])] : [packed],
    );
    for (const r of fundingRows.rows) {
      const currency = r.currency.trim();
      fundings.set(fundingKey(currency, r.reference), {
        id: r.id,
        amountMinor: minorFromDb(r.amount_minor),
        currency,
        matched: r.matched,
      });
    }
  }

  // A byte-identical copy carries its original's reference: for a payment's reference the payment's own lines
  // above hold every earlier hash; only debits naming no payment need a lookup by hash.
  const ownerless = fresh.filter((l) => l.direction === 'debit' && !payments.has(l.reference)).map((l) => l.rawHash);
  if (ownerless.length > 0) {
    const hashes = listParam([...new Set(ownerless)]);
    const hashRows = await q.query<{ raw_hash: string; bank_line_id: string; payment_id: string | null }>(
      `SELECT DISTINCT ON (l.raw_hash) encode(l.raw_hash, 'hex') AS raw_hash, l.bank_line_id, l.payment_id
         FROM recon_lines l
        WHERE l.direction = 'debit' AND l.payment_id IS NULL
          AND l.raw_hash IN (SELECT decode(h, 'hex') FROM (${hashes.rows(1)}) t(h))
        ORDER BY l.raw_hash, l.id`,
      [hashes.value],
    );
    for (const r of hashRows.rows) {
      debitsByHash.set(r.raw_hash, { bankLineId: r.bank_line_id, paymentId: r.payment_id });
    }
  }
  return { payments, fundings, debitsByHash };
}

/**
 * Stores a batch's lines with what the matcher made of them, in one statement; the number actually stored (a
 * line already there is left alone). The rows travel packed (packed.ts), or as JSON when a value contains a
 * separator.
 */
export async function insertLines(
  q: Queryable,
  source: string,
  outcomes: readonly LineOutcome[],
  now: Date,
): Promise<number> {
  if (outcomes.length === 0) return 0;
  // bank line id, direction, amount, currency, value date, reference, hash, status, match, exception, payment,
  // funding, booked. The four nullable fields are never empty strings, so empty stands for null.
  const rows = await mapInSlices(outcomes, (o) => [
    o.line.bankLineId,
    o.line.direction,
    o.line.amountMinor.toString(),
    o.line.currency,
    o.line.valueDate,
    o.line.reference,
    o.line.rawHash,
    o.status,
    o.matchKind,
    o.exception?.kind ?? null,
    o.paymentId,
    o.fundingId,
    o.booked ? 't' : 'f',
  ]);
  const packed = await packRowsInSlices(rows);
  const source_ =
    packed !== null
      ? `SELECT x[1] AS b, x[2] AS d, x[3]::bigint AS a, x[4] AS c, x[5]::date AS v, x[6] AS r, decode(x[7], 'hex') AS h, x[8] AS s,
                nullif(x[9], '') AS m, nullif(x[10], '') AS e, nullif(x[11], '') AS p, nullif(x[12], '') AS f,
                x[13]::boolean AS k
           FROM (${packedRows(2)}) t`
      : `SELECT (x->>0) AS b, (x->>1) AS d, (x->>2)::bigint AS a, (x->>3) AS c, (x->>4)::date AS v, (x->>5) AS r,
                decode(x->>6, 'hex') AS h, (x->>7) AS s, (x->>8) AS m, (x->>9) AS e, (x->>10) AS p, (x->>11) AS f,
                (x->>12)::boolean AS k
           FROM json_array_elements($2::json) AS x`;
  const { rows: inserted } = await q.query<{ n: string }>(
    `WITH stored AS (
       INSERT INTO recon_lines (bank_line_id, source, direction, amount_minor, currency, value_date, reference, raw_hash,
         status, match_kind, exception_kind, payment_id, funding_id, booked, ingested_at)
       SELECT b, $1, d, a, c, v, r, h, s, m, e, p, f, k, $3 FROM (${source_}) t
       ON CONFLICT (bank_line_id) DO NOTHING RETURNING 1)
     SELECT count(*)::text AS n FROM stored`,
    [source, packed ?? JSON.stringify(rows), now],
  );
  return Number(inserted[0]!.n);
}

/** Awaiting debits of failed payments that a return has now paired: matched, still not booked. */
export async function markPaired(q: Queryable, bankLineIds: readonly string[]): Promise<void> {
  if (bankLineIds.length === 0) return;
  const ids = listParam(bankLineIds);
  await q.query(
    `UPDATE recon_lines SET status = 'matched', match_kind = 'payout'
      WHERE bank_line_id IN (${ids.rows(1)}) AND status = 'awaiting'`,
    [ids.value],
  );
}

export interface StoredLine {
  bankLineId: string;
  source: string;
  direction: 'debit' | 'credit';
  amountMinor: bigint;
  currency: string;
  valueDate: string;
  reference: string;
  rawHash: string;
  status: LineStatus;
  matchKind: string | null;
  exceptionKind: string | null;
  paymentId: string | null;
  fundingId: string | null;
  booked: boolean;
  ingestedAt: Date;
}

interface StoredRow {
  bank_line_id: string;
  source: string;
  direction: 'debit' | 'credit';
  amount_minor: string;
  currency: string;
  value_date: string;
  reference: string;
  raw_hash: string;
  status: LineStatus;
  match_kind: string | null;
  exception_kind: string | null;
  payment_id: string | null;
  funding_id: string | null;
  booked: boolean;
  ingested_at: Date;
}

const STORED_COLUMNS = `bank_line_id, source, direction, amount_minor, currency, to_char(value_date, 'YYYY-MM-DD') AS value_date,
  reference, encode(raw_hash, 'hex') AS raw_hash, status, match_kind, exception_kind, payment_id, funding_id, booked, ingested_at`;

function storedFromRow(r: StoredRow): StoredLine {
  return {
    bankLineId: r.bank_line_id,
    source: r.source,
    direction: r.direction,
    amountMinor: minorFromDb(r.amount_minor),
    currency: r.currency.trim(),
    valueDate: r.value_date,
    reference: r.reference,
    rawHash: r.raw_hash,
    status: r.status,
    matchKind: r.match_kind,
    exceptionKind: r.exception_kind,
    paymentId: r.payment_id,
    fundingId: r.funding_id,
    booked: r.booked,
    ingestedAt: r.ingested_at,
  };
}

export async function findLines(q: Queryable, bankLineIds: readonly string[]): Promise<StoredLine[]> {
  if (bankLineIds.length === 0) return [];
  const ids = listParam(bankLineIds);
  const { rows } = await q.query<StoredRow>(
    `SELECT ${STORED_COLUMNS} FROM recon_lines WHERE bank_line_id IN (${ids.rows(1)}) ORDER BY id`,
    [ids.value],
  );
  return rows.map(storedFromRow);
}

export function lineView(l: StoredLine) {
  return {
    bankLineId: l.bankLineId,
    source: l.source,
    direction: l.direction,
    amountMinor: l.amountMinor.toString(),
    currency: l.currency,
    valueDate: l.valueDate,
    reference: l.reference,
    rawHash: l.rawHash,
    status: l.status,
    matchKind: l.matchKind,
    paymentId: l.paymentId,
    fundingId: l.fundingId,
    ingestedAt: isoTime(l.ingestedAt),
  };
}
