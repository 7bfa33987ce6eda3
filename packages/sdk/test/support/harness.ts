import { afterEach } from 'vitest';
import { createDispersaClient, type DispersaClientOptions } from '../../src/client.ts';
import { createMemoryNonceGenerator } from '../../src/nonce.ts';
import { type FakeServer, type Handler, startFakeServer } from './fake-server.ts';
import { rsaKeyPair } from './keys.ts';

export const API_KEY = 'sk_test_harness';
export const keys = rsaKeyPair();

const open: FakeServer[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((server) => server.close()));
});

/** A fake service on 127.0.0.1 and a client pointed at it, with tiny back-off so retries do not slow tests. */
export async function setup(handler: Handler, options: Partial<DispersaClientOptions> = {}) {
  const server = await startFakeServer({ apiKey: API_KEY, publicKey: keys.publicKey, handler });
  open.push(server);
  const client = createDispersaClient({
    baseUrl: server.url,
    apiKey: API_KEY,
    privateKey: keys.privatePem,
    nonceGenerator: createMemoryNonceGenerator(),
    backoff: { baseMs: 2, capMs: 10 },
    ...options,
  });
  return { server, client };
}
