import type { Environment } from '../config.ts';
import { type ApiKeyService, KEY_PREFIX } from './api-keys.ts';
import { type DeferredNonce, NONCE_FAILURE, nonceFailure } from './deferred-nonce.ts';
import { buildEnvelope, verifyEnvelope } from './envelope.ts';
import { NONCE_FORMAT, type NonceStore } from './nonce-store.ts';

/**
 * The authentication steps of a signed request, in the spec's order, after the content-type check:
 * headers present (x-api-key, x-nonce, x-signature, one at a time) → environment prefix → key lookup →
 * signature → nonce. The nonce is consumed only once the signature verified; on a route that defers it
 * (deferred-nonce.ts) only its form is checked here and the route's transaction consumes it.
 */

export interface AuthContext {
  keyId: string;
  clientId: string;
  clientCurrency: string;
  environment: Environment;
  fingerprint: string;
  /** Present when the route consumes the nonce in its own transaction (deferred-nonce.ts). */
  deferredNonce?: DeferredNonce;
}

export interface SignedRequest {
  method: string;
  /** The request-target exactly as received (path and query, not decoded). */
  target: string;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
  /** Whether the idempotency slot of the envelope carries the idempotency-key header on this route. */
  idempotencySlot: boolean;
  /**
   * 'transaction': the route consumes the (strict) nonce in its own transaction; 'overlap': a read, whose nonce is
   * flushed while it runs (deferred-nonce.ts). Absent: the nonce is consumed before the route runs.
   */
  deferNonce?: 'transaction' | 'overlap';
}

export type AuthResult = { ok: true; context: AuthContext } | { ok: false; status: 401; error: string };

const fail = (error: string): AuthResult => ({ ok: false, status: 401, error });

function header(h: SignedRequest['headers'], name: string): string | undefined {
  const v = h[name];
  return Array.isArray(v) ? v[0] : v;
}

const STRICT_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE', 'HEAD']);

export function createAuthenticator(deps: { environment: Environment; keys: ApiKeyService; nonces: NonceStore }) {
  const ownPrefix = KEY_PREFIX[deps.environment];
  const otherPrefix = KEY_PREFIX[deps.environment === 'sandbox' ? 'production' : 'sandbox'];

  return async function authenticate(req: SignedRequest): Promise<AuthResult> {
    const apiKey = header(req.headers, 'x-api-key');
    if (apiKey === undefined || apiKey === '') return fail('missing x-api-key header');
    const nonce = header(req.headers, 'x-nonce');
    if (nonce === undefined || nonce === '') return fail('missing x-nonce header');
    const signature = header(req.headers, 'x-signature');
    if (signature === undefined || signature === '') return fail('missing x-signature header');

    if (apiKey.startsWith(otherPrefix)) {
      return fail(
        `api key environment mismatch: this is the ${deps.environment} environment and takes ${ownPrefix} keys only`,
      );
    }
    if (!apiKey.startsWith(ownPrefix)) return fail('invalid api key');

    const key = await deps.keys.lookup(apiKey);
    if (key === null || key.environment !== deps.environment) return fail('invalid api key');
    if (!key.active) return fail(NONCE_FAILURE.inactive);

    const envelope = buildEnvelope({
      method: req.method,
      target: req.target,
      apiKey,
      idempotencySlot: req.idempotencySlot ? (header(req.headers, 'idempotency-key') ?? '') : '',
      body: req.body,
      nonce,
    });
    if (!verifyEnvelope(envelope, signature, key.publicKey)) return fail('bad signature');

    const strict = STRICT_METHODS.has(req.method.toUpperCase());
    let deferredNonce: DeferredNonce | undefined;
    if (req.deferNonce === 'transaction') {
      // A nonce that could never be above a mark is a replay whatever the mark; nothing to defer.
      if (!NONCE_FORMAT.test(nonce)) return fail(NONCE_FAILURE.replay);
      deferredNonce = { keyId: key.keyId, nonce, strict, settled: false };
    } else if (req.deferNonce === 'overlap') {
      const started = deps.nonces.consume(key.keyId, nonce, strict);
      // Awaited before the answer leaves (onSend); never an unhandled rejection should the request end otherwise.
      started.catch(() => {});
      deferredNonce = { keyId: key.keyId, nonce, strict, settled: false, started };
    } else {
      const failure = nonceFailure(await deps.nonces.consume(key.keyId, nonce, strict));
      if (failure !== null) return fail(failure);
    }

    return {
      ok: true,
      context: {
        keyId: key.keyId,
        clientId: key.clientId,
        clientCurrency: key.clientCurrency,
        environment: key.environment,
        fingerprint: key.fingerprint,
        ...(deferredNonce && { deferredNonce }),
      },
    };
  };
}

export type Authenticator = ReturnType<typeof createAuthenticator>;
