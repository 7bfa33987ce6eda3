import type { Db } from '../db/db.ts';

/**
 * The per-key anti-replay mark (spec, Nonce). The mark row is the hottest row in the system: one UPDATE per
 * request on it gets no group commit. So requests are coalesced: every consume() waiting while a flush is in
 * flight joins the next batch, and one statement (consume_nonces, in 0001_foundation.sql) applies the batch in
 * order and commits once. Each caller is answered only after the flush that covers it has committed, so the mark
 * is durable before the response goes out. Row locks inside the function keep it correct across processes.
 */

export type NonceVerdict = 'ok' | 'replay' | 'inactive';

export interface NonceStore {
  /** strict: POST/PUT/PATCH/DELETE/HEAD (nonce above the mark); otherwise GET, which may use the 64-number window. */
  consume(keyId: string, nonce: string, strict: boolean): Promise<NonceVerdict>;
}

export const NONCE_FORMAT = /^[1-9][0-9]{0,37}$/;

interface Pending {
  keyId: string;
  nonce: string;
  strict: boolean;
  resolve: (v: NonceVerdict) => void;
  reject: (e: unknown) => void;
}

const MAX_BATCH = 512;
/**
 * Independent flush queues. A key always maps to the same lane, so its nonces are applied in arrival order; the
 * lanes flush in parallel so that PostgreSQL can group their commits instead of one flush waiting for the last.
 */
const LANES = 2;

function laneOf(keyId: string): number {
  let h = 0;
  for (let i = 0; i < keyId.length; i++) h = (h * 31 + keyId.charCodeAt(i)) | 0;
  return Math.abs(h) % LANES;
}

export function createNonceStore({
  db,
  onBatch,
}: {
  db: Db;
  /** Told the size of each flush (metrics). */
  onBatch?: (size: number) => void;
}): NonceStore {
  const lanes = Array.from({ length: LANES }, () => ({ queue: [] as Pending[], flushing: false }));

  async function flush(lane: { queue: Pending[]; flushing: boolean }): Promise<void> {
    while (lane.queue.length > 0) {
      const batch = lane.queue.slice(0, MAX_BATCH);
      lane.queue = lane.queue.slice(batch.length);
      onBatch?.(batch.length);
      try {
        const { rows } = await db.query<{ pos: number; verdict: NonceVerdict }>(
          'SELECT pos, verdict FROM consume_nonces($1::text[], $2::numeric[], $3::boolean[])',
          [batch.map((p) => p.keyId), batch.map((p) => p.nonce), batch.map((p) => p.strict)],
        );
        for (const row of rows) batch[Number(row.pos) - 1]?.resolve(row.verdict);
      } catch (err) {
        for (const p of batch) p.reject(err);
      }
    }
    lane.flushing = false;
  }

  return {
    consume(keyId, nonce, strict) {
      if (!NONCE_FORMAT.test(nonce)) return Promise.resolve('replay');
      return new Promise<NonceVerdict>((resolve, reject) => {
        const lane = lanes[laneOf(keyId)]!;
        lane.queue.push({ keyId, nonce, strict, resolve, reject });
        if (!lane.flushing) {
          lane.flushing = true;
          // setImmediate lets requests that arrive in the same turn share the first flush too.
          setImmediate(() => void flush(lane));
        }
      });
    },
  };
}
