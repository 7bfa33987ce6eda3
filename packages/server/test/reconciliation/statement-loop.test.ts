import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BankStatementLine, StatementPage, StatementSource } from '../../src/rails/rail.ts';
import type { ReconciliationDomain } from '../../src/reconciliation/domain.ts';
import { batchLinesFor } from '../../src/reconciliation/ingest.ts';
import { runWorker } from '../../src/shared/run-worker.ts';
import { type ReconServer, reconciliationOver, startReconServer } from './support.ts';

/**
 * The statement loop's pace (domain.ts): a backlog is read batch after batch at once, and a batch that reaches the
 * statement's end makes the loop wait for the next interval, even when lines keep arriving meanwhile, as they do
 * under steady payments.
 */

let r: ReconServer;

beforeAll(async () => {
  r = await startReconServer({});
});
afterAll(async () => {
  await r.stop();
});

/**
 * A bank's statement the test appends to. With `arriveAtEnd`, that many lines are booked each time a read finds the
 * end of the statement, as under steady payments: there is always something new by the time the lines are stored.
 */
function statement(name: string, options: { arriveAtEnd?: number } = {}) {
  const lines: BankStatementLine[] = [];
  const append = (n: number): void => {
    for (let i = 0; i < n; i++) {
      const k = lines.length + 1;
      lines.push({
        bankLineId: `${name}-${k}`,
        direction: 'debit',
        amountMinor: BigInt(100 + k),
        currency: 'VES',
        valueDate: '2026-02-01',
        reference: `NOBODY-${name}-${k}`,
        raw: `${name} line ${k}`,
      });
    }
  };
  const source: StatementSource = {
    name,
    async fetchSince(cursor: string | null): Promise<StatementPage> {
      const from = cursor === null ? 0 : Number(cursor);
      // Pages that divide every batch size (100 embedded; 250 and 5,000 on PostgreSQL), as the service's own
      // sources are asked for pages no longer than a batch (rails/registry.ts).
      const page = lines.slice(from, from + 50);
      if (page.length === 0) append(options.arriveAtEnd ?? 0);
      return { lines: page, cursor: page.length === 0 ? cursor : String(from + page.length) };
    },
    async balance() {
      return 0n;
    },
  };
  return { source, append, booked: () => lines.length };
}

function statementWorker(recon: ReconciliationDomain) {
  const loop = recon.workers?.find((w) => w.name === 'reconciliation.statement');
  if (loop === undefined) throw new Error('no statement loop');
  return loop;
}

function statementLoop(recon: ReconciliationDomain): () => Promise<string | undefined> {
  return statementWorker(recon).processNext;
}

async function storedOf(source: string): Promise<number> {
  const { rows } = await r.db.query<{ n: string }>('SELECT count(*) AS n FROM recon_lines WHERE source = $1', [source]);
  return Number(rows[0]!.n);
}

describe('the statement loop', () => {
  it('reads a backlog batch after batch at once, then waits for the interval', async () => {
    const batch = batchLinesFor(r.db.kind, true);
    const bank = statement('backlog');
    bank.append(batch + 3);
    const next = statementLoop(reconciliationOver(r.server, { statements: bank.source }));

    expect(await next()).toBe('ingested');
    expect(await storedOf('backlog')).toBe(batch);
    // The rest reaches the statement's end: the loop sleeps one interval.
    expect(await next()).toBeUndefined();
    expect(await storedOf('backlog')).toBe(batch + 3);

    bank.append(2);
    expect(await next()).toBeUndefined();
    expect(await storedOf('backlog')).toBe(batch + 5);
    // Nothing new: caught up.
    expect(await next()).toBeUndefined();
    expect(await storedOf('backlog')).toBe(batch + 5);
  });

  it('stores smaller batches while requests are in flight (on PostgreSQL), the whole batch with nobody waiting', async () => {
    const serving = batchLinesFor(r.db.kind, true);
    const idle = batchLinesFor(r.db.kind, false);
    expect([serving, idle]).toEqual(r.db.kind === 'embedded' ? [100, 100] : [250, 5000]);
    const bank = statement('sizes');
    bank.append(serving + idle + 1);
    const next = statementWorker(reconciliationOver(r.server, { statements: bank.source })).processNext;
    expect(await next({ serving: true })).toBe('ingested');
    expect(await storedOf('sizes')).toBe(serving);
    expect(await next({ serving: false })).toBe('ingested');
    expect(await storedOf('sizes')).toBe(serving + idle);
    expect(await next({ serving: false })).toBeUndefined();
    expect(await storedOf('sizes')).toBe(serving + idle + 1);
  });

  it('does not come back at once for the lines that arrived while it stored a batch', async () => {
    const bank = statement('steady', { arriveAtEnd: 3 });
    bank.append(10);
    const next = statementLoop(reconciliationOver(r.server, { statements: bank.source }));

    // The statement never looks caught up, yet each pass ends in a wait for the interval.
    for (let pass = 1; pass <= 3; pass++) expect(await next()).toBeUndefined();
    // Nothing is lost: only the lines booked after the last read wait for the next pass.
    expect(await storedOf('steady')).toBe(bank.booked() - 3);
    expect(await storedOf('steady')).toBeGreaterThanOrEqual(16);
  });

  it('rests between the batches of a backlog as long as each took (on both databases)', async () => {
    const batch = batchLinesFor(r.db.kind, true);
    const bank = statement('paced');
    bank.append(2 * batch + 1);
    const worker = statementWorker(reconciliationOver(r.server, { statements: bank.source }));
    const controller = new AbortController();
    // The loop as compose.ts runs it, its waits recorded instead of slept, each step timed by the loop itself.
    const pauses: number[] = [];
    const took: number[] = [];
    await runWorker(
      worker.name,
      async () => {
        const started = performance.now();
        const id = await worker.processNext();
        took.push(performance.now() - started);
        if (took.length === 3) controller.abort();
        return id;
      },
      {
        idleMs: worker.idleMs,
        busyShare: worker.busyShare,
        signal: controller.signal,
        logger: pino({ level: 'silent' }),
        sleep: async (ms) => {
          pauses.push(ms);
        },
      },
    );
    expect(await storedOf('paced')).toBe(2 * batch + 1);
    expect(worker.busyShare).toBe(0.5);
    // Two full batches, each followed by a rest of about its own length; the third reached the end: the interval.
    expect(pauses).toHaveLength(3);
    for (const i of [0, 1]) {
      expect(pauses[i]!).toBeGreaterThan(0);
      expect(pauses[i]!).toBeGreaterThanOrEqual(took[i]! * 0.9);
      expect(pauses[i]!).toBeLessThanOrEqual(took[i]! * 1.1 + 1);
    }
    expect(pauses[2]).toBe(worker.idleMs);
  });
});
