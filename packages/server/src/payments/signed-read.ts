import type { NonceVerdict } from '../auth/nonce-store.ts';
import { batchStartTurns } from '../db/batch-start.ts';
import type { Db } from '../db/db.ts';
import { prepared } from '../db/prepared.ts';
import { createBatcher, resultsAt } from '../shared/batcher.ts';
import { type PaymentView, paymentViewFromJson } from './public-view.ts';

/**
 * Signed GETs of a payment whose nonce the read consumes (auth/deferred-nonce.ts): the GETs that arrive together
 * apply their nonces and read their payments in one statement (read_payment_views_signed, migrations 0029 and 0041),
 * one round trip and one commit per batch, where the nonce flush and the read were two. The nonce mark commits with
 * the statement, before any answer leaves. A payment comes back as its public view (public-view.ts).
 */

export interface SignedRead {
  keyId: string;
  nonce: string;
  strict: boolean;
  clientId: string;
  paymentId: string;
}

/** The nonce's verdict and, when it was good, the payment's view: null when it does not exist for this client. */
export type SignedReadResult = { verdict: 'ok'; view: PaymentView | null } | { verdict: Exclude<NonceVerdict, 'ok'> };

const READ_SQL = prepared(
  'SELECT pos, verdict, payment_view FROM read_payment_views_signed($1::text[], $2::numeric[], $3::boolean[], $4::text[])',
);

/**
 * One lane: every read that arrives while a statement is in flight shares the next one, in arrival order (so a key's
 * nonces apply in that order). Two lanes, as the nonce store has, split the same reads over two statements and two
 * commits: under the GET bench on PostgreSQL one lane read 10 % more per second (five runs alternated, 7,772 against
 * 7,026 on average, with less database CPU), and the embedded database read the same either way.
 */
const LANES = 1;

export function createSignedReads({
  db,
  maxBatch,
  onBatch,
  onRun,
}: {
  db: Db;
  maxBatch: number;
  /** Told the size of each batch: a nonce flush (metrics). */
  onBatch?: (size: number) => void;
  /** Told how long each batch ran (metrics). */
  onRun?: (seconds: number) => void;
}): { lanes: number; read(request: SignedRead): Promise<SignedReadResult> } {
  const batches = createBatcher<SignedRead, SignedReadResult>({
    lanes: LANES,
    maxBatch,
    startTurns: batchStartTurns(db),
    onRun,
    async run(items) {
      onBatch?.(items.length);
      const { rows } = await db.query<{
        pos: number | null;
        verdict: NonceVerdict | null;
        payment_view: string | null;
      }>(READ_SQL, [
        items.map((i) => i.keyId),
        items.map((i) => i.nonce),
        items.map((i) => i.strict),
        items.map((i) => i.paymentId),
      ]);
      const views = new Map<string, PaymentView>();
      for (const row of rows) {
        if (row.pos !== null) continue;
        const view = paymentViewFromJson(row.payment_view!);
        views.set(view.payment.id, view);
      }
      const answer = (item: SignedRead, verdict: NonceVerdict): SignedReadResult => {
        if (verdict !== 'ok') return { verdict };
        const view = views.get(item.paymentId);
        // Another client's payment does not exist for this one.
        return { verdict, view: view?.clientId === item.clientId ? view : null };
      };
      return resultsAt(
        items.length,
        rows.flatMap((row) => {
          if (row.pos === null) return [];
          const i = row.pos - 1;
          return [[i, answer(items[i]!, row.verdict!)] as const];
        }),
        'read_payment_views_signed gave no verdict',
      );
    },
  });
  return { lanes: batches.lanes, read: (request) => batches.add(request, request.keyId) };
}
