import type { Db } from '../db/db.ts';
import type { Clock } from '../shared/clock.ts';
import { randomId } from '../shared/ids.ts';
import { retryDelayMs } from './backoff.ts';
import {
  type ChangeRecord,
  type ChangeRequest,
  claimDueRequest,
  insertRequest,
  listRequests,
  lockConfig,
  pendingRequest,
  readState,
  rescheduleRequest,
  resolveRequest,
  setActiveUrl,
  type WebhookState,
} from './config-store.ts';
import { buildVerificationEvent, type ProofVerdict } from './proof-of-control.ts';
import type { CheckUrlResult, TargetRejection } from './safe-target.ts';
import type { VerifyFn } from './verification-sender.ts';

/**
 * Changing a client's webhook URL (PUT /v2/webhook) with proof of control, and the background worker that
 * keeps verifying a URL that could not be reached. The URL applies only once its receiver echoes the
 * challenge; until then the old URL stays active. No lock is held while a receiver is called: the request
 * row is claimed (attempt numbered, lease taken) in one transaction and the verdict recorded in another.
 */

export const VERIFICATION_WINDOW_MS = 24 * 3_600_000;

export type ChangeResult =
  | { ok: true; changed: boolean; state: WebhookState }
  /** 400: the URL breaks a rule of what may be registered (scheme, credentials, forbidden address). */
  | { ok: false; error: 'invalid_url'; message: string }
  /** 422: the host does not resolve, or the receiver answered but did not prove control. */
  | { ok: false; error: 'unresolvable' | 'proof_failed'; message: string };

export interface UrlChangeService {
  state(clientId: string): Promise<WebhookState>;
  requestChange(clientId: string, url: string): Promise<ChangeResult>;
  /** Background verification: at most one attempt (or one expiry); the request id, undefined when idle. */
  processNextVerification(): Promise<string | undefined>;
  history(clientId: string, limit: number): Promise<ChangeRecord[]>;
}

export interface UrlChangeDeps {
  db: Db;
  clock: Clock;
  /** checkUrl with the deployment's rules (insecure flag, resolver) bound. */
  check(url: string): Promise<CheckUrlResult>;
  verify: VerifyFn;
  retryBaseMs: number;
  windowMs?: number;
  /** Keeps the background worker off a request while an attempt is in flight; above the post timeout. */
  leaseMs?: number;
  random?: () => number;
}

const RULE_MESSAGES: Record<Exclude<TargetRejection, 'unresolvable'>, string> = {
  invalid_url: 'webhookUrl must be an absolute https:// URL',
  scheme_not_allowed: 'webhookUrl must use https://',
  userinfo_not_allowed: 'webhookUrl must not carry a user name or password',
  forbidden_address: 'webhookUrl must resolve only to public addresses',
};

/** Rules a developer meets with a receiver on their own machine, and the setting that lifts them (sandbox only). */
const INSECURE_HINT = new Set<TargetRejection>(['scheme_not_allowed', 'forbidden_address']);
export const INSECURE_SETTING =
  'a sandbox started with DISPERSA_WEBHOOK_ALLOW_INSECURE=true accepts http:// and local receivers';

type Begun = { kind: 'unchanged' } | { kind: 'already_pending' } | { kind: 'started'; request: ChangeRequest };

export function createUrlChangeService(deps: UrlChangeDeps): UrlChangeService {
  const { db, clock } = deps;
  const windowMs = deps.windowMs ?? VERIFICATION_WINDOW_MS;
  const leaseMs = deps.leaseMs ?? 60_000;
  const random = deps.random ?? Math.random;

  function later(ms: number): Date {
    return new Date(clock.now().getTime() + ms);
  }

  async function begin(clientId: string, url: string): Promise<Begun> {
    return db.tx(async (q) => {
      const now = clock.now();
      const active = await lockConfig(q, clientId, now);
      const pending = await pendingRequest(q, clientId, { forUpdate: true });
      if (active === url) {
        if (pending !== null) {
          await resolveRequest(q, pending.id, {
            status: 'superseded',
            reason: 'the active URL was set again',
            at: now,
          });
        }
        return { kind: 'unchanged' };
      }
      if (pending?.requestedUrl === url) return { kind: 'already_pending' };
      if (pending !== null) {
        await resolveRequest(q, pending.id, {
          status: 'superseded',
          reason: `replaced by a request for ${url}`,
          at: now,
        });
      }
      const event = buildVerificationEvent(clock);
      const request = await insertRequest(q, {
        id: randomId('whc'),
        clientId,
        requestedUrl: url,
        eventId: event.eventId,
        challenge: event.challenge,
        body: event.body,
        // The caller makes attempt 1 at once and holds the lease meanwhile.
        attempts: 1,
        nextAttemptAt: new Date(now.getTime() + leaseMs),
        expiresAt: new Date(now.getTime() + windowMs),
        requestedAt: now,
      });
      return { kind: 'started', request };
    });
  }

  /** Records the verdict of attempt `attempt`; false when that attempt no longer owns the request. */
  async function settle(request: ChangeRequest, attempt: number, verdict: ProofVerdict): Promise<boolean> {
    return db.tx(async (q) => {
      const now = clock.now();
      await lockConfig(q, request.clientId, now);
      switch (verdict.verdict) {
        case 'proven': {
          const applied = await resolveRequest(q, request.id, { status: 'proven', reason: null, at: now, attempt });
          if (applied) await setActiveUrl(q, request.clientId, request.requestedUrl, now);
          return applied;
        }
        case 'rejected':
          return resolveRequest(q, request.id, { status: 'rejected', reason: verdict.reason, at: now, attempt });
        case 'pending': {
          const next = Math.min(
            now.getTime() + retryDelayMs(attempt, deps.retryBaseMs, random),
            request.expiresAt.getTime(),
          );
          return (await rescheduleRequest(q, request.id, attempt, new Date(next), verdict.reason)) !== null;
        }
      }
    });
  }

  function attemptOf(request: ChangeRequest) {
    return {
      url: request.requestedUrl,
      eventId: request.eventId,
      body: request.body,
      challenge: request.challenge,
      attempt: request.attempts,
    };
  }

  async function requestChange(clientId: string, rawUrl: string): Promise<ChangeResult> {
    const checked = await deps.check(rawUrl);
    if (!checked.ok) {
      if (checked.reason === 'unresolvable') {
        return { ok: false, error: 'unresolvable', message: `webhookUrl cannot be resolved: ${checked.detail}` };
      }
      const fix = INSECURE_HINT.has(checked.reason) ? `; ${INSECURE_SETTING}` : '';
      return {
        ok: false,
        error: 'invalid_url',
        message: `${RULE_MESSAGES[checked.reason]} (${checked.detail}${fix})`,
      };
    }
    // Compared and stored in the WHATWG serialisation, so spelling variants of one URL are one URL.
    const url = checked.url.href;
    const begun = await begin(clientId, url);
    if (begun.kind !== 'started') return { ok: true, changed: false, state: await readState(db, clientId) };

    const verdict = await deps.verify(attemptOf(begun.request));
    const applied = await settle(begun.request, 1, verdict);
    const state = await readState(db, clientId);
    if (applied && verdict.verdict === 'rejected') {
      return { ok: false, error: 'proof_failed', message: `proof of control failed: ${verdict.reason}` };
    }
    return { ok: true, changed: applied && verdict.verdict === 'proven', state };
  }

  async function processNextVerification(): Promise<string | undefined> {
    const now = clock.now();
    const claimed = await claimDueRequest(db, now, later(leaseMs));
    if (claimed === null) return undefined;
    const { request, expired } = claimed;
    if (expired) {
      const last = request.reason === null ? '' : `; last error: ${request.reason}`;
      await db.tx((q) =>
        resolveRequest(q, request.id, {
          status: 'expired',
          reason: `control not proven within ${Math.round(windowMs / 60_000)} minutes${last}`,
          at: now,
        }),
      );
      return request.id;
    }
    const verdict = await deps.verify(attemptOf(request));
    await settle(request, request.attempts, verdict);
    return request.id;
  }

  return {
    state: (clientId) => readState(db, clientId),
    requestChange,
    processNextVerification,
    history: (clientId, limit) => listRequests(db, clientId, limit),
  };
}
