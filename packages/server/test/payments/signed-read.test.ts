import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSignedReads, type SignedRead } from '../../src/payments/signed-read.ts';
import { newKey, PM, pay } from '../support/payments.ts';
import { withQuery } from '../support/test-db.ts';
import { startTestServer, type TestClient, type TestServer } from '../support/test-server.ts';

/**
 * The signed GET of a payment as one statement per batch (payments/signed-read.ts): reads of a key added in one turn
 * of the event loop share a statement, and each is answered by its own nonce, in arrival order, as the nonce store would
 * answer it, with a payment only its own client sees.
 */

let server: TestServer;
let mine: TestClient;
let theirs: TestClient;
let own: string;
let other: string;

beforeAll(async () => {
  server = await startTestServer();
  mine = await server.newClient({ fundMinor: 1_000_000n });
  theirs = await server.newClient({ fundMinor: 1_000_000n });
  own = (await pay(mine, '10000', PM, newKey('sr'))).body.payload.id as string;
  other = (await pay(theirs, '10000', PM, newKey('sr'))).body.payload.id as string;
});
afterAll(async () => {
  await server.stop();
});

function reader() {
  const statements: { sql: string; keys: unknown }[] = [];
  const inner = server.testDb.db;
  const db = withQuery(inner, (sql, params) => {
    statements.push({ sql, keys: params?.[0] });
    return inner.query(sql, params);
  });
  return { reads: createSignedReads({ db, maxBatch: 512 }), statements };
}

describe('signed reads of payments', () => {
  it('share one statement per batch and answer each by its own nonce and client', async () => {
    const { reads, statements } = reader();
    const n = (c: TestClient) => c.api.nonces.take();
    const [a, b, c] = [n(mine), n(mine), n(mine)];
    const t = n(theirs);
    const request = (client: TestClient, nonce: string, paymentId: string, strict = false): SignedRead => ({
      keyId: client.keyId,
      nonce,
      strict,
      clientId: client.clientId,
      paymentId,
    });
    // Added in one turn: one batch. b twice (the second is the replay); c below b, unused: the window takes it;
    // the mark's own number again is a replay; a strict read (HEAD) of a number below the mark is a replay.
    const answers = await Promise.all([
      reads.read(request(mine, b, own)),
      reads.read(request(mine, b, own)),
      reads.read(request(mine, a, other)),
      reads.read(request(mine, c, 'pay_9999999999999999')),
      reads.read(request(theirs, t, other)),
      reads.read(request(mine, String(BigInt(a) - 5n), own, true)),
    ]);
    // One statement: the reads added in one turn share it, whatever their keys.
    expect(statements).toHaveLength(1);
    for (const s of statements) expect(s.sql).toContain('read_payment_views_signed(');
    const withMine = statements.filter((s) => (s.keys as string[]).includes(mine.keyId));
    expect(withMine).toHaveLength(1);
    expect((withMine[0]!.keys as string[]).filter((k) => k === mine.keyId)).toHaveLength(5);
    expect(answers[0]).toMatchObject({ verdict: 'ok', view: { clientId: mine.clientId, payment: { id: own } } });
    expect(answers[1]).toEqual({ verdict: 'replay' });
    // Another client's payment does not exist for this one.
    expect(answers[2]).toEqual({ verdict: 'ok', view: null });
    expect(answers[3]).toEqual({ verdict: 'ok', view: null });
    expect(answers[4]).toMatchObject({ verdict: 'ok', view: { clientId: theirs.clientId, payment: { id: other } } });
    expect(answers[5]).toEqual({ verdict: 'replay' });
    // The marks committed with the statement: the same nonces again are replays.
    const again = await Promise.all([reads.read(request(mine, a, own)), reads.read(request(theirs, t, other))]);
    expect(again).toEqual([{ verdict: 'replay' }, { verdict: 'replay' }]);
  });

  it('answers "inactive" for a deactivated key, and reads nothing for it', async () => {
    const gone = await server.addKey(mine.clientId, 5);
    expect((await server.admin('POST', `/admin/v1/keys/${gone.keyId}/deactivate`)).status).toBe(200);
    const { reads } = reader();
    expect(
      await reads.read({
        keyId: gone.keyId,
        nonce: gone.api.nonces.take(),
        strict: false,
        clientId: mine.clientId,
        paymentId: own,
      }),
    ).toEqual({ verdict: 'inactive' });
  });
});
