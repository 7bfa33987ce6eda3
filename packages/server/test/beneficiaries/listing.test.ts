import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SignedClient } from '../support/signed-client.ts';
import { startTestServer, type TestServer } from '../support/test-server.ts';
import { archive, cceBody, pmBody } from './helpers.ts';

let server: TestServer;

beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server.stop();
});

interface Listed {
  id: string;
  alias: string;
  status: string;
  bankCode: string | null;
  beneficiaryName: string | null;
}

async function createMany(api: SignedClient, n: number, prefix: string): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const body = i % 2 === 0 ? pmBody({ alias: `${prefix}-${i}` }) : cceBody({ alias: `${prefix}-${i}` });
    const res = await api.post('/v2/beneficiaries', body);
    if (res.status !== 201) throw new Error(`create failed: ${JSON.stringify(res.body)}`);
    ids.push(res.body.payload.id);
  }
  return ids;
}

async function page(api: SignedClient, query: string) {
  const res = await api.get(`/v2/beneficiaries${query}`);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  expect(res.body.status).toBe('success');
  expect(Object.keys(res.body.payload).sort()).toEqual(['data', 'hasMore', 'nextCursor']);
  return res.body.payload as { data: Listed[]; hasMore: boolean; nextCursor: string | null };
}

describe('GET /v2/beneficiaries', () => {
  it('an empty listing is the end: no data, hasMore false, nextCursor null', async () => {
    const { api } = await server.newClient();
    expect(await page(api, '')).toEqual({ data: [], hasMore: false, nextCursor: null });
  });

  it('walks newest first; items created mid-walk do not disturb it; an empty page ends it', async () => {
    const { api } = await server.newClient();
    const created = await createMany(api, 25, 'walk');
    const expected = [...created].reverse();

    const seen: string[] = [];
    const pages: { size: number; hasMore: boolean }[] = [];
    let cursor: string | null = null;
    for (let round = 0; round < 10; round++) {
      const p = await page(api, `?limit=10${cursor === null ? '' : `&cursor=${cursor}`}`);
      pages.push({ size: p.data.length, hasMore: p.hasMore });
      if (p.data.length === 0) {
        expect(p.nextCursor).toBeNull();
        expect(p.hasMore).toBe(false);
        break;
      }
      expect(p.nextCursor).toBe(p.data[p.data.length - 1]!.id);
      seen.push(...p.data.map((b) => b.id));
      cursor = p.nextCursor;
      // Created during the walk: larger ids than the cursor, so never part of the pages still to come.
      await createMany(api, 2, `mid-${round}`);
    }
    expect(seen).toEqual(expected);
    expect(pages).toEqual([
      { size: 10, hasMore: true },
      { size: 10, hasMore: true },
      { size: 5, hasMore: false },
      { size: 0, hasMore: false },
    ]);

    // A new walk sees everything, still strictly descending.
    const all = await page(api, '?limit=100');
    expect(all.data).toHaveLength(25 + 3 * 2);
    const ids = all.data.map((b) => b.id);
    expect(ids).toEqual([...ids].sort().reverse());
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('a page that ends exactly at the last item says hasMore false and still gives its nextCursor', async () => {
    const { api } = await server.newClient();
    const created = await createMany(api, 4, 'exact');
    const first = await page(api, '?limit=4');
    expect(first.data.map((b) => b.id)).toEqual([...created].reverse());
    expect(first).toMatchObject({ hasMore: false, nextCursor: created[0] });
    expect(await page(api, `?cursor=${created[0]}&limit=4`)).toEqual({ data: [], hasMore: false, nextCursor: null });
  });

  it('default page size is 20 and a larger limit is clamped to 100', async () => {
    const { api } = await server.newClient();
    const created = await createMany(api, 105, 'many');
    const byDefault = await page(api, '');
    expect(byDefault.data).toHaveLength(20);
    expect(byDefault.hasMore).toBe(true);
    const clamped = await page(api, '?limit=5000');
    expect(clamped.data).toHaveLength(100);
    expect(clamped.hasMore).toBe(true);
    const rest = await page(api, `?limit=100&cursor=${clamped.nextCursor}`);
    expect(rest.data.map((b) => b.id)).toEqual(created.slice(0, 5).reverse());
    expect(rest.hasMore).toBe(false);
  });

  it('archived beneficiaries stay in the listing with status INACTIVE', async () => {
    const { api } = await server.newClient();
    const [a, b] = await createMany(api, 2, 'arch');
    await archive(api, a!);
    const p = await page(api, '');
    expect(p.data.map((x) => [x.id, x.status])).toEqual([
      [b, 'ACTIVE'],
      [a, 'INACTIVE'],
    ]);
  });

  it('lists only the caller’s own beneficiaries', async () => {
    const one = await server.newClient();
    const two = await server.newClient();
    const mine = await createMany(one.api, 3, 'one');
    await createMany(two.api, 3, 'two');
    expect((await page(one.api, '')).data.map((b) => b.id)).toEqual([...mine].reverse());
  });

  it('rejects a malformed cursor or limit with 400', async () => {
    const { api } = await server.newClient();
    const cases: [string, string][] = [
      ['?limit=0', 'limit must be a positive integer'],
      ['?limit=000', 'limit must be a positive integer'],
      ['?limit=abc', 'limit must be a positive integer'],
      ['?limit=-1', 'limit must be a positive integer'],
      ['?limit=1.5', 'limit must be a positive integer'],
      ['?limit=', 'limit must be a positive integer'],
      ['?cursor=garbage', 'cursor is malformed: use the nextCursor of a previous page'],
      ['?cursor=ben_12', 'cursor is malformed: use the nextCursor of a previous page'],
      ['?cursor=pay_0000000000000001', 'cursor is malformed: use the nextCursor of a previous page'],
    ];
    for (const [query, message] of cases) {
      const res = await api.get(`/v2/beneficiaries${query}`);
      expect(res.status, query).toBe(400);
      expect(res.body, query).toEqual({ error: message });
    }
    const empty = await api.get('/v2/beneficiaries?cursor=');
    expect(empty.status).toBe(400);
    expect(empty.body.error).toMatch(/^cursor /);
  });
});
