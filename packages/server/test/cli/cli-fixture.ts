import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { testKeyPair } from '../support/keys.ts';
import { ADMIN_TOKEN, type TestServer } from '../support/test-server.ts';
import type { CliEnv } from './cli-process.ts';

/** A client registered on the test service, and the environment under which the CLI acts as that client. */
export interface CliClient {
  clientId: string;
  keyId: string;
  apiKey: string;
  privateKeyFile: string;
  env: CliEnv;
}

let files = 0;

export async function cliClient(
  server: TestServer,
  home: string,
  options: Parameters<TestServer['newClient']>[0] & { keyIndex?: number } = {},
): Promise<CliClient> {
  const keyIndex = options.keyIndex ?? 0;
  const created = await server.newClient({ ...options, keyIndex });
  const privateKeyFile = path.join(home, `client-${files++}-private.pem`);
  await writeFile(privateKeyFile, testKeyPair(keyIndex).privatePem, { mode: 0o600 });
  return {
    clientId: created.clientId,
    keyId: created.keyId,
    apiKey: created.apiKey,
    privateKeyFile,
    env: {
      HOME: home,
      DISPERSA_BASE_URL: server.baseUrl,
      DISPERSA_API_KEY: created.apiKey,
      DISPERSA_PRIVATE_KEY_FILE: privateKeyFile,
    },
  };
}

export function adminEnv(server: TestServer, home: string): CliEnv {
  return { HOME: home, DISPERSA_ADMIN_URL: server.adminUrl, DISPERSA_ADMIN_TOKEN: ADMIN_TOKEN };
}

/** The destination of the contract's own example: a PM phone with bank and document. */
export const PM_DESTINATION = [
  '--rail',
  'PM',
  '--beneficiary',
  '04141234567',
  '--bank-code',
  '0102',
  '--doc-type',
  'V',
  '--doc-number',
  '12345678',
] as const;
