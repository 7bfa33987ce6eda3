import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { Clock } from '../shared/clock.ts';
import { randomId } from '../shared/ids.ts';
import type { PostResult } from './safe-post.ts';

/**
 * Proof of control of a new webhook URL (operator contract section 7), the pure part: the
 * webhook.verification event carrying a random challenge, and the verdict on the receiver's answer.
 * Sending it (signed, through safe-post) and recording the change request belong to the route.
 */

export interface VerificationEvent {
  eventId: string;
  challenge: string;
  /** The exact JSON text to sign and send. */
  body: string;
}

export function buildVerificationEvent(clock: Clock): VerificationEvent {
  const eventId = randomId('evt');
  const challenge = randomBytes(32).toString('base64url');
  const body = JSON.stringify({
    id: eventId,
    type: 'webhook.verification',
    test: false,
    createdAt: clock.now().toISOString(),
    data: { challenge },
  });
  return { eventId, challenge, body };
}

export type ProofVerdict =
  | { verdict: 'proven' }
  /** Reachable but wrong, or a URL the service must not call: the change request fails (422). */
  | { verdict: 'rejected'; reason: string }
  /** No answer in time: the change stays pending and verification is retried in the background. */
  | { verdict: 'pending'; reason: string };

function sameChallenge(received: unknown, expected: string): boolean {
  if (typeof received !== 'string') return false;
  const a = Buffer.from(received, 'utf8');
  const b = Buffer.from(expected, 'utf8');
  return a.length === b.length && timingSafeEqual(a, b);
}

export function judgeVerification(result: PostResult, challenge: string): ProofVerdict {
  if (result.errorKind === 'forbidden_address' || result.errorKind === 'invalid_target') {
    return { verdict: 'rejected', reason: result.error ?? 'the URL is not an allowed target' };
  }
  if (result.errorKind === 'timeout' || result.errorKind === 'network') {
    return { verdict: 'pending', reason: result.error ?? 'the receiver could not be reached' };
  }
  if (result.statusCode === undefined) return { verdict: 'pending', reason: 'the receiver could not be reached' };
  if (!result.ok) return { verdict: 'rejected', reason: `the receiver answered HTTP ${result.statusCode}` };
  if (result.body === undefined) return { verdict: 'rejected', reason: result.error ?? 'the answer had no body' };
  let parsed: unknown;
  try {
    parsed = JSON.parse(result.body);
  } catch {
    return { verdict: 'rejected', reason: 'the answer is not JSON' };
  }
  const received =
    typeof parsed === 'object' && parsed !== null ? (parsed as { challenge?: unknown }).challenge : undefined;
  return sameChallenge(received, challenge)
    ? { verdict: 'proven' }
    : { verdict: 'rejected', reason: 'the answer does not echo the challenge' };
}
