import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Queryable } from '../../src/db/db.ts';
import { createOutcomeRecorder, type DeliveryOutcome } from '../../src/webhooks/delivery-recorder.ts';
import { insertClient, insertEvent, openTestDb, type WebhookTestDb } from './helpers.ts';

/** Group commit of delivery outcomes: one statement per burst, each caller told when its outcome is durable. */

let t: WebhookTestDb;
let clientId: string;

beforeAll(async () => {
  t = await openTestDb();
  clientId = await insertClient(t.db);
});
afterAll(async () => {
  await t.close();
});

async function claimedEvent(): Promise<string> {
  const e = await insertEvent(t.db, { clientId, dueAt: new Date() });
  await t.db.query('UPDATE events SET attempts = 1 WHERE id = $1', [e.id]);
  return e.id;
}

function delivered(eventId: string): DeliveryOutcome {
  const at = new Date();
  return {
    eventId,
    clientId,
    url: 'https://hooks.example.com/',
    attempt: 1,
    statusCode: 200,
    error: null,
    durationMs: 3,
    attemptedAt: at,
    status: 'delivered',
    at,
    nextAttemptAt: null,
    lastError: null,
  };
}

function counting(): Queryable & { statements: number } {
  const q = {
    statements: 0,
    query: (sql: string, params?: readonly unknown[]) => {
      q.statements++;
      return t.db.query(sql, params);
    },
    exec: (sql: string) => t.db.exec(sql),
  };
  return q as Queryable & { statements: number };
}

describe('outcome recorder', () => {
  it('writes outcomes recorded together in one statement, and resolves each once committed', async () => {
    const q = counting();
    const recorder = createOutcomeRecorder(q);
    const ids = await Promise.all(Array.from({ length: 25 }, () => claimedEvent()));
    await Promise.all(ids.map((id) => recorder.record(delivered(id))));
    expect(q.statements).toBe(1);
    const { rows } = await t.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM events WHERE id = ANY($1::text[]) AND delivery_status = 'delivered'`,
      [ids],
    );
    expect(Number(rows[0]!.n)).toBe(25);
  });

  it('splits a large burst at maxBatch, and a failed write rejects only its own callers', async () => {
    const q = counting();
    const recorder = createOutcomeRecorder(q, { maxBatch: 10 });
    const ids = await Promise.all(Array.from({ length: 25 }, () => claimedEvent()));
    await Promise.all(ids.map((id) => recorder.record(delivered(id))));
    expect(q.statements).toBe(3);

    // An attempt number out of the int range makes the whole statement fail.
    const bad = { ...delivered(await claimedEvent()), attempt: 2 ** 40 };
    await expect(recorder.record(bad)).rejects.toThrow();
    const good = await claimedEvent();
    await expect(recorder.record(delivered(good))).resolves.toBeUndefined();
  });
});
