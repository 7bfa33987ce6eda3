import type { Queryable } from '../db/db.ts';
import { prepared } from '../db/prepared.ts';
import { isoTime } from '../shared/money.ts';

/**
 * The SQL of webhook configuration: each client's active URL (webhook_configs) and its change requests
 * (webhook_change_requests; the one in 'verifying' is the pending change, the rest are history).
 * Lock order, everywhere: the client's webhook_configs row first, then its change request.
 */

export type ChangeStatus = 'verifying' | 'proven' | 'rejected' | 'expired' | 'superseded';

/** The pendingChange object of GET/PUT /v2/webhook and GET /v2/me (documented in docs/webhooks.md). */
export interface PendingChange {
  webhookUrl: string;
  requestedAt: string;
  status: 'verifying';
  /** Verification attempts made so far. */
  attempts: number;
  nextAttemptAt: string;
  /** Verification stops, and the request is recorded as expired, at this time. */
  expiresAt: string;
  /** Why the last attempt did not prove control (e.g. the receiver could not be reached). */
  lastError: string | null;
}

export interface WebhookState {
  webhookUrl: string | null;
  pendingChange: PendingChange | null;
}

export interface ChangeRequest {
  id: string;
  clientId: string;
  requestedUrl: string;
  status: ChangeStatus;
  reason: string | null;
  eventId: string;
  challenge: string;
  body: string;
  attempts: number;
  nextAttemptAt: Date;
  expiresAt: Date;
  requestedAt: Date;
  resolvedAt: Date | null;
}

interface RequestRow {
  id: string;
  client_id: string;
  requested_url: string;
  status: ChangeStatus;
  reason: string | null;
  event_id: string;
  challenge: string;
  body: string;
  attempts: number;
  next_attempt_at: Date;
  expires_at: Date;
  requested_at: Date;
  resolved_at: Date | null;
}

const COLUMNS = [
  'id',
  'client_id',
  'requested_url',
  'status',
  'reason',
  'event_id',
  'challenge',
  'body',
  'attempts',
  'next_attempt_at',
  'expires_at',
  'requested_at',
  'resolved_at',
];
const REQUEST_COLUMNS = COLUMNS.join(', ');

function toRequest(r: RequestRow): ChangeRequest {
  return {
    id: r.id,
    clientId: r.client_id,
    requestedUrl: r.requested_url,
    status: r.status,
    reason: r.reason,
    eventId: r.event_id,
    challenge: r.challenge,
    body: r.body,
    attempts: Number(r.attempts),
    nextAttemptAt: new Date(r.next_attempt_at),
    expiresAt: new Date(r.expires_at),
    requestedAt: new Date(r.requested_at),
    resolvedAt: r.resolved_at === null ? null : new Date(r.resolved_at),
  };
}

export function pendingChangeOf(r: ChangeRequest): PendingChange {
  return {
    webhookUrl: r.requestedUrl,
    requestedAt: isoTime(r.requestedAt),
    status: 'verifying',
    attempts: r.attempts,
    nextAttemptAt: isoTime(r.nextAttemptAt),
    expiresAt: isoTime(r.expiresAt),
    lastError: r.reason,
  };
}

export async function activeUrl(q: Queryable, clientId: string): Promise<string | null> {
  const { rows } = await q.query<{ url: string | null }>('SELECT url FROM webhook_configs WHERE client_id = $1', [
    clientId,
  ]);
  return rows[0]?.url ?? null;
}

export async function pendingRequest(
  q: Queryable,
  clientId: string,
  options: { forUpdate?: boolean } = {},
): Promise<ChangeRequest | null> {
  const { rows } = await q.query<RequestRow>(
    `SELECT ${REQUEST_COLUMNS} FROM webhook_change_requests WHERE client_id = $1 AND status = 'verifying'
     ${options.forUpdate ? 'FOR UPDATE' : ''}`,
    [clientId],
  );
  return rows[0] === undefined ? null : toRequest(rows[0]);
}

export async function readState(q: Queryable, clientId: string): Promise<WebhookState> {
  const [url, pending] = [await activeUrl(q, clientId), await pendingRequest(q, clientId)];
  return { webhookUrl: url, pendingChange: pending === null ? null : pendingChangeOf(pending) };
}

/** Locks (creating it if needed) the client's configuration row; returns the active URL. */
export async function lockConfig(q: Queryable, clientId: string, now: Date): Promise<string | null> {
  await q.query(
    `INSERT INTO webhook_configs (client_id, url, updated_at) VALUES ($1, NULL, $2)
     ON CONFLICT (client_id) DO NOTHING`,
    [clientId, now],
  );
  const { rows } = await q.query<{ url: string | null }>(
    'SELECT url FROM webhook_configs WHERE client_id = $1 FOR UPDATE',
    [clientId],
  );
  return rows[0]?.url ?? null;
}

export async function setActiveUrl(q: Queryable, clientId: string, url: string, now: Date): Promise<void> {
  await q.query('UPDATE webhook_configs SET url = $2, updated_at = $3 WHERE client_id = $1', [clientId, url, now]);
}

export interface NewRequest {
  id: string;
  clientId: string;
  requestedUrl: string;
  eventId: string;
  challenge: string;
  body: string;
  /** 1 when the caller makes the first attempt itself right away (it then holds the lease). */
  attempts: number;
  nextAttemptAt: Date;
  expiresAt: Date;
  requestedAt: Date;
}

export async function insertRequest(q: Queryable, r: NewRequest): Promise<ChangeRequest> {
  const { rows } = await q.query<RequestRow>(
    `INSERT INTO webhook_change_requests
       (id, client_id, requested_url, status, event_id, challenge, body, attempts, next_attempt_at, expires_at,
        requested_at)
     VALUES ($1, $2, $3, 'verifying', $4, $5, $6, $7, $8, $9, $10)
     RETURNING ${REQUEST_COLUMNS}`,
    [
      r.id,
      r.clientId,
      r.requestedUrl,
      r.eventId,
      r.challenge,
      r.body,
      r.attempts,
      r.nextAttemptAt,
      r.expiresAt,
      r.requestedAt,
    ],
  );
  return toRequest(rows[0]!);
}

/**
 * Ends a pending request. Guarded by the attempt number when given: an attempt whose claim was overtaken
 * (lease expired, or a newer PUT superseded the request) changes nothing. Returns whether it applied.
 */
export async function resolveRequest(
  q: Queryable,
  id: string,
  outcome: { status: Exclude<ChangeStatus, 'verifying'>; reason: string | null; at: Date; attempt?: number },
): Promise<boolean> {
  const res = await q.query(
    `UPDATE webhook_change_requests SET status = $2, reason = $3, resolved_at = $4
     WHERE id = $1 AND status = 'verifying' AND ($5::int IS NULL OR attempts = $5)`,
    [id, outcome.status, outcome.reason, outcome.at, outcome.attempt ?? null],
  );
  return res.rowCount === 1;
}

/** After an attempt that got no answer: keep it pending and schedule the next one. */
export async function rescheduleRequest(
  q: Queryable,
  id: string,
  attempt: number,
  nextAttemptAt: Date,
  reason: string,
): Promise<ChangeRequest | null> {
  const { rows } = await q.query<RequestRow>(
    `UPDATE webhook_change_requests SET next_attempt_at = $3, reason = $4
     WHERE id = $1 AND status = 'verifying' AND attempts = $2
     RETURNING ${REQUEST_COLUMNS}`,
    [id, attempt, nextAttemptAt, reason],
  );
  return rows[0] === undefined ? null : toRequest(rows[0]);
}

/** A function call (migration 0042), so that it runs as a prepared statement: the worker asks ten times a second. */
const CLAIM_DUE_SQL = prepared(`SELECT ${REQUEST_COLUMNS} FROM claim_due_change_request($1, $2)`);

/**
 * Takes the next due pending request for a background attempt: numbers the attempt and leases the row.
 * A request past its expiry is returned with expired: true and not numbered; the caller records it.
 */
export async function claimDueRequest(
  q: Queryable,
  now: Date,
  leaseUntil: Date,
): Promise<{ request: ChangeRequest; expired: boolean } | null> {
  const { rows } = await q.query<RequestRow>(CLAIM_DUE_SQL, [now, leaseUntil]);
  const row = rows[0];
  if (row === undefined) return null;
  const request = toRequest(row);
  return { request, expired: request.expiresAt.getTime() <= now.getTime() };
}

export interface ChangeRecord {
  id: string;
  requestedUrl: string;
  status: ChangeStatus;
  reason: string | null;
  attempts: number;
  requestedAt: string;
  resolvedAt: string | null;
}

/** Newest first: the operator's view of a client's change requests. */
export async function listRequests(q: Queryable, clientId: string, limit: number): Promise<ChangeRecord[]> {
  const { rows } = await q.query<RequestRow>(
    `SELECT ${REQUEST_COLUMNS} FROM webhook_change_requests WHERE client_id = $1
     ORDER BY seq DESC LIMIT $2`,
    [clientId, limit],
  );
  return rows.map(toRequest).map((r) => ({
    id: r.id,
    requestedUrl: r.requestedUrl,
    status: r.status,
    reason: r.reason,
    attempts: r.attempts,
    requestedAt: isoTime(r.requestedAt),
    resolvedAt: r.resolvedAt === null ? null : isoTime(r.resolvedAt),
  }));
}
