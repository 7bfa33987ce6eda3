import type { KeyObject } from 'node:crypto';
import { createDispersaClient, createFileNonceGenerator, type DispersaClient, toSigningKey } from '@dispersa/sdk';
import { UsageError } from './args.ts';
import type { CommandContext } from './command.ts';
import { resolveClientCredentials } from './connection.ts';

/**
 * The SDK client behind every client command. Its nonces come from a state file per API key, so consecutive CLI
 * runs (and several at once) keep climbing even within one millisecond: a fresh in-memory generator per process
 * could repeat the previous run's nonce and be refused as a replay.
 */
export async function openClient(ctx: CommandContext): Promise<DispersaClient> {
  const credentials = await resolveClientCredentials(ctx);
  let privateKey: KeyObject;
  try {
    privateKey = toSigningKey(credentials.privateKeyPem);
  } catch (err) {
    throw new UsageError(`the private key file does not hold a usable RSA private key: ${(err as Error).message}`);
  }
  return createDispersaClient({
    baseUrl: credentials.baseUrl,
    apiKey: credentials.apiKey,
    privateKey,
    nonceGenerator: createFileNonceGenerator({ statePath: credentials.nonceFile }),
  });
}
