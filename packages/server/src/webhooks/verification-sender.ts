import type { Clock } from '../shared/clock.ts';
import { signDetachedAsync } from './jws.ts';
import { judgeVerification, type ProofVerdict } from './proof-of-control.ts';
import type { PostFn } from './safe-post.ts';
import type { ActiveSigner } from './signing-keys.ts';

/** One attempt at proving control of a URL: the webhook.verification event, signed like every event. */

export interface VerificationAttempt {
  url: string;
  eventId: string;
  /** The exact JSON text of the verification event. */
  body: string;
  challenge: string;
  attempt: number;
}

export type VerifyFn = (attempt: VerificationAttempt) => Promise<ProofVerdict>;

export function createVerificationSender(deps: {
  clock: Clock;
  signer: { activeSigner(): Promise<ActiveSigner> };
  /** A poster with the verification time bound (a few seconds: PUT waits for the first attempt). */
  post: PostFn;
}): VerifyFn {
  return async (a) => {
    const { kid, privateKey } = await deps.signer.activeSigner();
    const body = Buffer.from(a.body, 'utf8');
    const iat = Math.floor(deps.clock.now().getTime() / 1000);
    const signature = await signDetachedAsync(body, { kid, privateKey, iat });
    const result = await deps.post({ url: a.url, body, eventId: a.eventId, attempt: a.attempt, signature });
    return judgeVerification(result, a.challenge);
  };
}
