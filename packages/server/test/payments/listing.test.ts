import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PM, pay } from '../support/payments.ts';
import { startTestServer, type TestClient, type TestServer } from '../support/test-server.ts';

let server: TestServer;
let c: TestClient;

beforeAll(async () => {
  server = await startTestServer();
  c = await server.newClient({ fundMinor: 100_000_000n });
});
afterAll(async () => {
  await server.stop();
});

describe('GET /v2/payments keyset pagination', () => {
  it('walks every payment once, id descending, undisturbed by payments created mid-walk', async () => {
    const created: string[] = [];
    for (let i = 0; i < 25; i++) created.push((await pay(c, `${1000 + i}00`, PM)).body.payload.id);
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    for (;;) {
      const target: string = cursor === null ? '/v2/payments?limit=7' : `/v2/payments?limit=7&cursor=${cursor}`;
      const res = await c.api.get(target);
      expect(res.status).toBe(200);
      const { data, hasMore, nextCursor } = res.body.payload;
      pages++;
      if (pages === 2) {
        // New payments get larger ids than the cursor: they never show up later in this walk.
        for (let i = 0; i < 3; i++) await pay(c, '777700', PM);
      }
      if (data.length === 0) {
        expect(hasMore).toBe(false);
        expect(nextCursor).toBeNull();
        break;
      }
      expect(nextCursor).toBe(data[data.length - 1].id);
      seen.push(...data.map((p: any) => p.id));
      cursor = nextCursor;
      expect(pages).toBeLessThan(20);
    }
    expect(seen).toEqual([...created].reverse());
    expect([...seen].sort().reverse()).toEqual(seen);
  });

  it('default page size 20, larger limits clamped to 100, bad limit or cursor 400', async () => {
    for (let i = 0; i < 100; i++) await pay(c, '100', PM);
    const first = await c.api.get('/v2/payments');
    expect(first.body.payload.data).toHaveLength(20);
    expect(first.body.payload.hasMore).toBe(true);
    expect((await c.api.get('/v2/payments?limit=500')).body.payload.data).toHaveLength(100);
    for (const bad of ['limit=0', 'limit=-1', 'limit=abc', 'cursor=xyz', 'cursor=pay_12']) {
      const res = await c.api.get(`/v2/payments?${bad}`);
      expect(res.status, bad).toBe(400);
    }
  });

  it("filters by status and only ever shows the caller's payments", async () => {
    await pay(c, '10001', PM);
    const failed = await c.api.get('/v2/payments?status=failed&limit=100');
    expect(failed.body.payload.data.length).toBeGreaterThan(0);
    expect(failed.body.payload.data.every((p: any) => p.state === 'failed')).toBe(true);
    expect((await c.api.get('/v2/payments?status=lost')).status).toBe(400);
    const other = await server.newClient({ fundMinor: 1000n });
    const empty = await other.api.get('/v2/payments');
    expect(empty.body.payload).toEqual({ data: [], hasMore: false, nextCursor: null });
  });
});

describe('the sequence behind the keyset', () => {
  it('is tied to the id, so the primary key alone keeps it unique', async () => {
    const id = (await pay(c, '123400', PM)).body.payload.id as string;
    const err = await server.testDb.db.query('UPDATE payments SET seq = seq + 1 WHERE id = $1', [id]).then(
      () => null,
      (e: { code?: string; constraint?: string }) => e,
    );
    expect(err).toMatchObject({ code: '23514' });
    const { rows } = await server.testDb.db.query<{ seq: string }>('SELECT seq::text FROM payments WHERE id = $1', [
      id,
    ]);
    expect(id).toBe(`pay_${rows[0]!.seq.padStart(16, '0')}`);
  });
});
