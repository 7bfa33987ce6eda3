import { testKeyPair } from '../support/keys.ts';
import { createSignedClient, NonceCounter, type SignedClient } from '../support/signed-client.ts';
import type { TestServer } from '../support/test-server.ts';

let counter = 0;

/** A fresh 7-digit suffix per call, so that destinations never collide by accident across tests. */
function nextSuffix(): string {
  counter += 1;
  return String(counter).padStart(7, '0');
}

export function pmBody(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    rail: 'PM',
    account: `0414${nextSuffix()}`,
    bankCode: '0102',
    docType: 'V',
    docNumber: '12345678',
    alias: 'Pedro PM',
    ...overrides,
  };
}

export function cceBody(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    rail: 'CCE',
    account: `0105000000000${nextSuffix()}`,
    bankCode: '0105',
    docType: 'J',
    docNumber: '301234567',
    beneficiaryName: 'Comercial Maria CA',
    alias: 'Maria CCE',
    ...overrides,
  };
}

export const patch = (api: SignedClient, id: string, body: unknown) =>
  api.request('PATCH', `/v2/beneficiaries/${id}`, { body });
export const archive = (api: SignedClient, id: string) => api.request('DELETE', `/v2/beneficiaries/${id}`);

/** Another API key of the same client, with its own nonce mark, so requests can truly run in parallel. */
export async function extraKey(server: TestServer, clientId: string, index: number): Promise<SignedClient> {
  const pair = testKeyPair(index % 3);
  const k = await server.admin('POST', `/admin/v1/clients/${clientId}/keys`, { publicKeyPem: pair.publicPem });
  if (k.status !== 201) throw new Error(`key creation failed: ${JSON.stringify(k.body)}`);
  return createSignedClient(server.baseUrl, k.body.payload.apiKey, pair.privateKey, new NonceCounter());
}
