import type { ServerResponse } from 'node:http';
import type { Queryable } from '../../src/db/db.ts';
import { randomId } from '../../src/shared/ids.ts';
import type { ReceivedRequest } from './helpers.ts';
import type { JwksDocument } from './independent-verifier.ts';

/** Support for the end-to-end webhook tests over real HTTP. */

/** Answers a webhook.verification event with its challenge, anything else with 200 {}. */
export function echoChallenge(req: ReceivedRequest, res: ServerResponse): void {
  const event = JSON.parse(req.body.toString('utf8')) as { type: string; data: { challenge?: string } };
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify(event.type === 'webhook.verification' ? { challenge: event.data.challenge } : {}));
}

/** Drops the connection without an answer: the receiver counts as unreachable. */
export function hangUp(req: ReceivedRequest, res: ServerResponse): void {
  void req;
  res.socket?.destroy();
}

export function eventOf(req: ReceivedRequest): {
  id: string;
  type: string;
  test: boolean;
  createdAt: string;
  data: any;
} {
  return JSON.parse(req.body.toString('utf8'));
}

/** Polls until fn returns something other than undefined/false; fails after timeoutMs. */
export async function waitFor<T>(
  fn: () => Promise<T | undefined | false> | T | undefined | false,
  what: string,
  timeoutMs = 30_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await fn();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

export async function fetchJwks(baseUrl: string): Promise<JwksDocument> {
  const res = await fetch(`${baseUrl}/v2/webhook/keys`);
  if (res.status !== 200) throw new Error(`JWKS answered ${res.status}`);
  return (await res.json()) as JwksDocument;
}

/**
 * An outbox row of a payment state change, written the way the payment core writes it (operator contract
 * section 7 body: id, type, test, createdAt, data.payment as the public Payment, data.previousState).
 */
export async function insertPaymentEvent(
  q: Queryable,
  options: { clientId: string; paymentId: string; state: string; previousState: string | null },
): Promise<{ id: string; body: string }> {
  const id = randomId('evt');
  const now = new Date();
  const body = JSON.stringify({
    id,
    type: 'payment.state_changed',
    test: false,
    createdAt: now.toISOString(),
    data: {
      payment: {
        intentId: options.paymentId,
        id: options.paymentId,
        state: options.state,
        subStatus: null,
        amountMinor: '150000',
        currency: 'VES',
        rail: 'PM',
        beneficiary: '04141234567',
        createdAt: now.toISOString(),
        updatedAt: now.toISOString(),
        failureCode: null,
      },
      previousState: options.previousState,
    },
  });
  await q.query(
    `INSERT INTO events (id, client_id, type, test, payment_id, body, created_at, next_attempt_at)
     VALUES ($1, $2, 'payment.state_changed', false, $3, $4, $5, $5)`,
    [id, options.clientId, options.paymentId, body, now],
  );
  return { id, body };
}

export async function eventStatus(q: Queryable, id: string): Promise<{ delivery_status: string; attempts: number }> {
  const { rows } = await q.query<{ delivery_status: string; attempts: number }>(
    'SELECT delivery_status, attempts FROM events WHERE id = $1',
    [id],
  );
  const row = rows[0];
  if (row === undefined) throw new Error(`no event ${id}`);
  return { delivery_status: row.delivery_status, attempts: Number(row.attempts) };
}
