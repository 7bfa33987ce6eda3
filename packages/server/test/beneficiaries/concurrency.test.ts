import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SignedClient } from '../support/signed-client.ts';
import { startTestServer, type TestClient, type TestServer } from '../support/test-server.ts';
import { archive, cceBody, extraKey, pmBody } from './helpers.ts';

/**
 * Each parallel request goes out on its own API key of the same client: one key's POSTs need strictly
 * increasing nonces, so parallel POSTs on one key would race each other at the nonce check, not at the index.
 */
const PARALLEL = 12;

let server: TestServer;
let client: TestClient;
let keys: SignedClient[];

beforeAll(async () => {
  server = await startTestServer();
  client = await server.newClient();
  keys = [];
  for (let i = 0; i < PARALLEL; i++) keys.push(await extraKey(server, client.clientId, i));
});
afterAll(async () => {
  await server.stop();
});

async function createAllAtOnce(body: Record<string, unknown>) {
  const answers = await Promise.all(
    keys.map((api, i) => api.post('/v2/beneficiaries', { ...body, alias: `racer ${i}` })),
  );
  return {
    created: answers.filter((a) => a.status === 201),
    conflicts: answers.filter((a) => a.status === 409),
    statuses: answers.map((a) => a.status),
  };
}

describe('concurrent creation of one destination', () => {
  it.each([
    ['PM', pmBody],
    ['CCE', cceBody],
  ])('%s: exactly one 201, every other answer 409, one ACTIVE row', async (_rail, make) => {
    const body = make();
    const { created, conflicts, statuses } = await createAllAtOnce(body);
    expect(created, JSON.stringify(statuses)).toHaveLength(1);
    expect(conflicts).toHaveLength(PARALLEL - 1);
    for (const c of conflicts) expect(Object.keys(c.body)).toEqual(['error']);

    const list = await client.api.get('/v2/beneficiaries?limit=100');
    const same = list.body.payload.data.filter(
      (b: { rail: string; account: string }) => b.rail === body.rail && b.account === body.account,
    );
    expect(same).toHaveLength(1);
    expect(same[0].id).toBe(created[0]!.body.payload.id);
  });

  it('after an archive the race starts again with exactly one winner', async () => {
    const body = cceBody();
    const first = await createAllAtOnce(body);
    expect(first.created).toHaveLength(1);
    expect((await archive(client.api, first.created[0]!.body.payload.id)).status).toBe(200);

    const second = await createAllAtOnce(body);
    expect(second.created).toHaveLength(1);
    expect(second.conflicts).toHaveLength(PARALLEL - 1);
    expect(second.created[0]!.body.payload.id > first.created[0]!.body.payload.id).toBe(true);
  });

  it('different destinations created at once all succeed with distinct ids', async () => {
    const answers = await Promise.all(keys.map((api) => api.post('/v2/beneficiaries', pmBody())));
    expect(answers.map((a) => a.status)).toEqual(keys.map(() => 201));
    const ids = answers.map((a) => a.body.payload.id as string);
    expect(new Set(ids).size).toBe(PARALLEL);
  });
});
