import { constants, createPrivateKey, generateKeyPair, type KeyObject, sign } from 'node:crypto';
import { promisify } from 'node:util';
import { buildEnvelope } from '../src/auth/envelope.ts';

/**
 * Client-side signing for the bench and the crash test: the spec's envelope (method, target, api key,
 * idempotency slot, raw body, nonce, joined by NUL), RSA-SHA256 PKCS#1 v1.5, base64.
 */

export interface BenchKeyPair {
  publicPem: string;
  privatePem: string;
}

const generate = promisify(generateKeyPair);

/** RSA-2048 pairs, generated in parallel on libuv's thread pool. */
export async function generateKeyPairs(count: number): Promise<BenchKeyPair[]> {
  return Promise.all(
    Array.from({ length: count }, async () => {
      const { publicKey, privateKey } = await generate('rsa', { modulusLength: 2048, publicExponent: 65537 });
      return {
        publicPem: publicKey.export({ type: 'spki', format: 'pem' }).toString(),
        privatePem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
      };
    }),
  );
}

export interface SignInput {
  method: string;
  target: string;
  apiKey: string;
  /** The idempotency-key header of POST /v2/payments and /v2/quotes; absent elsewhere (empty slot). */
  idempotencyKey?: string;
  /** Raw body text: serialised once, signed and sent as is. */
  body: string;
  nonce: string;
}

export function signatureOf(input: SignInput, key: KeyObject): string {
  const envelope = buildEnvelope({
    method: input.method,
    target: input.target,
    apiKey: input.apiKey,
    idempotencySlot: input.idempotencyKey ?? '',
    body: Buffer.from(input.body, 'utf8'),
    nonce: input.nonce,
  });
  return sign('sha256', envelope, { key, padding: constants.RSA_PKCS1_PADDING }).toString('base64');
}

/** The headers of one signed request. */
export function signedHeaders(input: SignInput, key: KeyObject): Record<string, string> {
  const headers: Record<string, string> = {
    'x-api-key': input.apiKey,
    'x-nonce': input.nonce,
    'x-signature': signatureOf(input, key),
  };
  if (input.idempotencyKey !== undefined) headers['idempotency-key'] = input.idempotencyKey;
  if (input.body !== '') headers['content-type'] = 'application/json';
  return headers;
}

export const privateKeyOf = (pem: string): KeyObject => createPrivateKey(pem);

/**
 * Per-key nonces: strictly increasing, starting from the wall clock (milliseconds × 10^6), so a later process
 * (or a restarted run) starts above anything an earlier one used, unless it issued a million nonces a millisecond.
 */
export function nonceCounter(): { take(): string } {
  let next = BigInt(Date.now()) * 1_000_000n;
  return {
    take() {
      next += 1n;
      return next.toString();
    },
  };
}

export interface Answer {
  status: number;
  /** Parsed JSON, or the raw text when the body is not JSON. */
  body: unknown;
}

/** The payload of a success envelope, typed by the caller; throws with the answer when the status differs. */
export function payloadOf<T>(answer: Answer, status: number, what: string): T {
  if (answer.status !== status) throw new Error(`${what}: HTTP ${answer.status} ${JSON.stringify(answer.body)}`);
  return (answer.body as { payload: T }).payload;
}

async function answerOf(res: Response): Promise<Answer> {
  const text = await res.text();
  let body: unknown = text;
  try {
    body = text === '' ? null : JSON.parse(text);
  } catch {}
  return { status: res.status, body };
}

/** A signed call over fetch: every call takes the next nonce of this key. */
export function createSignedCaller(baseUrl: string, apiKey: string, privatePem: string) {
  const key = privateKeyOf(privatePem);
  const nonces = nonceCounter();
  return async function call(
    method: string,
    target: string,
    options: { body?: unknown; idempotencyKey?: string; timeoutMs?: number } = {},
  ): Promise<Answer> {
    const body = options.body === undefined ? '' : JSON.stringify(options.body);
    const headers = signedHeaders(
      { method, target, apiKey, idempotencyKey: options.idempotencyKey, body, nonce: nonces.take() },
      key,
    );
    const res = await fetch(baseUrl + target, {
      method,
      headers,
      body: body === '' ? undefined : body,
      signal: AbortSignal.timeout(options.timeoutMs ?? 30_000),
    });
    return answerOf(res);
  };
}

export type SignedCaller = ReturnType<typeof createSignedCaller>;

/** The operator API with its bearer token. */
export function createAdminCaller(adminUrl: string, token: string) {
  return async function admin(method: string, target: string, body?: unknown): Promise<Answer> {
    const headers: Record<string, string> = { authorization: `Bearer ${token}` };
    if (body !== undefined) headers['content-type'] = 'application/json';
    const res = await fetch(adminUrl + target, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(30_000),
    });
    return answerOf(res);
  };
}

export type AdminCaller = ReturnType<typeof createAdminCaller>;
