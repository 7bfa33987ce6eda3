import { PGlite } from '@electric-sql/pglite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createNonceStore } from '../../src/auth/nonce-store.ts';
import type { Db } from '../../src/db/db.ts';
import { createPreparedRunner } from '../../src/db/embedded-prepared.ts';
import { migrate } from '../../src/db/migrate.ts';
import { createPostgresDb } from '../../src/db/postgres.ts';
import { prepared, preparedName, preparedStatements } from '../../src/db/prepared.ts';
// The modules that declare the hot path's statements, so that every one is checked below.
import '../../src/payments/book.ts';
import '../../src/payments/reserve.ts';
import '../../src/rails/sandbox/rail.ts';
import '../../src/rails/sandbox/statement-source.ts';
import '../../src/webhooks/config-store.ts';
import '../../src/webhooks/delivery-worker.ts';
import { createTestDatabaseUrl, createTestDb, usingPostgres } from '../support/test-db.ts';

/** Statements this file declares for itself; the plan check below covers the service's own. */
const ours = new Set<string>();
function declare(sql: string): string {
  ours.add(sql);
  return prepared(sql);
}

describe('prepared statements', () => {
  it('leave the text as it is and name each declared statement once', () => {
    const a = declare('SELECT 1 AS prepared_test_a');
    const b = declare('SELECT 2 AS prepared_test_b');
    expect(a).toBe('SELECT 1 AS prepared_test_a');
    expect(preparedName(a)).toMatch(/^dispersa_\d+$/);
    expect(preparedName(b)).not.toBe(preparedName(a));
    expect(declare('SELECT 1 AS prepared_test_a')).toBe(a);
    expect(preparedName(a)).toBe(preparedName('SELECT 1 AS prepared_test_a'));
    expect(preparedName('SELECT 3 AS never_declared')).toBeUndefined();
  });

  it('run on the back-end in use with the answers of unnamed ones', async () => {
    const t = await createTestDb();
    try {
      const sql = declare('SELECT $1::int + 1 AS n');
      for (const n of [1, 2, 3, 4, 5, 6, 7])
        expect((await t.db.query<{ n: number }>(sql, [n])).rows).toEqual([{ n: n + 1 }]);
      expect(await createNonceStore({ db: t.db }).consume('key_none', '1', true)).toBe('inactive');
    } finally {
      await t.close();
    }
  });
});

describe('prepared statements on the embedded database', () => {
  let pglite: PGlite;

  beforeAll(async () => {
    pglite = new PGlite();
    await pglite.waitReady;
    await pglite.exec('CREATE TABLE prepared_t (id int PRIMARY KEY, v text)');
  });
  afterAll(async () => {
    await pglite.close();
  });

  it('take one pass per call, with the answers and errors of query()', async () => {
    const runner = createPreparedRunner(pglite);
    expect(await runner.run('SELECT 4 AS never_declared', [])).toBeUndefined();
    const sql = declare('SELECT $1::int8 AS big, $2::timestamptz AS at, $3::text[] AS list, 1 / $4::int AS q');
    const at = new Date('2026-11-24T06:00:00.123Z');
    const passes: number[] = [];
    const stream = pglite.execProtocolStream.bind(pglite);
    const raw = pglite.execProtocolRawStream.bind(pglite);
    pglite.execProtocolStream = (message, options) => {
      passes.push(message.length);
      return stream(message, options);
    };
    pglite.execProtocolRawStream = (message, options) => {
      passes.push(message.length);
      return raw(message, options);
    };
    try {
      const first = await runner.run(sql, ['9007199254740993', at, ['a', 'b,c'], 1]);
      expect(first?.rows).toEqual([{ big: 9007199254740993n, at, list: ['a', 'b,c'], q: 1 }]);
      expect(first?.rows).toEqual((await pglite.query(sql, ['9007199254740993', at, ['a', 'b,c'], 1])).rows);
      passes.length = 0;
      await runner.run(sql, ['1', at, [], 1]);
      expect(passes).toHaveLength(1);
      const failed = await runner.run(sql, ['1', at, [], 0]).catch((err: unknown) => err);
      const queried = await pglite.query(sql, ['1', at, [], 0]).catch((err: unknown) => err);
      expect((failed as { code?: string }).code).toBe('22012');
      // The error query() throws: the same class, text and fields (query() adds the statement, its parameters and options).
      expect(failed).toBeInstanceOf((queried as object).constructor);
      const { query: _query, params: _params, queryOptions: _options, ...fields } = queried as Record<string, unknown>;
      expect({ ...(failed as object), message: (failed as Error).message }).toEqual({
        ...fields,
        message: (queried as Error).message,
      });
      // The backend is ready again after the error.
      expect((await runner.run(sql, ['2', at, null, 2]))?.rows).toEqual([{ big: 2, at, list: null, q: 0 }]);
    } finally {
      pglite.execProtocolStream = stream;
      pglite.execProtocolRawStream = raw;
    }
  });

  it('read the rows of an answer as query() reads them, whatever their types, nulls and characters', async () => {
    const runner = createPreparedRunner(pglite);
    const sql = declare(
      `SELECT g AS n, g % 2 = 0 AS even, (g * 1.5)::numeric(10, 2) AS amount, g::float8 / 3 AS ratio,
         CASE WHEN g % 3 = 0 THEN NULL ELSE $1::text || g END AS label, jsonb_build_object('g', g, 's', $1::text) AS doc,
         ARRAY[g, g + 1] AS pair, '\\x00ff'::bytea AS raw, NULL::text AS nothing, '' AS empty, g AS n
       FROM generate_series(1, $2::int) g`,
    );
    for (const params of [
      ['ñandú € 😀 \t "q"', 7],
      ['plain', 0],
      ['x'.repeat(70_000), 2],
    ]) {
      const ours = await runner.run(sql, params);
      expect(ours?.rows).toEqual((await pglite.query(sql, params)).rows);
      expect(ours?.rows).toHaveLength(params[1] as number);
    }
  });

  it('count the rows a write touched, and wait for a transaction in progress instead of joining it', async () => {
    const runner = createPreparedRunner(pglite);
    const insert = declare('INSERT INTO prepared_t SELECT g, $2 FROM generate_series(1, $1::int) g');
    const count = declare('SELECT count(*)::int AS n FROM prepared_t');
    expect((await runner.run(insert, [3, 'x']))?.affectedRows).toBe(3);
    let release!: () => void;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const tx = pglite.transaction(async (t) => {
      await t.query("INSERT INTO prepared_t VALUES (100, 'in the transaction')");
      await held;
      await t.rollback();
    });
    await new Promise((resolve) => setTimeout(resolve, 20));
    const read = runner.run(count, []);
    await new Promise((resolve) => setTimeout(resolve, 20));
    release();
    await tx;
    // Had it run between the transaction's statements it would have counted the row inserted there.
    expect((await read)?.rows).toEqual([{ n: 3 }]);
  });
});

describe.skipIf(!usingPostgres())('prepared statements on PostgreSQL', () => {
  let db: Db;
  let drop: () => Promise<void>;

  beforeAll(async () => {
    const created = await createTestDatabaseUrl();
    drop = created.drop;
    // One connection: every statement below runs on the connection that prepared the ones before it.
    db = createPostgresDb(created.url, { max: 1 });
    await migrate(db);
  });
  afterAll(async () => {
    await db.close();
    await drop();
  });

  it('are parsed once per connection under their name; unnamed statements are not kept', async () => {
    const nonces = createNonceStore({ db });
    await nonces.consume('key_none', '1', true);
    await nonces.consume('key_none', '2', true);
    await db.query('SELECT $1::text AS unnamed', ['x']);
    const { rows } = await db.query<{ name: string; statement: string }>(
      'SELECT name, statement FROM pg_prepared_statements',
    );
    const consume = rows.filter((r) => r.statement.includes('consume_nonces('));
    expect(consume).toHaveLength(1);
    expect(consume[0]!.name).toBe(preparedName(consume[0]!.statement));
    expect(rows.some((r) => r.statement.includes('AS unnamed'))).toBe(false);
  });

  it('are each a function call whose generic plan reads no table', async () => {
    const calls = [...preparedStatements()].filter(([sql]) => !ours.has(sql));
    expect(calls.length).toBeGreaterThanOrEqual(5);
    await db.query('SET plan_cache_mode = force_generic_plan');
    try {
      for (const [sql, name] of calls) {
        const probe = `probe_${name}`;
        await db.query(`PREPARE ${probe} AS ${sql}`);
        const { rows: types } = await db.query<{ n: number }>(
          'SELECT cardinality(parameter_types) AS n FROM pg_prepared_statements WHERE name = $1',
          [probe],
        );
        const nulls = Array.from({ length: types[0]!.n }, () => 'NULL').join(', ');
        const { rows } = await db.query<{ 'QUERY PLAN': string }>(`EXPLAIN EXECUTE ${probe}(${nulls})`);
        const plan = rows.map((r) => r['QUERY PLAN']).join('\n');
        expect(plan, sql).toMatch(/^Function Scan on \w+/);
        expect(
          plan.split('\n').filter((line) => /Scan/.test(line)),
          sql,
        ).toHaveLength(1);
      }
    } finally {
      await db.query('RESET plan_cache_mode');
    }
  });
});
