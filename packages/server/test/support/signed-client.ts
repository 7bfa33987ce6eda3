import { constants, type KeyObject, sign } from 'node:crypto';
import { buildEnvelope } from '../../src/auth/envelope.ts';

/**
 * A deliberately low-level client for tests: every piece of the envelope can be set or broken by hand.
 * (The SDK is the integrator's client; server tests must not depend on it to judge the server.)
 */

export interface Answer {
  status: number;
  body: any;
  headers: Headers;
}

export interface SignedRequestOptions {
  body?: unknown;
  /** Raw body text sent as is (overrides body). */
  rawBody?: string;
  idempotencyKey?: string;
  /** Put a value in the idempotency slot of the envelope even where the route takes none. */
  signIdempotencySlot?: string;
  nonce?: string;
  /** A nonce to put in the envelope instead of x-nonce (mismatch tests). */
  signedNonce?: string;
  headers?: Record<string, string | undefined>;
  contentType?: string | null;
  omit?: ('x-api-key' | 'x-nonce' | 'x-signature')[];
  signature?: string;
  padding?: number;
}

export class NonceCounter {
  private next: bigint;
  constructor(start: bigint = BigInt(Date.now()) * 1000n) {
    this.next = start;
  }
  take(): string {
    this.next += 1n;
    return this.next.toString();
  }
  peek(): bigint {
    return this.next;
  }
}

export function signEnvelope(envelope: Buffer, key: KeyObject, padding = constants.RSA_PKCS1_PADDING): string {
  return sign('sha256', envelope, { key, padding }).toString('base64');
}

export function createSignedClient(
  baseUrl: string,
  apiKey: string,
  privateKey: KeyObject,
  nonces = new NonceCounter(),
) {
  async function request(method: string, target: string, options: SignedRequestOptions = {}): Promise<Answer> {
    const body =
      options.rawBody !== undefined ? options.rawBody : options.body !== undefined ? JSON.stringify(options.body) : '';
    const nonce = options.nonce ?? nonces.take();
    const isIdempotent = method === 'POST' && (target.startsWith('/v2/payments') || target.startsWith('/v2/quotes'));
    const slot = options.signIdempotencySlot ?? (isIdempotent ? (options.idempotencyKey ?? '') : '');
    const envelope = buildEnvelope({
      method,
      target,
      apiKey,
      idempotencySlot: slot,
      body: Buffer.from(body, 'utf8'),
      nonce: options.signedNonce ?? nonce,
    });
    const headers: Record<string, string> = {
      'x-api-key': apiKey,
      'x-nonce': nonce,
      'x-signature': options.signature ?? signEnvelope(envelope, privateKey, options.padding),
    };
    for (const h of options.omit ?? []) delete headers[h];
    if (options.idempotencyKey !== undefined) headers['idempotency-key'] = options.idempotencyKey;
    if (body !== '' && options.contentType !== null)
      headers['content-type'] = options.contentType ?? 'application/json';
    for (const [k, v] of Object.entries(options.headers ?? {})) {
      if (v === undefined) delete headers[k];
      else headers[k] = v;
    }
    const res = await fetch(baseUrl + target, { method, headers, body: body === '' ? undefined : body });
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = text === '' ? null : JSON.parse(text);
    } catch {}
    return { status: res.status, body: parsed, headers: res.headers };
  }
  return {
    apiKey,
    nonces,
    request,
    get: (target: string, o?: SignedRequestOptions) => request('GET', target, o),
    post: (target: string, body: unknown, o?: SignedRequestOptions) => request('POST', target, { ...o, body }),
  };
}

export type SignedClient = ReturnType<typeof createSignedClient>;
