import { AsyncLocalStorage } from 'node:async_hooks';
import path from 'node:path';
import type { Db, Queryable, QueryResult } from '../src/db/db.ts';
import { createLogger } from '../src/logger.ts';
import { start } from '../src/server.ts';
import { inProcessSetup } from './in-process.ts';
import { completedPaymentBody, seedClients } from './seed.ts';
import { createAdminCaller, createSignedCaller, payloadOf } from './signing.ts';

/**
 * Where a request's database time goes: the real service in this process over a database whose every statement
 * is counted and timed, attributed to the HTTP request that caused it (AsyncLocalStorage around the listener).
 * Requests run one at a time, so the attribution is exact; the background workers' statements are left out.
 *
 *   node --import tsx packages/server/bench/count-queries.ts [embedded|postgres] [requests=200]
 *
 * A transaction costs two round trips on top of its statements (BEGIN, COMMIT), and a COMMIT that wrote
 * anything waits for the WAL flush on PostgreSQL.
 */

interface Tally {
  count: number;
  ms: number;
}

export interface RequestProfile {
  requests: number;
  statementsPerRequest: number;
  transactionsPerRequest: number;
  /** Statements plus BEGIN and COMMIT of each transaction. */
  roundTripsPerRequest: number;
  dbMsPerRequest: number;
  wallMsPerRequest: number;
  statements: { sql: string; perRequest: number; msPerCall: number }[];
}

const tag = new AsyncLocalStorage<{ scenario: string }>();

function normalise(sql: string): string {
  return sql.replace(/\s+/g, ' ').trim().slice(0, 110);
}

function countingDb(db: Db, tallies: Map<string, Map<string, Tally>>, txs: Map<string, number>): Db {
  const record = (sql: string, ms: number) => {
    const scenario = tag.getStore()?.scenario;
    if (scenario === undefined) return;
    let bySql = tallies.get(scenario);
    if (bySql === undefined) {
      bySql = new Map();
      tallies.set(scenario, bySql);
    }
    const key = normalise(sql);
    const t = bySql.get(key) ?? { count: 0, ms: 0 };
    t.count++;
    t.ms += ms;
    bySql.set(key, t);
  };
  const wrap = (q: Queryable): Queryable => ({
    async query<R>(sql: string, params?: readonly unknown[]): Promise<QueryResult<R>> {
      const t0 = performance.now();
      try {
        return await q.query<R>(sql, params);
      } finally {
        record(sql, performance.now() - t0);
      }
    },
    exec: (sql) => q.exec(sql),
  });
  const base = wrap(db);
  return {
    kind: db.kind,
    query: base.query,
    exec: base.exec,
    tx(fn, options) {
      const scenario = tag.getStore()?.scenario;
      if (scenario !== undefined) txs.set(scenario, (txs.get(scenario) ?? 0) + 1);
      return db.tx((q) => fn(wrap(q)), options);
    },
    close: () => db.close(),
  };
}

export async function profileRequests(backend: 'embedded' | 'postgres', requests: number, postgresUrl: string) {
  const setup = await inProcessSetup(backend, postgresUrl, 'count');
  const tallies = new Map<string, Map<string, Tally>>();
  const txs = new Map<string, number>();
  const { config } = setup;
  const db = countingDb(setup.db, tallies, txs);
  const running = await start({ config, db, logger: createLogger('warn') });
  try {
    // Every request handled by the public listener runs inside the scenario tag of the moment.
    let current: string | null = null;
    const server = running.publicApp.server;
    const listeners = server.listeners('request') as ((...args: unknown[]) => void)[];
    server.removeAllListeners('request');
    for (const l of listeners) {
      server.on('request', (...args: unknown[]) => {
        if (current === null) return l.apply(server, args);
        return tag.run({ scenario: current }, () => l.apply(server, args));
      });
    }

    const admin = createAdminCaller(running.adminUrl, config.adminToken);
    const [key] = await seedClients(admin, {
      clients: 1,
      keysPerClient: 1,
      fundMinor: 10n ** 15n,
      label: 'count',
    });
    const call = createSignedCaller(running.baseUrl, key!.apiKey, key!.privatePem);
    const ids: string[] = [];
    // Warm-up, not counted: JIT, caches, first-use account rows.
    for (let i = 0; i < 50; i++) {
      const p = payloadOf<{ id: string }>(
        await call('POST', '/v2/payments', { body: completedPaymentBody(i), idempotencyKey: `warm-${i}` }),
        201,
        'warm-up payment',
      );
      ids.push(p.id);
      await call('GET', `/v2/payments/${p.id}`);
    }

    const wall: Record<string, number> = {};
    const scenarios: [string, (i: number) => Promise<unknown>][] = [
      [
        'POST /v2/payments',
        async (i) =>
          payloadOf(
            await call('POST', '/v2/payments', { body: completedPaymentBody(i), idempotencyKey: `count-${i}` }),
            201,
            'payment',
          ),
      ],
      [
        'GET /v2/payments/{id}',
        async (i) => payloadOf(await call('GET', `/v2/payments/${ids[i % ids.length]}`), 200, 'read'),
      ],
    ];
    for (const [name, run] of scenarios) {
      current = name;
      const t0 = performance.now();
      for (let i = 0; i < requests; i++) await run(i);
      wall[name] = performance.now() - t0;
      current = null;
    }

    const out: Record<string, RequestProfile> = {};
    for (const [name] of scenarios) {
      const bySql = tallies.get(name) ?? new Map<string, Tally>();
      const statements = [...bySql.values()].reduce((a, t) => a + t.count, 0);
      const dbMs = [...bySql.values()].reduce((a, t) => a + t.ms, 0);
      const tx = txs.get(name) ?? 0;
      out[name] = {
        requests,
        statementsPerRequest: statements / requests,
        transactionsPerRequest: tx / requests,
        roundTripsPerRequest: (statements + 2 * tx) / requests,
        dbMsPerRequest: dbMs / requests,
        wallMsPerRequest: wall[name]! / requests,
        statements: [...bySql.entries()]
          .sort((a, b) => b[1].ms - a[1].ms)
          .map(([sql, t]) => ({ sql, perRequest: t.count / requests, msPerCall: t.ms / t.count })),
      };
    }
    return out;
  } finally {
    await running.stop();
    await setup.cleanup();
  }
}

const round = (n: number, d = 2) => Math.round(n * 10 ** d) / 10 ** d;

if (process.argv[1] && path.resolve(process.argv[1]) === path.resolve(new URL(import.meta.url).pathname)) {
  const backend = process.argv[2] === 'postgres' ? 'postgres' : 'embedded';
  const requests = Number(process.argv[3] ?? 200);
  const postgresUrl =
    process.env['BENCH_DATABASE_URL'] ?? process.env['DATABASE_URL'] ?? 'postgres://postgres@127.0.0.1:5432/test';
  const result = await profileRequests(backend, requests, postgresUrl);
  for (const [name, p] of Object.entries(result)) {
    process.stdout.write(
      `\n${backend} ${name}: ${round(p.statementsPerRequest)} statements in ${round(p.transactionsPerRequest)} ` +
        `transactions = ${round(p.roundTripsPerRequest)} round trips; ${round(p.dbMsPerRequest)} ms in the database ` +
        `of ${round(p.wallMsPerRequest)} ms per request (one at a time)\n`,
    );
    for (const s of p.statements) {
      process.stdout.write(
        `  ${String(round(s.perRequest)).padStart(5)} × ${String(round(s.msPerCall, 3)).padStart(7)} ms  ${s.sql}\n`,
      );
    }
  }
}
