import type { Db, Queryable } from '../db/db.ts';
import { reverseCompletedPayment, type TransitionResult, transition } from '../payments/lifecycle.ts';
import type { Payment } from '../payments/repository.ts';
import type { StatementPage, StatementSource } from '../rails/rail.ts';
import type { Clock } from '../shared/clock.ts';
import { mapInSlices, runInSlices, yieldToEventLoop } from '../shared/event-loop.ts';
import { autoResolve, insertLineExceptions, type NewLineException } from './exceptions.ts';
import { insertLines, loadFacts, markPaired, storedAmong } from './lines.ts';
import { type BatchResult, matchSteps } from './matcher.ts';
import { type IncomingLine, toIncoming } from './model.ts';
import { listParam } from './packed.ts';

/**
 * Statement ingestion: a batch of the source's pages per transaction. The pages are fetched outside any
 * transaction; then, in one transaction, the source's cursor is checked (another process may have taken them),
 * the new lines are stored with what they prove, every decision the batch proves is booked (payment transitions
 * with their ledger entries and events, exceptions), and the cursor advances. A crash anywhere leaves either
 * all of it or none of it, and the pages are read again.
 */

/** Thrown inside the transaction to roll it back: a batch believed new holds lines the statement already has. */
class AlreadyStored extends Error {}

/** The failure code of a payment whose money the bank sent back. */
export const RETURNED_FAILURE_CODE = 'returned';

/**
 * Class id of the two-key advisory lock (`pg_advisory_xact_lock(INGEST_LOCK, 0)`) that serialises ingestion
 * across sources and processes; whoever calls ingestLines takes it first, through `recon_begin_ingest()` (migration
 * 0040, which repeats the number); the balance check takes it shared, so no ingestion commits while it reads the
 * ledger. The sandbox bank uses 4_242_041/42 and migrate.ts the one-key form, so this cannot collide.
 */
export const INGEST_LOCK = 4_242_071;

export interface IngestDeps {
  db: Db;
  clock: Clock;
  source: StatementSource;
  logger: { warn(obj: object, msg: string): void; error(obj: object, msg: string): void };
  onIngested?: (summary: IngestSummary) => void;
  /** Most lines stored in one transaction (pages are read ahead up to it). Default DEFAULT_BATCH_LINES. */
  maxBatchLines?: number;
}

export const DEFAULT_BATCH_LINES = 5000;

/**
 * The embedded database runs a transaction in the thread that serves requests and holds every request until it
 * commits: under payment load a batch of 5,000 lines held them 107-150 ms (with the pages read before it, up to
 * 480 ms). A batch of 500 held them 20-40 ms on a slow hour, twice (the page read and the storing), and the requests
 * caught behind those holds were a third of the POST's slowest 1 %; with 100 the POST's p99 fell by a fifth (eight
 * alternated pairs, docs/performance-log.md, twenty-first session) and the payments a second did not move. A backlog is
 * then read at some 2,000 lines a second under the payment load (the loop's rest included, domain.ts), still more
 * than the payments make; with nobody waiting the loop does not rest.
 */
export const EMBEDDED_BATCH_LINES = 100;

/**
 * PostgreSQL runs the transaction beside the requests, but on the same cores: a batch of 5,000 lines was some 35
 * ms of one backend's work in three statements (storing, the payments' facts, the debit watch), and the payment
 * step's backend shared a core with it meanwhile, so every payment in flight took longer. While requests are in
 * flight, batches of 1,000, resting as long as each took (domain.ts), spread a pass out: six alternated pairs of the
 * POST bench, p99 22.8 ms against 24.5 on the means (docs/performance-log.md, twenty-third session). Batches of 250
 * cut each stretch shorter again: the POST's slowest 1 % came during a pass (its p99 over the run's tenths rose
 * from about 20 ms to 30-44 in the pass's seconds), and six more alternated pairs gave p99 24.4 ms against 27.2 on the
 * means, lower in every pair, payments a second within a per cent (thirty-sixth session). An interval's backlog is
 * then read at some 5,500 lines a second under that load, twice the payments that make the lines. With nobody
 * waiting, a backlog is read in batches of 5,000: 1,000 read it a sixth slower (the reconciliation bench, 42,000
 * lines a second against 49,000).
 */
export const POSTGRES_SERVING_BATCH_LINES = 250;

/** Most lines a batch stores: `serving`, whether requests are in flight in this process (run-worker.ts). */
export function batchLinesFor(kind: Db['kind'], serving: boolean): number {
  if (kind === 'embedded') return EMBEDDED_BATCH_LINES;
  return serving ? POSTGRES_SERVING_BATCH_LINES : DEFAULT_BATCH_LINES;
}

export interface IngestSummary {
  lines: number;
  fresh: number;
  matched: number;
  exceptions: number;
  exceptionsByKind: Record<string, number>;
  actions: BatchResult['actions'];
  /** The payments the batch moved (for the transition counter, once the caller's transaction has committed). */
  moved: Payment[];
}

export type IngestResult =
  /** atEnd: the batch stopped where the statement did (or its source failed), not at the most lines a batch takes. */
  | { kind: 'ingested'; summary: IngestSummary; atEnd: boolean }
  /** Nothing past `cursor`: every line the source shows has been ingested up to that position. */
  | { kind: 'caught_up'; cursor: string | null }
  /** Another process stored these pages first. */
  | { kind: 'raced' }
  /** The source could not be read (logged); the next cycle tries again. */
  | { kind: 'unavailable' };

export async function readCursor(q: Queryable, source: string): Promise<string | null> {
  const { rows } = await q.query<{ cursor: string | null }>('SELECT cursor FROM recon_sources WHERE name = $1', [
    source,
  ]);
  return rows[0]?.cursor ?? null;
}

/**
 * Begins a paged source's batch in one call (migration 0040): what recon_begin_ingest does, then the source's cursor,
 * locked (its row made first if the source is new).
 */
async function openBatch(q: Queryable, source: string, now: Date): Promise<string | null> {
  const { rows } = await q.query<{ cursor: string | null }>('SELECT recon_open_batch($1, $2) AS cursor', [source, now]);
  return rows[0]!.cursor;
}

/** Reads one page; an error of the source (e.g. GatewayError) is logged and retried next cycle. */
async function fetchPage(deps: IngestDeps, cursor: string | null): Promise<StatementPage | null> {
  try {
    return await deps.source.fetchSince(cursor);
  } catch (err) {
    deps.logger.warn({ err, source: deps.source.name }, 'statement source unavailable; retrying next cycle');
    return null;
  }
}

/**
 * Reads pages ahead until `maxBatchLines` or the end of the statement: they are stored in one transaction, which
 * costs the same dozen statements and one commit whatever the number of lines. null: the source failed before
 * giving anything.
 */
async function fetchBatch(
  deps: IngestDeps,
  cursor: string | null,
): Promise<(StatementPage & { atEnd: boolean }) | null> {
  const max = deps.maxBatchLines ?? DEFAULT_BATCH_LINES;
  const lines: StatementPage['lines'] = [];
  let at = cursor;
  while (lines.length < max) {
    const page = await fetchPage(deps, at);
    if (page === null) {
      if (lines.length === 0) return null;
      break;
    }
    if (page.lines.length === 0) break;
    lines.push(...page.lines);
    // A source that hands out lines without moving its cursor would loop here forever.
    if (page.cursor === at) break;
    at = page.cursor;
  }
  return { lines, cursor: at, atEnd: lines.length < max };
}

export async function ingestNextPage(deps: IngestDeps): Promise<IngestResult> {
  const { db, clock, source } = deps;
  const cursor = await readCursor(db, source.name);
  const page = await fetchBatch(deps, cursor);
  if (page === null) return { kind: 'unavailable' };
  if (page.lines.length === 0) return { kind: 'caught_up', cursor };
  // Reading the page and storing it are two transactions; on the embedded database nothing else could run between.
  await yieldToEventLoop();
  // A batch of thousands of lines is hashed, matched and packed in slices (shared/event-loop.ts, SLICE_ITEMS): in
  // one stretch it held every request in flight 20 ms and more on PostgreSQL (docs/performance-log.md).
  const incoming = await mapInSlices(page.lines, toIncoming);
  const store = (knownNew: boolean) =>
    db.tx(async (q) => {
      if ((await openBatch(q, source.name, clock.now())) !== cursor) return null;
      return ingestLines(q, clock, source.name, incoming, { knownNew, advanceTo: page.cursor });
    });
  // Lines past the cursor are new but for a source that delivers some again: try that first, and only when
  // the statement turns out to hold some of them already, start over looking each one up.
  let summary: IngestSummary | null;
  try {
    summary = await store(true);
  } catch (err) {
    if (!(err instanceof AlreadyStored)) throw err;
    summary = await store(false);
  }
  if (summary === null) return { kind: 'raced' };
  deps.onIngested?.(summary);
  return { kind: 'ingested', summary, atEnd: page.atEnd };
}

/**
 * Stores and matches lines inside the caller's transaction, which began with `SELECT recon_begin_ingest()` (or
 * openBatch, which calls it): the ingestion lock, and nested loops over the indexes for the rest of the transaction.
 * Every lookup of a batch is a few hundred keys probed into a large table; right after a burst of lines the
 * statistics are stale and the planner picks a hash join over a full scan (~40 ms a lookup instead of ~1.5 ms).
 * Lines already stored are skipped: ingestion is idempotent on the bank's line id. With `knownNew` the lookup is
 * skipped, and finding a stored line throws AlreadyStored (rolling back the batch). With `advanceTo` (a paged
 * source, opened by openBatch) the source's cursor moves there in the batch's last statement.
 */
export async function ingestLines(
  q: Queryable,
  clock: Clock,
  source: string,
  lines: readonly IncomingLine[],
  options: { knownNew?: boolean; advanceTo?: string | null } = {},
): Promise<IngestSummary> {
  const now = clock.now();
  const existing = options.knownNew ? new Set<string>() : await storedAmong(q, lines);
  const seen = new Set<string>();
  const fresh = lines.filter((l) => {
    if (existing.has(l.bankLineId) || seen.has(l.bankLineId)) return false;
    seen.add(l.bankLineId);
    return true;
  });
  const facts = await loadFacts(q, fresh);
  const result = await runInSlices(matchSteps(fresh, facts));
  const stored = await insertLines(q, source, result.lines, now);
  // Decided as new, yet some were there: roll all of it back (the caller starts over with the lookup).
  if (stored !== result.lines.length) throw new AlreadyStored();
  const exceptions: NewLineException[] = [];
  for (const o of result.lines) {
    if (o.exception === null) continue;
    exceptions.push({
      kind: o.exception.kind,
      bankLineId: o.line.bankLineId,
      paymentId: o.paymentId,
      currency: o.line.currency,
      amountMinor: o.line.amountMinor,
      details: {
        reason: o.exception.reason,
        direction: o.line.direction,
        reference: o.line.reference,
        ...(o.exception.relatedBankLineId === null ? {} : { originalBankLineId: o.exception.relatedBankLineId }),
      },
    });
  }
  await insertLineExceptions(q, exceptions, now);
  await markPaired(q, result.pairedAwaiting);
  const moved = await applyActions(q, clock, result);
  // The balance check's list of currencies, and a paged source's cursor, in one call (migration 0040).
  const currencies = [...new Set(result.lines.map((o) => o.line.currency))];
  const paged = options.advanceTo !== undefined;
  await q.query('SELECT recon_close_batch($1::text[], $2, $3, $4, $5)', [
    currencies,
    paged ? source : null,
    paged ? options.advanceTo : null,
    fresh.length,
    now,
  ]);
  const exceptionsByKind: Record<string, number> = {};
  for (const e of exceptions) exceptionsByKind[e.kind] = (exceptionsByKind[e.kind] ?? 0) + 1;
  return {
    lines: lines.length,
    fresh: fresh.length,
    matched: result.lines.filter((o) => o.status === 'matched').length,
    exceptions: exceptions.length,
    exceptionsByKind,
    actions: result.actions,
    moved,
  };
}

async function applyActions(q: Queryable, clock: Clock, result: BatchResult): Promise<Payment[]> {
  const debited: string[] = [];
  const finished: string[] = [];
  const moved: Payment[] = [];
  const record = (r: TransitionResult): void => {
    if (r.kind === 'moved') moved.push(r.payment);
  };
  for (const action of result.actions) {
    switch (action.kind) {
      case 'complete': {
        const done = await transition(q, clock, action.paymentId, { state: 'completed', subStatus: null });
        expectMoved(done.kind, action);
        record(done);
        debited.push(action.paymentId);
        finished.push(action.paymentId);
        break;
      }
      case 'fail_returned': {
        const done = await transition(q, clock, action.paymentId, {
          state: 'failed',
          subStatus: 'declined',
          failureCode: RETURNED_FAILURE_CODE,
        });
        expectMoved(done.kind, action);
        record(done);
        finished.push(action.paymentId);
        break;
      }
      case 'debit_confirmed':
        debited.push(action.paymentId);
        break;
      case 'reverse': {
        const done = await reverseCompletedPayment(q, clock, action.paymentId, RETURNED_FAILURE_CODE);
        expectMoved(done.kind, action);
        record(done);
        break;
      }
    }
  }
  if (debited.length > 0) {
    // The watch row goes first. A watch check racing this batch (it does not wait for completed payments) either
    // committed its flag before the DELETE, which then waits for it and returns the row as flagged, so the
    // missing_debit it opened is resolved below; or it finds the row gone.
    const ids = listParam(debited);
    const { rows } = await q.query<{ payment_id: string; flagged: boolean }>(
      `DELETE FROM recon_debit_watch WHERE payment_id IN (${ids.rows(1)}) RETURNING payment_id, flagged`,
      [ids.value],
    );
    const flagged = rows.filter((r) => r.flagged).map((r) => r.payment_id);
    const debitOf = new Map<string, string>();
    for (const o of result.lines) {
      if (o.matchKind === 'payout' && o.paymentId !== null) debitOf.set(o.paymentId, o.line.bankLineId);
    }
    await autoResolve(
      q,
      {
        kind: 'missing_debit',
        paymentIds: flagged,
        notes: flagged.map((id) => `the debit arrived late: bank line ${debitOf.get(id) ?? '?'}`),
      },
      clock.now(),
    );
  }
  if (finished.length > 0) {
    const ids = listParam(finished);
    await q.query(`DELETE FROM recon_requery WHERE payment_id IN (${ids.rows(1)})`, [ids.value]);
  }
  return moved;
}

// The payments were locked when the facts were read, so the move the matcher chose must apply; anything else
// is a bug, and throwing rolls the whole batch back for the next cycle to retry.
function expectMoved(kind: string, action: BatchResult['actions'][number]): void {
  if (kind !== 'moved') throw new Error(`reconciliation: ${action.kind} of ${action.paymentId} was ${kind}`);
}
