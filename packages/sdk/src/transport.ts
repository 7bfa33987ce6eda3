import type { KeyObject } from 'node:crypto';
import { randomUUID } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import { buildEnvelope, carriesIdempotencyKey, signEnvelope } from './envelope.ts';
import { AuthenticationError, ConnectionError, DispersaError, errorFromResponse } from './errors.ts';
import type { KeyLane } from './lane.ts';
import type { NonceGenerator } from './nonce.ts';
import { type BackoffOptions, backoffMs, shouldRetry } from './retry.ts';

/** Per-call options, accepted by every client method. */
export interface RequestOptions {
  /** Only on POST /v2/payments and POST /v2/quotes; one is made up (randomUUID) when absent. */
  idempotencyKey?: string;
  timeoutMs?: number;
  maxRetries?: number;
  signal?: AbortSignal;
}

export type QueryValue = string | number | bigint | undefined;

export interface RequestSpec {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** Path below the base URL, ids already encoded, e.g. /v2/payments/abc. */
  path: string;
  /** Entries kept in the given order; undefined values are left out. */
  query?: ReadonlyArray<readonly [string, QueryValue]>;
  body?: unknown;
  /** Public routes (GET /v2/version) go out without key, nonce or signature. */
  unsigned?: boolean;
}

export interface TransportConfig {
  baseUrl: string;
  apiKey: string;
  signingKey: KeyObject;
  nonces: NonceGenerator;
  /** Orders the key's requests so that writes never race (lane.ts). */
  lane: KeyLane;
  fetch: typeof globalThis.fetch;
  maxRetries: number;
  timeoutMs: number;
  backoff: BackoffOptions;
  /** Response header carrying the server's trace id, read into errors. */
  traceHeader: string;
}

export type Transport = <T>(spec: RequestSpec, options?: RequestOptions) => Promise<T>;

/** Builds the query string once; what is returned is both signed and sent. No '?' when there is nothing. */
export function buildQuery(query: RequestSpec['query']): string {
  const params = new URLSearchParams();
  for (const [name, value] of query ?? []) if (value !== undefined) params.append(name, String(value));
  const text = params.toString();
  return text === '' ? '' : `?${text}`;
}

/** encodeURIComponent, refusing ids that would change the path once a URL parser normalises it. */
export function pathId(id: string): string {
  if (typeof id !== 'string' || id === '' || id === '.' || id === '..') {
    throw new TypeError(`not a usable id: ${JSON.stringify(id)}`);
  }
  return encodeURIComponent(id);
}

function parseBody(text: string): unknown {
  if (text === '') return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

export function createTransport(config: TransportConfig): Transport {
  const base = new URL(config.baseUrl);
  if (base.search || base.hash) throw new TypeError('baseUrl must not carry a query or fragment');
  const prefix = base.pathname.replace(/\/+$/, '');

  return async function request<T>(spec: RequestSpec, options: RequestOptions = {}): Promise<T> {
    const target = `${prefix}${spec.path}${buildQuery(spec.query)}`;
    const url = new URL(target, base.origin);
    if (`${url.pathname}${url.search}` !== target) {
      // fetch would send something other than what we sign; refuse rather than earn a 401.
      throw new TypeError(`request-target ${target} is not in normalised form`);
    }
    const keyed = !spec.unsigned && carriesIdempotencyKey(spec.method, target);
    if (options.idempotencyKey !== undefined && !keyed) {
      throw new TypeError(`${spec.method} ${spec.path} takes no idempotency key`);
    }
    // One key per logical operation, fixed before the first attempt and reused by every retry.
    const idempotencyKey = keyed ? (options.idempotencyKey ?? randomUUID()) : undefined;
    // Serialised once: these exact bytes are signed on every attempt and sent on every attempt.
    const body = spec.body === undefined ? undefined : Buffer.from(JSON.stringify(spec.body), 'utf8');
    const maxRetries = options.maxRetries ?? config.maxRetries;
    const timeoutMs = options.timeoutMs ?? config.timeoutMs;

    const kind = spec.method === 'GET' ? 'read' : 'write';

    /** One request on the wire with a nonce from `nextNonce`: its result, or the failure to judge for a retry. */
    async function exchange(nextNonce: () => Promise<string>): Promise<Exchange<T>> {
      const headers: Record<string, string> = { accept: 'application/json' };
      if (body !== undefined) headers['content-type'] = 'application/json';
      if (!spec.unsigned) {
        const nonce = await nextNonce();
        const envelope = buildEnvelope({
          method: spec.method,
          target,
          apiKey: config.apiKey,
          idempotencyKey,
          body,
          nonce,
        });
        headers['x-api-key'] = config.apiKey;
        headers['x-nonce'] = nonce;
        headers['x-signature'] = signEnvelope(envelope, config.signingKey);
        if (idempotencyKey !== undefined) headers['idempotency-key'] = idempotencyKey;
      }
      const timeout = AbortSignal.timeout(timeoutMs);
      const signal = options.signal ? AbortSignal.any([options.signal, timeout]) : timeout;
      let status: number | undefined;
      try {
        const response = await config.fetch(url, { method: spec.method, headers, body, signal });
        const parsed = parseBody(await response.text());
        status = response.status;
        if (response.ok) return { ok: true, value: unwrap<T>(parsed, response.status) };
        const traceId = response.headers.get(config.traceHeader) ?? undefined;
        return { ok: false, status, failure: errorFromResponse(response.status, parsed, traceId) };
      } catch (err) {
        if (options.signal?.aborted) throw err;
        if (status !== undefined) throw err;
        const why = timeout.aborted ? `no answer within ${timeoutMs} ms` : describeFailure(err);
        return { ok: false, failure: new ConnectionError(`${spec.method} ${target}: ${why}`, { cause: err }) };
      }
    }

    async function attemptOnce(): Promise<Exchange<T>> {
      if (spec.unsigned) return exchange(() => Promise.reject(new Error('unsigned')));
      const ticket = await config.lane.acquire(kind);
      try {
        options.signal?.throwIfAborted();
        if (kind === 'write' && config.nonces.exclusive) return await config.nonces.exclusive((next) => exchange(next));
        return await exchange(() => config.nonces.next());
      } finally {
        ticket.release();
      }
    }

    let resigned = false;
    for (let attempt = 1; ; attempt++) {
      const result = await attemptOnce();
      if (result.ok) return result.value;
      const { failure, status } = result;
      if (!resigned && !spec.unsigned && isNonceReplay(failure)) {
        // Overtaken by a request signed elsewhere with the same key (another client, process or machine). A 401
        // created nothing, and the spec asks for a new, higher nonce: re-sign once at once, not counted as a retry.
        resigned = true;
        attempt--;
        continue;
      }
      const outcome = status === undefined ? { connectionError: true } : { status };
      if (!shouldRetry(outcome, attempt, maxRetries)) throw failure;
      await delay(backoffMs(attempt, config.backoff), undefined, options.signal ? { signal: options.signal } : {});
    }
  };
}

type Exchange<T> = { ok: true; value: T } | { ok: false; status?: number; failure: DispersaError };

/** The server's 401 for a nonce at or below the mark (or out of the read window, or repeated). */
export function isNonceReplay(failure: DispersaError): boolean {
  if (!(failure instanceof AuthenticationError)) return false;
  const body = failure.body as { error?: unknown } | undefined;
  return typeof body === 'object' && body !== null && body.error === 'nonce replay';
}

/** fetch says only "fetch failed"; the cause's code (ECONNREFUSED, ENOTFOUND, ...) is what a person needs. */
export function describeFailure(err: unknown): string {
  const message = String((err as Error)?.message ?? err);
  const cause = (err as { cause?: { code?: unknown; message?: unknown } })?.cause;
  const code = typeof cause?.code === 'string' ? cause.code : undefined;
  if (code !== undefined) return `${message} (${code})`;
  return typeof cause?.message === 'string' && cause.message !== '' ? `${message} (${cause.message})` : message;
}

function unwrap<T>(parsed: unknown, status: number): T {
  if (typeof parsed === 'object' && parsed !== null && 'payload' in parsed) {
    return (parsed as { payload: T }).payload;
  }
  // Only the JWKS route answers without the {status, traceId, payload} envelope.
  if (typeof parsed === 'object' && parsed !== null) return parsed as T;
  throw new DispersaError(`HTTP ${status} answer is not a JSON object`, { status, body: parsed });
}
