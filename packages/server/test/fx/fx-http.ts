import { expect } from 'vitest';
import type { ManualClock } from '../../src/shared/clock.ts';
import { testKeyPair } from '../support/keys.ts';
import { type Answer, createSignedClient, NonceCounter, type SignedClient } from '../support/signed-client.ts';
import { startTestServer, TEST_MASTER_KEY, type TestServer } from '../support/test-server.ts';

/**
 * A production deployment: no sandbox publisher, so the only rates are the ones a test publishes, and a
 * missing rate really is missing. The embedded database needs its explicit production opt-in.
 */
export function startProductionServer(clock: ManualClock, env: Record<string, string> = {}): Promise<TestServer> {
  return startTestServer({
    clock,
    env: {
      DISPERSA_ENV: 'production',
      DISPERSA_ALLOW_EMBEDDED_IN_PRODUCTION: 'true',
      DISPERSA_MASTER_KEY: TEST_MASTER_KEY,
      ...env,
    },
  });
}

export const MIN = 60_000;

export function later(clock: ManualClock, ms: number): string {
  return new Date(clock.now().getTime() + ms).toISOString();
}

export interface RateBody {
  base?: string;
  rate?: string;
  expiresAt?: string;
  validFrom?: string;
  clientId?: string;
}

/** Publishes through the operator API and returns the Rate object. */
export async function publishRate(
  server: TestServer,
  clock: ManualClock,
  body: RateBody = {},
): Promise<Record<string, string>> {
  const res = await server.admin('POST', '/admin/v1/rates', {
    base: 'USD',
    rate: '36.5',
    expiresAt: later(clock, 60 * MIN),
    ...body,
  });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.payload;
}

/**
 * More keys of one client, each with its own nonce counter: POST nonces must rise per key, so requests that
 * truly race must come from different keys (one request each).
 */
export async function extraKeys(server: TestServer, clientId: string, n: number): Promise<SignedClient[]> {
  const pair = testKeyPair(0);
  const out: SignedClient[] = [];
  for (let i = 0; i < n; i++) {
    const k = await server.admin('POST', `/admin/v1/clients/${clientId}/keys`, { publicKeyPem: pair.publicPem });
    expect(k.status).toBe(201);
    out.push(createSignedClient(server.baseUrl, k.body.payload.apiKey, pair.privateKey, new NonceCounter()));
  }
  return out;
}

export function quote(api: SignedClient, key: string | undefined, body: unknown): Promise<Answer> {
  return api.post('/v2/quotes', body, key === undefined ? {} : { idempotencyKey: key });
}

export function expectError(res: Answer, status: number, error: string | RegExp): void {
  expect(res.status, JSON.stringify(res.body)).toBe(status);
  if (typeof error === 'string') expect(res.body).toEqual({ error });
  else {
    expect(Object.keys(res.body)).toEqual(['error']);
    expect(res.body.error).toMatch(error);
  }
}

/** Live, unused quotes of a client, straight from the table (the API has no quote listing). */
export async function liveQuotes(server: TestServer, clientId: string, clock: ManualClock): Promise<number> {
  const { rows } = await server.testDb.db.query<{ n: string }>(
    `SELECT count(*) AS n FROM quotes WHERE client_id = $1 AND used_by_payment_id IS NULL AND expires_at > $2`,
    [clientId, clock.now()],
  );
  return Number(rows[0]!.n);
}
