import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db, Queryable } from '../../src/db/db.ts';
import { createPostgresDb, HOLDS_FROM } from '../../src/db/postgres.ts';
import { createTestDatabaseUrl, createTestDb, usingPostgres } from '../support/test-db.ts';

/** Blocks the event loop, so that nothing queued for a later tick can run meanwhile. */
function blockFor(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    // spinning on purpose
  }
}

/** When the database received the statement, against the end of a 100-ms block of the event loop begun right after it. */
async function startedBeforeTheBlockEnded(q: Queryable): Promise<boolean> {
  const answer = q.query<{ started: Date }>('SELECT statement_timestamp() AS started');
  blockFor(100);
  const blockEnded = Date.now();
  const { rows } = await answer;
  // The two clocks are the machine's one clock: a statement written at once started some 100 ms before the end.
  return rows[0]!.started.getTime() < blockEnded - 50;
}

const pid = async (q: Queryable): Promise<number> =>
  (await q.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;

const settle = (ms = 50): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

describe.runIf(usingPostgres())('a held connection (PostgreSQL)', () => {
  let url: string;
  let drop: () => Promise<void>;
  let db: Db;
  let admin: pg.Client;

  beforeAll(async () => {
    ({ url, drop } = await createTestDatabaseUrl());
    db = createPostgresDb(url, { max: 10 });
    admin = new pg.Client({ connectionString: url });
    await admin.connect();
  });

  afterAll(async () => {
    await admin.end();
    await db.close();
    await drop();
  });

  async function held(): Promise<Queryable> {
    const q = db.heldConnection!();
    await pid(q); // the first statement goes through the pool while the connection is taken
    await settle();
    return q;
  }

  it('writes a statement at once, where the pool waits for a later tick', async () => {
    const q = await held();
    expect(await startedBeforeTheBlockEnded(q)).toBe(true);
    // The same check through the pool: the statement leaves only after the block (this is what the held one saves).
    expect(await startedBeforeTheBlockEnded(db)).toBe(false);
  });

  it('keeps one backend, and sends a statement through the pool while its own is busy', async () => {
    const q = await held();
    const own = await pid(q);
    expect(await pid(q)).toBe(own);
    const slow = q.query<{ pid: number }>('SELECT pg_backend_pid() AS pid, pg_sleep(0.3)');
    const started = performance.now();
    const meanwhile = await pid(q);
    expect(performance.now() - started).toBeLessThan(250);
    expect(meanwhile).not.toBe(own);
    expect((await slow).rows[0]!.pid).toBe(own);
    expect(await pid(q)).toBe(own);
  });

  it('drops a connection lost while idle, and holds another', async () => {
    const q = await held();
    const own = await pid(q);
    await admin.query('SELECT pg_terminate_backend($1)', [own]);
    await settle(200);
    const next = await pid(q); // through the pool, while another connection is taken
    await settle();
    const again = await pid(q);
    expect(next).not.toBe(own);
    expect(again).not.toBe(own);
    expect(await pid(q)).toBe(again);
    expect(await startedBeforeTheBlockEnded(q)).toBe(true);
  });

  it('drops a connection lost during a statement: that statement fails, the ones after it do not', async () => {
    const q = await held();
    const own = await pid(q);
    // Its outcome is taken at once: the statement can fail before the terminating call answers, and a rejection
    // nobody has yet awaited is an unhandled one.
    const cut = q.query('SELECT pg_sleep(5)').then(
      () => undefined,
      (e: unknown) => e,
    );
    await settle(100);
    await admin.query('SELECT pg_terminate_backend($1)', [own]);
    expect(await cut).toMatchObject({ code: '57P01' });
    await settle(200);
    expect(await pid(q)).not.toBe(own);
    await settle();
    expect(await startedBeforeTheBlockEnded(q)).toBe(true);
  });

  it('is given back when the database closes', async () => {
    const { url: other, drop: dropOther } = await createTestDatabaseUrl();
    const d = createPostgresDb(other, { max: HOLDS_FROM });
    const q = d.heldConnection!();
    await pid(q);
    await settle();
    await pid(q);
    // pool.end() waits for every connection handed out: a held one not given back would hang here.
    const hung = new Promise<never>((_, reject) => setTimeout(() => reject(new Error('close hung')), 5_000).unref());
    await Promise.race([d.close(), hung]);
    await dropOther();
  });
});

describe.runIf(!usingPostgres())('the embedded database', () => {
  it('has no held connection: its one connection has no turn to wait for', async () => {
    const t = await createTestDb({ migrated: false });
    try {
      expect(t.db.heldConnection).toBeUndefined();
    } finally {
      await t.close();
    }
  });
});

describe.runIf(usingPostgres())('a small pool (PostgreSQL)', () => {
  it('lends no connection to be held: the rest of the service would be left one', async () => {
    const { url, drop } = await createTestDatabaseUrl();
    const small = createPostgresDb(url, { max: HOLDS_FROM - 1 });
    const enough = createPostgresDb(url, { max: HOLDS_FROM });
    try {
      expect(small.heldConnection).toBeUndefined();
      expect(enough.heldConnection).toBeTypeOf('function');
    } finally {
      await small.close();
      await enough.close();
      await drop();
    }
  });
});
