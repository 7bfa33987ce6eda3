import type { Db } from '../db/db.ts';
import type { Payment } from '../payments/repository.ts';
import { type IngestSummary, ingestLines } from '../reconciliation/ingest.ts';
import { toIncoming } from '../reconciliation/model.ts';
import type { Clock } from '../shared/clock.ts';
import { parseCamt053 } from './camt053.ts';
import { parseStatementCsv } from './csv.ts';

/**
 * A bank statement file handed in by an operator (camt.053 or CSV) feeds the same ingestion as the bank gateway:
 * idempotent on the bank's line ids, matched by the same rules, in one transaction. A malformed file is refused
 * whole, naming the line or element, and imports nothing.
 */
export type StatementFormat = 'camt053' | 'csv';

export type ImportResult =
  | { kind: 'imported'; format: StatementFormat; summary: IngestSummary }
  | { kind: 'invalid'; message: string };

export async function importStatement(
  deps: { db: Db; clock: Clock; onMoved?: (payment: Payment) => void },
  input: { format: unknown; content: unknown },
): Promise<ImportResult> {
  if (input.format !== 'camt053' && input.format !== 'csv') {
    return { kind: 'invalid', message: 'format must be camt053 or csv' };
  }
  if (typeof input.content !== 'string' || input.content.trim() === '') {
    return { kind: 'invalid', message: 'content is required: the statement file as text' };
  }
  const format = input.format;
  const parsed = format === 'camt053' ? parseCamt053(input.content) : parseStatementCsv(input.content);
  if (!parsed.ok) return { kind: 'invalid', message: parsed.error };
  const summary = await deps.db.tx(async (q) => {
    await q.query('SELECT recon_begin_ingest()');
    return ingestLines(q, deps.clock, `import:${format}`, parsed.lines.map(toIncoming));
  });
  for (const p of summary.moved) deps.onMoved?.(p);
  return { kind: 'imported', format, summary };
}
