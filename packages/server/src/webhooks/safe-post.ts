import type { LookupAddress, LookupOptions } from 'node:dns';
import { performance } from 'node:perf_hooks';
import { Agent, request } from 'undici';
import { checkResolved, parseTarget, type Resolver, systemResolver } from './safe-target.ts';

/**
 * Posts one signed event to a receiver. The address check runs inside the connector's DNS lookup, on the
 * very addresses the socket will dial, so a name that resolved to a public address when registered and to
 * 127.0.0.1 now (DNS rebinding) is refused before any socket opens. IP literals skip lookup in net.connect;
 * parseTarget judges those. No redirect is followed (a 3xx is a failed attempt), the response body is read
 * up to a bound, and the whole attempt is bounded in time. Never throws.
 */

export interface OutgoingEvent {
  url: string;
  /** The exact bytes that were signed. */
  body: string | Buffer;
  eventId: string;
  attempt: number;
  /** Detached JWS (jws.ts signDetached). */
  signature: string;
}

export type PostErrorKind = 'invalid_target' | 'forbidden_address' | 'timeout' | 'network' | 'response_too_large';

export interface PostResult {
  /** true when the receiver answered 2xx: that alone acknowledges the event. */
  ok: boolean;
  /** Absent when no HTTP answer arrived. */
  statusCode?: number;
  error?: string;
  errorKind?: PostErrorKind;
  durationMs: number;
  /** The response body as text, when it was read whole within the bound. */
  body?: string;
}

export type PostFn = (event: OutgoingEvent) => Promise<PostResult>;

export interface SafePoster {
  post: PostFn;
  close(): Promise<void>;
}

export interface SafePostOptions {
  /** DISPERSA_WEBHOOK_ALLOW_INSECURE: http:// and any address allowed. */
  allowInsecure: boolean;
  /** Whole attempt: connect, send, answer and body. Default 10 s (operator contract section 7). */
  timeoutMs?: number;
  /** Bound on the response body read; beyond it the response is aborted. Default 64 KiB. */
  maxResponseBytes?: number;
  resolve?: Resolver;
  userAgent?: string;
}

class ForbiddenAddressError extends Error {
  readonly code = 'EDISPERSA_FORBIDDEN_ADDRESS';
  constructor(detail: string) {
    super(detail);
    this.name = 'ForbiddenAddressError';
  }
}

class ResponseTooLargeError extends Error {
  constructor(limit: number) {
    super(`response body exceeds ${limit} bytes`);
    this.name = 'ResponseTooLargeError';
  }
}

export type LookupCallback = (
  err: NodeJS.ErrnoException | null,
  address: string | LookupAddress[],
  family?: number,
) => void;

/**
 * The DNS lookup undici's connector calls before it dials: the address check runs here, on the very
 * addresses the socket will use. Exported so tests can show every forbidden form is refused at this
 * point without opening a socket.
 */
export function guardedLookup(resolve: Resolver, allowInsecure: boolean) {
  return (hostname: string, options: LookupOptions, callback: LookupCallback): void => {
    resolve(hostname).then(
      (resolved) => {
        if (!allowInsecure) {
          // Every address, not just the first: net may fall back to any of them (happy eyeballs).
          const check = checkResolved(resolved);
          if (!check.ok) return callback(new ForbiddenAddressError(check.detail), '');
        }
        const family = options.family === 'IPv4' ? 4 : options.family === 'IPv6' ? 6 : options.family;
        const usable = family === 4 || family === 6 ? resolved.filter((a) => a.family === family) : resolved;
        const first = usable[0];
        if (first === undefined) {
          const err: NodeJS.ErrnoException = new Error(`${hostname} has no usable address`);
          err.code = 'ENOTFOUND';
          return callback(err, '');
        }
        if (options.all)
          return callback(
            null,
            usable.map((a) => ({ address: a.address, family: a.family })),
          );
        return callback(null, first.address, first.family);
      },
      (err: NodeJS.ErrnoException) => callback(err, ''),
    );
  };
}

function findCause<T>(err: unknown, match: (e: unknown) => e is T): T | undefined {
  for (let e = err, depth = 0; e !== undefined && e !== null && depth < 5; depth++) {
    if (match(e)) return e;
    e = (e as { cause?: unknown }).cause;
  }
  return undefined;
}

function describe(err: unknown): string {
  const e = err as { code?: unknown; message?: unknown };
  const cause = (err as { cause?: { code?: unknown; message?: unknown } }).cause;
  const code = e.code ?? cause?.code;
  const message = String(cause?.message ?? e.message ?? err);
  return typeof code === 'string' ? `${code}: ${message}` : message;
}

export function createSafePost(options: SafePostOptions): SafePoster {
  const timeoutMs = options.timeoutMs ?? 10_000;
  const maxResponseBytes = options.maxResponseBytes ?? 64 * 1024;
  const userAgent = options.userAgent ?? 'dispersa-webhooks';
  const agent = new Agent({
    connect: {
      lookup: guardedLookup(options.resolve ?? systemResolver, options.allowInsecure),
      timeout: timeoutMs,
    },
    headersTimeout: timeoutMs,
    bodyTimeout: timeoutMs,
  });

  async function post(event: OutgoingEvent): Promise<PostResult> {
    const started = performance.now();
    const elapsed = () => Math.round(performance.now() - started);
    const target = parseTarget(event.url, { allowInsecure: options.allowInsecure });
    if (!target.ok) {
      const errorKind = target.reason === 'forbidden_address' ? 'forbidden_address' : 'invalid_target';
      return { ok: false, error: target.detail, errorKind, durationMs: 0 };
    }
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), timeoutMs);
    let statusCode: number | undefined;
    try {
      const res = await request(target.url, {
        method: 'POST',
        dispatcher: agent,
        signal: controller.signal,
        headers: {
          'content-type': 'application/json',
          'user-agent': userAgent,
          'x-dispersa-signature': event.signature,
          'x-dispersa-event-id': event.eventId,
          'x-dispersa-delivery-attempt': String(event.attempt),
        },
        body: event.body,
      });
      statusCode = res.statusCode;
      const chunks: Buffer[] = [];
      let size = 0;
      for await (const chunk of res.body) {
        size += (chunk as Buffer).length;
        if (size > maxResponseBytes) {
          res.body.destroy();
          throw new ResponseTooLargeError(maxResponseBytes);
        }
        chunks.push(chunk as Buffer);
      }
      const ok = statusCode >= 200 && statusCode < 300;
      return { ok, statusCode, durationMs: elapsed(), body: Buffer.concat(chunks).toString('utf8') };
    } catch (err) {
      const result: PostResult = {
        ok: statusCode !== undefined && statusCode >= 200 && statusCode < 300,
        durationMs: elapsed(),
      };
      if (statusCode !== undefined) result.statusCode = statusCode;
      if (err instanceof ResponseTooLargeError) {
        return { ...result, error: err.message, errorKind: 'response_too_large' };
      }
      const forbiddenErr = findCause(err, (e): e is ForbiddenAddressError => e instanceof ForbiddenAddressError);
      if (forbiddenErr !== undefined) {
        return { ...result, error: forbiddenErr.message, errorKind: 'forbidden_address' };
      }
      const timedOut =
        controller.signal.aborted ||
        findCause(err, (e): e is Error => {
          const code = (e as { code?: unknown }).code;
          return (
            code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT' || code === 'UND_ERR_CONNECT_TIMEOUT'
          );
        }) !== undefined;
      if (timedOut) return { ...result, error: `no complete answer within ${timeoutMs} ms`, errorKind: 'timeout' };
      return { ...result, error: describe(err), errorKind: 'network' };
    } finally {
      clearTimeout(timer);
    }
  }

  return {
    post,
    async close() {
      await agent.destroy();
    },
  };
}
