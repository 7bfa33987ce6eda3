import { type AdminCaller, generateKeyPairs, payloadOf } from './signing.ts';

/**
 * Clients for load, set up through the operator API only (as an operator would): each client with its own
 * RSA keys, generous limits on every rail and a large funding.
 */

export interface BenchKey {
  clientId: string;
  keyId: string;
  apiKey: string;
  privatePem: string;
}

export interface SeedOptions {
  clients: number;
  keysPerClient: number;
  /** Funding of each client, minor units. */
  fundMinor: bigint;
  rails?: readonly string[];
  /** Label in client names and funding references (unique per run). */
  label: string;
}

// Large enough that no bench ever meets them; the API caps a limit at 18 digits.
const GENEROUS = { perPaymentMaxMinor: '100000000000', dailyMaxMinor: '900000000000000000' };

export async function seedClients(admin: AdminCaller, o: SeedOptions): Promise<BenchKey[]> {
  const pairs = await generateKeyPairs(o.clients * o.keysPerClient);
  const rails = o.rails ?? ['PM', 'CCE'];
  const keys: BenchKey[] = [];
  for (let c = 0; c < o.clients; c++) {
    const { clientId } = payloadOf<{ clientId: string }>(
      await admin('POST', '/admin/v1/clients', { name: `${o.label} client ${c}`, currency: 'VES' }),
      201,
      'create client',
    );
    payloadOf(
      await admin('POST', `/admin/v1/clients/${clientId}/fundings`, {
        amountMinor: o.fundMinor.toString(),
        reference: `${o.label}-fund-${clientId}`,
      }),
      201,
      'fund client',
    );
    for (let k = 0; k < o.keysPerClient; k++) {
      const pair = pairs[c * o.keysPerClient + k]!;
      const key = payloadOf<{ keyId: string; apiKey: string }>(
        await admin('POST', `/admin/v1/clients/${clientId}/keys`, { publicKeyPem: pair.publicPem }),
        201,
        'register key',
      );
      payloadOf(
        await admin('PUT', `/admin/v1/keys/${key.keyId}/limits`, {
          limits: rails.map((rail) => ({ rail, ...GENEROUS })),
        }),
        200,
        'set limits',
      );
      keys.push({ clientId, keyId: key.keyId, apiKey: key.apiKey, privatePem: pair.privatePem });
    }
  }
  return keys;
}

/** A PM payment that the sandbox completes at once: the amount ends in 00 (spec, Sandbox magic amounts). */
export function completedPaymentBody(i: number): Record<string, string> {
  return pmPaymentBody(String((1 + (i % 97)) * 100));
}

/** A PM payment of the amount to the sandbox's test phone (its last two digits choose the outcome). */
export function pmPaymentBody(amountMinor: string): Record<string, string> {
  return {
    amountMinor,
    currency: 'VES',
    rail: 'PM',
    beneficiary: '04141234567',
    bankCode: '0102',
    docType: 'V',
    docNumber: '12345678',
  };
}
