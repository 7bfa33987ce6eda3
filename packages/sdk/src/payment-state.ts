/**
 * Payment states (interface spec, "Payment states"). The set can grow, so the type keeps a catch-all string
 * and normalizeState maps anything unrecognised to 'unknown', never to 'failed': only 'failed' guarantees that
 * no money moved, and treating a new state as failed invites a second payment over one that may have settled.
 *
 * What a client must never do:
 * - re-issue or create a new payment over one that is 'unknown' (reconciliation resolves it, no client action);
 * - re-issue a 'failed' payment with the same idempotency-key (a replay returns the same failed payment): fix
 *   the cause shown by subStatus, then use a NEW key;
 * - read an HTTP error as a failed payment: failed payments arrive inside 2xx responses.
 */
export const KNOWN_PAYMENT_STATES = ['pending', 'processing', 'completed', 'failed', 'unknown'] as const;

export type KnownPaymentState = (typeof KNOWN_PAYMENT_STATES)[number];

/** A state as the server sends it: one of the known ones, or a newer one this SDK does not know. */
export type PaymentState = KnownPaymentState | (string & {});

const KNOWN: ReadonlySet<string> = new Set(KNOWN_PAYMENT_STATES);

export function normalizeState(state: unknown): KnownPaymentState {
  return typeof state === 'string' && KNOWN.has(state) ? (state as KnownPaymentState) : 'unknown';
}

/** completed and failed are final; pending, processing and unknown can still change. */
export function isFinalState(state: unknown): boolean {
  const known = normalizeState(state);
  return known === 'completed' || known === 'failed';
}

/** GET /v2/version: `simulado` absent is read as true (the environment fabricates results). */
export function isSimulated(version: { simulado?: boolean | undefined }): boolean {
  return version.simulado !== false;
}
