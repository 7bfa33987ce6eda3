import { describe, expect, it } from 'vitest';
import { ok, type SeenRequest } from './support/fake-server.ts';
import { setup } from './support/harness.ts';

/** A keyset listing like the service's: id descending, `cursor` = last id of the previous page. */
function listing(ids: string[], lastPage: 'hasMore-false' | 'empty-page') {
  return (req: SeenRequest) => {
    const query = new URL(req.url, 'http://x').searchParams;
    const limit = Number(query.get('limit') ?? '20');
    const cursor = query.get('cursor');
    const below = ids
      .filter((id) => cursor === null || id < cursor)
      .sort()
      .reverse();
    const data = below.slice(0, limit).map((id) => ({ id, intentId: id, state: 'completed' }));
    const hasMore = lastPage === 'hasMore-false' ? below.length > limit : data.length === limit;
    return ok({ data, hasMore, nextCursor: data.length > 0 ? data[data.length - 1]?.id : null });
  };
}

describe('pagination', () => {
  it('list returns one page as the server sent it', async () => {
    const { client } = await setup(listing(['p1', 'p2', 'p3'], 'hasMore-false'));
    const page = await client.payments.list({ limit: 2 });
    expect(page).toEqual({
      data: [
        { id: 'p3', intentId: 'p3', state: 'completed' },
        { id: 'p2', intentId: 'p2', state: 'completed' },
      ],
      hasMore: true,
      nextCursor: 'p2',
    });
  });

  it('iterate walks every page by nextCursor and stops when hasMore is false', async () => {
    const { server, client } = await setup(listing(['p1', 'p2', 'p3', 'p4', 'p5'], 'hasMore-false'));
    const seen: string[] = [];
    for await (const payment of client.payments.iterate({ status: 'completed', limit: 2 })) seen.push(payment.id);
    expect(seen).toEqual(['p5', 'p4', 'p3', 'p2', 'p1']);
    expect(server.requests.map((r) => r.url)).toEqual([
      '/v2/payments?status=completed&limit=2',
      '/v2/payments?status=completed&limit=2&cursor=p4',
      '/v2/payments?status=completed&limit=2&cursor=p2',
    ]);
    expect(server.requests.every((r) => r.verdict === 'accepted')).toBe(true);
  });

  it('iterate stops on an empty page when the server only learns the end by reaching it', async () => {
    const { server, client } = await setup(listing(['b1', 'b2', 'b3', 'b4'], 'empty-page'));
    const seen: string[] = [];
    for await (const beneficiary of client.beneficiaries.iterate({ limit: 2 })) seen.push(beneficiary.id);
    expect(seen).toEqual(['b4', 'b3', 'b2', 'b1']);
    expect(server.requests.map((r) => r.url)).toEqual([
      '/v2/beneficiaries?limit=2',
      '/v2/beneficiaries?limit=2&cursor=b3',
      '/v2/beneficiaries?limit=2&cursor=b1',
    ]);
  });

  it('stops with an error instead of looping when the cursor does not move', async () => {
    const { server, client } = await setup(() => ok({ data: [{ id: 'p1' }], hasMore: true, nextCursor: 'p1' }));
    const seen: string[] = [];
    const walk = async () => {
      for await (const payment of client.payments.iterate()) seen.push(payment.id);
    };
    await expect(walk()).rejects.toThrow(/cursor p1 twice/);
    expect(server.requests).toHaveLength(2);
  });

  it('lets the caller stop early without fetching further pages', async () => {
    const { server, client } = await setup(listing(['p1', 'p2', 'p3', 'p4', 'p5'], 'hasMore-false'));
    for await (const payment of client.payments.iterate({ limit: 2 })) {
      if (payment.id === 'p4') break;
    }
    expect(server.requests).toHaveLength(1);
  });
});
