import type { BankGatewayConfig } from '../../src/config.ts';
import { authHeaders } from '../../src/rails/gateway/signature.ts';
import type { RailTransfer } from '../../src/rails/rail.ts';

/** Shared set-up of the tests that talk to the bank simulator over real HTTP on 127.0.0.1. */

export const KEY_ID = 'gw_test_key';
export const SECRET = 'test-secret-of-at-least-thirty-two-characters';

/** Time-out tests pass 200 ms; the rest leave room for a loaded CI machine. */
export function gatewayConfig(url: string, timeoutMs = 2000): BankGatewayConfig {
  return { url, keyId: KEY_ID, secret: SECRET, timeoutMs };
}

let counter = 0;

/** A fresh reference per call, shaped like the service's. */
export function reference(): string {
  counter += 1;
  return `rr_test${Date.now().toString(36)}${counter}`;
}

export function pmTransfer(overrides: Partial<RailTransfer> = {}): RailTransfer {
  return {
    railReference: reference(),
    paymentId: 'pay_never_sent_to_bank',
    rail: 'PM',
    amountMinor: 150_000n,
    currency: 'VES',
    destination: {
      account: '04141234567',
      bankCode: '0105',
      docType: 'V',
      docNumber: '12345678',
      name: null,
    },
    ...overrides,
  };
}

export function cceTransfer(bankCode: string, overrides: Partial<RailTransfer> = {}): RailTransfer {
  return pmTransfer({
    rail: 'CCE',
    destination: {
      account: `${bankCode}0123450000012345`.slice(0, 20),
      bankCode,
      docType: 'V',
      docNumber: '12345678',
      name: 'MARIA PEREZ',
    },
    ...overrides,
  });
}

/** A signed request as an adapter's client would send it; `sign` lets a test break the signature. */
export async function signedRequest(
  baseUrl: string,
  method: 'GET' | 'POST' | 'DELETE',
  target: string,
  body?: unknown,
  options: {
    keyId?: string;
    secret?: string;
    nowMs?: number;
    tamper?: (h: Record<string, string>) => void;
  } = {},
): Promise<{ status: number; json: unknown }> {
  const payload = body === undefined ? '' : JSON.stringify(body);
  const headers = authHeaders({
    keyId: options.keyId ?? KEY_ID,
    secret: options.secret ?? SECRET,
    method,
    target,
    body: payload,
    nowMs: options.nowMs ?? Date.now(),
  });
  options.tamper?.(headers);
  const response = await fetch(`${baseUrl}${target}`, {
    method,
    headers: { ...headers, 'content-type': 'application/json' },
    body: method === 'GET' ? undefined : payload,
    signal: AbortSignal.timeout(5000),
  });
  const text = await response.text();
  let json: unknown = null;
  try {
    json = JSON.parse(text);
  } catch {
    json = text;
  }
  return { status: response.status, json };
}

/** Polls until the check holds, at most `limitMs`; the loop is bounded by count as well as time. */
export async function eventually(check: () => boolean, limitMs = 15_000): Promise<void> {
  // A bound against a hang, not a speed requirement: a loaded machine may take a while to run the other side.
  const deadline = Date.now() + limitMs;
  for (let i = 0; i < 3000 && Date.now() < deadline; i++) {
    if (check()) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  if (!check()) throw new Error(`condition not met within ${limitMs} ms`);
}
