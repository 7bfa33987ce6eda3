import { batchStartTurns } from '../db/batch-start.ts';
import type { Db } from '../db/db.ts';
import { prepared } from '../db/prepared.ts';
import { createBatcher, resultsAt } from '../shared/batcher.ts';

/**
 * The per-key anti-replay mark (spec, Nonce). The mark row is the hottest row in the system: one UPDATE per
 * request on it gets no group commit. So requests are coalesced: every consume() waiting while a flush is in
 * flight joins the next batch, and one statement (consume_nonces, migrations 0001, 0021 and 0032) applies the batch in
 * order and commits once. Each caller is answered only after the flush that covers it has committed, so the mark
 * is durable before the response goes out. Row locks inside the function keep it correct across processes.
 */

export type NonceVerdict = 'ok' | 'replay' | 'inactive';

export interface NonceStore {
  /** Flush lanes side by side (metrics). */
  readonly lanes: number;
  /** strict: POST/PUT/PATCH/DELETE/HEAD (nonce above the mark); otherwise GET, which may use the 64-number window. */
  consume(keyId: string, nonce: string, strict: boolean): Promise<NonceVerdict>;
}

export const NONCE_FORMAT = /^[1-9][0-9]{0,37}$/;

interface Pending {
  keyId: string;
  nonce: string;
  strict: boolean;
}

const CONSUME_SQL = prepared('SELECT pos, verdict FROM consume_nonces($1::text[], $2::numeric[], $3::boolean[])');

const MAX_BATCH = 512;
/**
 * Independent flush lanes (shared/batcher.ts). A key always maps to the same lane, so its nonces are applied in
 * arrival order; the lanes flush in parallel so that PostgreSQL can group their commits instead of one flush waiting
 * for the last.
 */
const LANES = 2;

export function createNonceStore({
  db,
  onBatch,
  onRun,
}: {
  db: Db;
  /** Told the size of each flush (metrics). */
  onBatch?: (size: number) => void;
  /** Told how long each flush ran (metrics). */
  onRun?: (seconds: number) => void;
}): NonceStore {
  const flushes = createBatcher<Pending, NonceVerdict>({
    lanes: LANES,
    maxBatch: MAX_BATCH,
    startTurns: batchStartTurns(db),
    onRun,
    async run(batch) {
      onBatch?.(batch.length);
      const { rows } = await db.query<{ pos: number; verdict: NonceVerdict }>(CONSUME_SQL, [
        batch.map((p) => p.keyId),
        batch.map((p) => p.nonce),
        batch.map((p) => p.strict),
      ]);
      return resultsAt(
        batch.length,
        rows.map((row) => [Number(row.pos) - 1, row.verdict] as const),
        'consume_nonces gave no verdict',
      );
    },
  });

  return {
    lanes: flushes.lanes,
    consume(keyId, nonce, strict) {
      if (!NONCE_FORMAT.test(nonce)) return Promise.resolve('replay');
      return flushes.add({ keyId, nonce, strict }, keyId);
    },
  };
}
