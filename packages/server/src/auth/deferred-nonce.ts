import type { NonceStore, NonceVerdict } from './nonce-store.ts';

/**
 * The nonce of a request whose route consumes it inside its own transaction (POST /v2/payments: the reserve
 * phase, payments/reserve.ts; GET /v2/payments/{id}: the read, payments/signed-read.ts), so the mark commits with
 * the route's own statement instead of in a commit of its own before it.
 *
 * The spec's order of checks still holds: the route's transaction consumes the nonce before anything else it
 * decides, and a request that ends without reaching that transaction (a 400 of the body, a refusal before the
 * batch, a batch that failed) has its nonce consumed by settleDeferredNonce before its answer leaves: a replayed
 * nonce then answers 401 in place of that answer, as it would have had the nonce been consumed first.
 *
 * Any other signed GET overlaps instead: its nonce goes to the nonce store at once (`started`) and the read runs
 * while the mark is flushed; the answer waits for both. A read changes nothing a client could not cause with any
 * fresh request (at most the sandbox publishes a rate that is due, on a GET /v2/rate), so reading before the verdict
 * is known is safe, and a replay still gets only its 401.
 */
export interface DeferredNonce {
  keyId: string;
  nonce: string;
  /** Checked strictly (above the mark), as a write's is; a GET's may use the 64-number window. */
  strict: boolean;
  /** Set once a committed transaction (or settleDeferredNonce) has applied the nonce. */
  settled: boolean;
  /** The nonce store's consume, already under way (a signed GET). */
  started?: Promise<NonceVerdict>;
}

/** Consumes a nonce no transaction applied; the 401 text that replaces the answer, or null to let it go out. */
export async function settleDeferredNonce(nonces: NonceStore, deferred: DeferredNonce): Promise<string | null> {
  if (deferred.settled) return null;
  const verdict = await (deferred.started ?? nonces.consume(deferred.keyId, deferred.nonce, deferred.strict));
  deferred.settled = true;
  return nonceFailure(verdict);
}

/** The spec's 401 texts of a refused nonce, the same words whichever step found it (store, transaction, format). */
export const NONCE_FAILURE: Readonly<Record<Exclude<NonceVerdict, 'ok'>, string>> = {
  replay: 'nonce replay',
  inactive: 'api key is inactive',
};

/** The 401 text of a nonce verdict, or null when the nonce was good. */
export function nonceFailure(verdict: NonceVerdict): string | null {
  return verdict === 'ok' ? null : NONCE_FAILURE[verdict];
}
