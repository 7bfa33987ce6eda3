import type { BankGatewayConfig } from '../../config.ts';
import { authHeaders } from './signature.ts';

/** The transport the connector uses; the global fetch unless a test or an operator injects another. */
export type FetchLike = (url: string, init: RequestInit) => Promise<Response>;

/**
 * What one signed exchange with the gateway produced. `transport` means no complete answer came back;
 * `sent` says whether the request may have reached the gateway (only a refused or unresolvable
 * connection proves it did not).
 */
export type Exchange =
  | { kind: 'answer'; status: number; json: unknown; text: string }
  | { kind: 'transport'; sent: boolean; detail: string };

export interface GatewayClient {
  send(method: 'GET' | 'POST', target: string, body: unknown): Promise<Exchange>;
}

/** Error codes of a connection that was never made: nothing left this process. */
const NOT_CONNECTED = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH']);

/** Stands for a body that is not JSON, so that a JSON `null` stays distinguishable. */
const NOT_JSON = Symbol('not json');

function causeCode(error: unknown): string | null {
  let current: unknown = error;
  // Bounded walk down the cause chain (fetch wraps the socket error once or twice).
  for (let depth = 0; depth < 4 && typeof current === 'object' && current !== null; depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string') return code;
    current = (current as { cause?: unknown }).cause;
  }
  return null;
}

function describe(error: unknown, timeoutMs: number): { sent: boolean; detail: string } {
  const name = typeof error === 'object' && error !== null ? (error as { name?: unknown }).name : undefined;
  if (name === 'TimeoutError' || name === 'AbortError') {
    return { sent: true, detail: `no complete answer within ${timeoutMs} ms` };
  }
  const code = causeCode(error);
  if (code !== null && NOT_CONNECTED.has(code)) return { sent: false, detail: `connection not made (${code})` };
  return {
    sent: true,
    detail: `connection failed (${code ?? (error instanceof Error ? error.message : 'unknown')})`,
  };
}

/** A signed request bounded by config.timeoutMs, from sending the first byte to reading the last. */
export function createGatewayClient(config: BankGatewayConfig, fetchImpl: FetchLike): GatewayClient {
  return {
    async send(method, target, body) {
      const payload = body === undefined ? '' : JSON.stringify(body);
      const headers: Record<string, string> = {
        accept: 'application/json',
        ...authHeaders({
          keyId: config.keyId,
          secret: config.secret,
          method,
          target,
          body: payload,
          nowMs: Date.now(),
        }),
      };
      if (method === 'POST') headers['content-type'] = 'application/json';
      const signal = AbortSignal.timeout(config.timeoutMs);
      try {
        const response = await fetchImpl(`${config.url}${target}`, {
          method,
          headers,
          body: method === 'POST' ? payload : undefined,
          signal,
          redirect: 'error',
        });
        const text = await response.text();
        let json: unknown = NOT_JSON;
        try {
          json = JSON.parse(text);
        } catch {
          // Left as NOT_JSON: the caller decides what an unreadable answer means.
        }
        return { kind: 'answer', status: response.status, json, text };
      } catch (error) {
        return { kind: 'transport', ...describe(error, config.timeoutMs) };
      }
    },
  };
}
