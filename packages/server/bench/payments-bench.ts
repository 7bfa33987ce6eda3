import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os, { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { createBenchDatabase } from './database.ts';
import { runLoad } from './load.ts';
import { answersBySecondLine, type Lane, type LoadResult, type Scenario } from './load-job.ts';
import { type BenchKey, completedPaymentBody, seedClients } from './seed.ts';
import {
  type CoreShare,
  coreShare,
  cpuSecondsByPid,
  cpuSecondsSpent,
  type SchedTimes,
  type ServerProcess,
  schedByPid,
  startServerProcess,
  summedShare,
} from './server-process.ts';
import { createAdminCaller, createSignedCaller, payloadOf } from './signing.ts';

/**
 * The payments benchmark of one back-end: a fresh database (a temporary data dir, or a PostgreSQL database
 * created and dropped here), the real server as a child process, clients seeded through the operator API, then
 * each scenario driven by the load generator from a separate process (load.ts). Loopback only; every run is bounded.
 */

export type Backend = 'embedded' | 'postgres';

export interface PaymentsBenchOptions {
  backend: Backend;
  /** PostgreSQL server to create the bench database on (postgres back-end only). */
  postgresUrl: string;
  /** The timed run of each scenario, after its warm-up. */
  seconds: number;
  /** Load before each timed run that is not measured (http-load.ts, warmupSeconds). */
  warmupSeconds: number;
  connections: number;
  clients: number;
  /** Requests pre-signed before each load (its warm-up and timed run). */
  pool: Record<Scenario, number>;
  signThreads: number;
  /** Longest pre-signing per run, seconds. */
  presignSeconds: number;
  scenarios: Scenario[];
  /** Write a V8 CPU profile of the server into this directory (node --cpu-prof). */
  cpuProfileDir?: string;
  /** More node flags of the server, e.g. --perf-basic-prof for perf's view of its JIT code. */
  serverNodeArgs?: string[];
  /** Extra DISPERSA_* settings of the server. */
  serverEnv?: Record<string, string>;
  log?: (line: string) => void;
}

export interface DbActivity {
  commits: number;
  rowsInserted: number;
  rowsUpdated: number;
  walRecords: number | null;
  /** Bytes of WAL written: what the database wrote for the run, a measure that does not move with the machine's speed. */
  walBytes: number | null;
  /** Full-page images among the records (the first change of a page after a checkpoint logs the whole page). */
  walFpi: number | null;
  walSyncs: number | null;
}

export interface ScenarioResult extends LoadResult {
  rssBeforeKb: number | null;
  rssAfterKb: number | null;
  /** CPU the server process used during the run, in % of one core (100 = one core saturated). */
  serverCpuPercent: number | null;
  /** PostgreSQL back-end: CPU of all local postgres processes during the run, in % of one core. */
  postgresCpuPercent: number | null;
  /** 1-minute load average when the run started: other work on the machine skews the numbers. */
  loadAverageBefore: number;
  /**
   * PostgreSQL only: activity of the bench database during the load, its warm-up included (pg_stat_database,
   * pg_stat_wal); per request, divided by every answer of the load (LoadResult.answered).
   */
  db: DbActivity | null;
  /**
   * PostgreSQL only: what the bench database's active backends were doing, sampled every 50 ms during the run
   * (pg_stat_activity): share of samples per wait event and statement. Lock waits here name the hot rows.
   */
  waits: WaitSample[] | null;
  /** Requests per batch during the run, per phase of the payment path and for the nonce store (from /metrics). */
  meanBatch: Record<string, number>;
  /** Milliseconds a payment request spent in each phase of the payment path, its wait for a batch included. */
  meanPhaseMs: Record<string, number>;
  /**
   * Share of the run each batched path's lanes spent running a batch, in % (dispersa_batch_run_seconds over
   * dispersa_batch_lanes): near 100 the path is the ceiling, each lane busy all the time.
   */
  busyPercent: Record<string, number>;
  /**
   * Main threads' shares of the run on a core and waiting, runnable, for one (/proc/<pid>/schedstat): the server's,
   * the load generator's, and on PostgreSQL all its processes' summed. Null where /proc has none.
   */
  cores: { server: CoreShare | null; loadGenerator: CoreShare | null; postgres: CoreShare | null };
}

/** Sum and count of each of a family of /metrics histograms, by name. */
type HistogramTotals = Record<string, { sum: number; count: number }>;

/** The payment path's histograms of the server's /metrics, as sum and count per name. */
interface PathCounters {
  /** Batch sizes: per phase of the payment path, and "nonce" for the nonce store. */
  batch: HistogramTotals;
  /** Milliseconds a request spent per phase (dispersa_payment_phase_seconds, sums converted). */
  phaseMs: HistogramTotals;
  /** Seconds each batched path spent running batches (dispersa_batch_run_seconds_sum), and its lanes. */
  runSeconds: Record<string, number>;
  lanes: Record<string, number>;
  /** When the scrape was answered (performance.now()). */
  at: number;
}

async function pathCounters(adminUrl: string, token: string): Promise<PathCounters> {
  const res = await fetch(`${adminUrl}/metrics`, { headers: { authorization: `Bearer ${token}` } });
  const text = await res.text();
  const out: PathCounters = { batch: {}, phaseMs: {}, runSeconds: {}, lanes: {}, at: performance.now() };
  const add = (into: HistogramTotals, name: string, kind: string, value: number) => {
    into[name] ??= { sum: 0, count: 0 };
    into[name][kind as 'sum' | 'count'] = value;
  };
  for (const line of text.split('\n')) {
    const b = /^dispersa_(payment|nonce)_batch_size_(sum|count)(?:\{phase="([a-z]+)"\})? ([0-9.e+-]+)$/.exec(line);
    if (b) add(out.batch, b[1] === 'nonce' ? 'nonce' : b[3]!, b[2]!, Number(b[4]));
    const t = /^dispersa_payment_phase_seconds_(sum|count)\{phase="([a-z]+)"\} ([0-9.e+-]+)$/.exec(line);
    if (t) add(out.phaseMs, t[2]!, t[1]!, t[1] === 'sum' ? Number(t[3]) * 1000 : Number(t[3]));
    const r = /^dispersa_batch_run_seconds_sum\{path="([a-z_]+)"\} ([0-9.e+-]+)$/.exec(line);
    if (r) out.runSeconds[r[1]!] = Number(r[2]);
    const l = /^dispersa_batch_lanes\{path="([a-z_]+)"\} ([0-9]+)$/.exec(line);
    if (l) out.lanes[l[1]!] = Number(l[2]);
  }
  return out;
}

/** The main threads' time on a core and waiting for one, as the bench prints it; null when /proc had none. */
export function coresOf(cores: ScenarioResult['cores']): string | null {
  const parts = (
    [
      ['server', cores.server],
      ['load generator', cores.loadGenerator],
      ['postgres', cores.postgres],
    ] as const
  ).flatMap(([name, share]) => (share === null ? [] : [`${name} ${share.running} / ${share.waiting}`]));
  return parts.length === 0 ? null : `cores (% of the run on a core / waiting for one): ${parts.join(', ')}`;
}

/** Each path's busy share between two scrapes, in % of its lanes' time (paths that ran no batch are left out). */
function busyOver(before: PathCounters, after: PathCounters): Record<string, number> {
  const out: Record<string, number> = {};
  const seconds = (after.at - before.at) / 1000;
  for (const [path, sum] of Object.entries(after.runSeconds)) {
    const busy = sum - (before.runSeconds[path] ?? 0);
    const lanes = after.lanes[path] ?? 1;
    if (busy > 0 && seconds > 0) out[path] = Math.round((busy / seconds / lanes) * 100);
  }
  return out;
}

/** The mean of each histogram between two scrapes (one decimal). */
function meansOver(before: HistogramTotals, after: HistogramTotals): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [name, a] of Object.entries(after)) {
    const b = before[name] ?? { sum: 0, count: 0 };
    const count = a.count - b.count;
    if (count > 0) out[name] = Math.round(((a.sum - b.sum) / count) * 10) / 10;
  }
  return out;
}

export interface WaitSample {
  /** wait_event_type:wait_event, or "cpu" for an active backend that waits on nothing. */
  wait: string;
  query: string;
  /** Share of all active-backend samples, in %. */
  percent: number;
}

/** Samples pg_stat_activity until stopped; the result aggregates (wait, statement) pairs. */
function sampleWaits(client: pg.Client, dbName: string): { stop(): Promise<WaitSample[]> } {
  const counts = new Map<string, number>();
  let total = 0;
  let running = true;
  const loop = (async () => {
    while (running) {
      const { rows } = await client.query<{ wait: string | null; query: string }>(
        `SELECT wait_event_type || ':' || wait_event AS wait, regexp_replace(left(query, 200), '\\s+', ' ', 'g') AS query
         FROM pg_stat_activity WHERE datname = $1 AND state = 'active' AND pid <> pg_backend_pid()`,
        [dbName],
      );
      for (const r of rows) {
        const key = `${r.wait ?? 'cpu'}\u0000${r.query.slice(0, 90)}`;
        counts.set(key, (counts.get(key) ?? 0) + 1);
        total++;
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return [...counts.entries()]
        .sort((a, b) => b[1] - a[1])
        .slice(0, 12)
        .map(([key, n]) => {
          const [wait, query] = key.split('\u0000') as [string, string];
          return { wait, query, percent: Math.round((1000 * n) / Math.max(1, total)) / 10 };
        });
    },
  };
}

export interface BackendResult {
  backend: Backend;
  lanes: number;
  clients: number;
  rssIdleKb: number | null;
  scenarios: ScenarioResult[];
}

// Cluster-wide WAL counters include other databases' traffic; on the bench machine nothing else runs.
async function dbActivity(client: pg.Client, dbName: string): Promise<DbActivity> {
  const db = await client.query<{ c: string; i: string; u: string }>(
    'SELECT xact_commit::text AS c, tup_inserted::text AS i, tup_updated::text AS u FROM pg_stat_database WHERE datname = $1',
    [dbName],
  );
  let walRecords: number | null = null;
  let walBytes: number | null = null;
  let walFpi: number | null = null;
  let walSyncs: number | null = null;
  try {
    const wal = await client.query<{ r: string; b: string; f: string; s: string }>(
      'SELECT wal_records::text AS r, wal_bytes::text AS b, wal_fpi::text AS f, wal_sync::text AS s FROM pg_stat_wal',
    );
    walRecords = Number(wal.rows[0]!.r);
    walBytes = Number(wal.rows[0]!.b);
    walFpi = Number(wal.rows[0]!.f);
    walSyncs = Number(wal.rows[0]!.s);
  } catch {
    // pg_stat_wal needs PostgreSQL 14+
  }
  const row = db.rows[0]!;
  return {
    commits: Number(row.c),
    rowsInserted: Number(row.i),
    rowsUpdated: Number(row.u),
    walRecords,
    walBytes,
    walFpi,
    walSyncs,
  };
}

const change = (a: number | null, b: number | null): number | null => (a === null || b === null ? null : b - a);

const delta = (a: DbActivity, b: DbActivity): DbActivity => ({
  commits: b.commits - a.commits,
  rowsInserted: b.rowsInserted - a.rowsInserted,
  rowsUpdated: b.rowsUpdated - a.rowsUpdated,
  walRecords: change(a.walRecords, b.walRecords),
  walBytes: change(a.walBytes, b.walBytes),
  walFpi: change(a.walFpi, b.walFpi),
  walSyncs: change(a.walSyncs, b.walSyncs),
});

/** What the database wrote per request: independent of the machine's speed, so runs of different hours compare. */
function dbWorkLine(db: DbActivity, requests: number): string | null {
  if (requests === 0) return null;
  const per = (n: number, digits: number) => (n / requests).toFixed(digits);
  const wal =
    db.walRecords === null || db.walBytes === null
      ? ''
      : `, ${per(db.walRecords, 1)} WAL records, ${per(db.walBytes / 1024, 2)} KB of WAL` +
        (db.walFpi === null ? '' : ` (${per(db.walFpi, 2)} full-page images)`);
  return (
    `database per request: ${per(db.rowsInserted, 2)} rows inserted, ${per(db.rowsUpdated, 2)} updated, ` +
    `${per(db.commits, 2)} commits${wal}`
  );
}

/** A few completed payments per lane through ordinary signed calls: warms the server and gives GETs ids to read. */
async function seedPayments(server: ServerProcess, keys: BenchKey[], perLane: number): Promise<string[][]> {
  return Promise.all(
    keys.map(async (k, lane) => {
      const call = createSignedCaller(server.baseUrl, k.apiKey, k.privatePem);
      const ids: string[] = [];
      for (let i = 0; i < perLane; i++) {
        const created = payloadOf<{ id: string; state: string }>(
          await call('POST', '/v2/payments', {
            body: completedPaymentBody(i),
            idempotencyKey: `seed-${lane}-${i}-${randomBytes(4).toString('hex')}`,
          }),
          201,
          'seed payment',
        );
        if (created.state !== 'completed') throw new Error(`seed payment ended ${created.state}, not completed`);
        ids.push(created.id);
        payloadOf(await call('GET', `/v2/payments/${created.id}`), 200, 'seed read');
      }
      return ids;
    }),
  );
}

export async function benchPayments(o: PaymentsBenchOptions): Promise<BackendResult> {
  const log = o.log ?? (() => {});
  const dataDir = await mkdtemp(path.join(tmpdir(), `dispersa-bench-${o.backend}-`));
  const database = o.backend === 'postgres' ? await createBenchDatabase(o.postgresUrl) : null;
  const adminToken = `bench-${randomBytes(16).toString('hex')}`;
  let server: ServerProcess | null = null;
  let stats: pg.Client | null = null;
  let waitsClient: pg.Client | null = null;
  try {
    server = await startServerProcess({
      dataDir,
      adminToken,
      databaseUrl: database?.url ?? null,
      // What `npm start` runs: the build, with plain node.
      built: true,
      nodeArgs: [
        ...(o.cpuProfileDir ? ['--cpu-prof', `--cpu-prof-dir=${o.cpuProfileDir}`] : []),
        ...(o.serverNodeArgs ?? []),
      ],
      ...(o.serverEnv ? { env: o.serverEnv } : {}),
    });
    log(`[${o.backend}] server pid ${server.pid} on ${server.baseUrl}`);
    const admin = createAdminCaller(server.adminUrl, adminToken);
    // One lane (key) per connection at least: see load-driver.ts on why POSTs of one key must not overlap.
    const keysPerClient = Math.ceil(o.connections / o.clients);
    const keys = await seedClients(admin, {
      clients: o.clients,
      keysPerClient,
      fundMinor: 10n ** 15n,
      rails: ['PM', 'CCE'],
      label: `bench-${o.backend}`,
    });
    const paymentIds = await seedPayments(server, keys, 4);
    const rssIdleKb = server.rssKb();
    log(`[${o.backend}] seeded ${o.clients} clients, ${keys.length} keys; server RSS ${rssIdleKb} kB`);

    if (database !== null) {
      stats = new pg.Client({ connectionString: o.postgresUrl });
      await stats.connect();
      waitsClient = new pg.Client({ connectionString: o.postgresUrl });
      await waitsClient.connect();
    }
    const dbName = database === null ? null : new URL(database.url).pathname.slice(1);

    const scenarios: ScenarioResult[] = [];
    for (const scenario of o.scenarios) {
      // Nonces above anything used before on these keys (seeding and earlier scenarios).
      const nonceStart = (BigInt(Date.now()) * 1_000_000n).toString();
      const lanes: Lane[] = keys.map((k, i) => ({
        apiKey: k.apiKey,
        privatePem: k.privatePem,
        nonceStart,
        paymentIds: paymentIds[i]!,
      }));
      log(
        `[${o.backend}] ${scenario}: pre-signing up to ${o.pool[scenario]} requests (at most ${o.presignSeconds} s), then ${o.warmupSeconds} s of warm-up and ${o.seconds} s of load`,
      );
      if (stats !== null) await stats.query('SELECT pg_stat_clear_snapshot()');
      const before = stats !== null && dbName !== null ? await dbActivity(stats, dbName) : null;
      const rssBeforeKb = server.rssKb();
      const loadAverageBefore = Math.round(os.loadavg()[0]! * 100) / 100;
      let cpuMark: {
        server: number | null;
        postgres: Map<number, number>;
        serverSched: SchedTimes | null;
        postgresSched: Map<number, SchedTimes>;
        at: number;
      } | null = null;
      const markCpu = () => ({
        server: server!.cpuSeconds(),
        postgres: database === null ? new Map<number, number>() : cpuSecondsByPid('postgres'),
        serverSched: server!.sched(),
        postgresSched: database === null ? new Map<number, SchedTimes>() : schedByPid('postgres'),
        at: performance.now(),
      });
      let sampler: { stop(): Promise<WaitSample[]> } | null = null;
      // Read when the load starts, not before the pre-signing: the busy shares are over the run's time.
      let countersAtStart: Promise<PathCounters> | null = null;
      const load = runLoad(
        {
          baseUrl: server.baseUrl,
          scenario,
          runTag: randomBytes(4).toString('hex'),
          lanes,
          connections: o.connections,
          seconds: o.seconds,
          warmupSeconds: o.warmupSeconds,
          poolSize: o.pool[scenario],
          signThreads: o.signThreads,
          presignSeconds: o.presignSeconds,
        },
        () => {
          cpuMark = markCpu();
          countersAtStart = pathCounters(server!.adminUrl, adminToken);
          if (waitsClient !== null && dbName !== null) sampler = sampleWaits(waitsClient, dbName);
        },
      );
      const result = await load;
      if (countersAtStart === null) throw new Error('the load ended without starting');
      const countersBefore = await (countersAtStart as Promise<PathCounters>);
      const countersAfter = await pathCounters(server.adminUrl, adminToken);
      const meanBatch = meansOver(countersBefore.batch, countersAfter.batch);
      const meanPhaseMs = meansOver(countersBefore.phaseMs, countersAfter.phaseMs);
      const busyPercent = busyOver(countersBefore, countersAfter);
      const waits = sampler === null ? null : await (sampler as { stop(): Promise<WaitSample[]> }).stop();
      const end = markCpu();
      const rssAfterKb = server.rssKb();
      const start = cpuMark as ReturnType<typeof markCpu> | null;
      const seconds = start === null ? 0 : (end.at - start.at) / 1000;
      const percent = (a: number | null, b: number | null) =>
        a === null || b === null || seconds <= 0 ? null : Math.round(((b - a) / seconds) * 100);
      const serverCpuPercent = start === null ? null : percent(start.server, end.server);
      const postgresCpuPercent =
        start === null || database === null ? null : percent(0, cpuSecondsSpent(start.postgres, end.postgres));
      const cores = {
        server: start === null ? null : coreShare(start.serverSched, end.serverSched, seconds),
        loadGenerator: result.driverCores,
        postgres:
          start === null || database === null ? null : summedShare(start.postgresSched, end.postgresSched, seconds),
      };
      let db: DbActivity | null = null;
      if (stats !== null && dbName !== null && before !== null) {
        // The statistics collector reports with a delay of up to a second.
        await new Promise((r) => setTimeout(r, 1500));
        await stats.query('SELECT pg_stat_clear_snapshot()');
        db = delta(before, await dbActivity(stats, dbName));
      }
      scenarios.push({
        ...result,
        rssBeforeKb,
        rssAfterKb,
        serverCpuPercent,
        postgresCpuPercent,
        loadAverageBefore,
        db,
        waits,
        meanBatch,
        meanPhaseMs,
        busyPercent,
        cores,
      });
      log(
        `[${o.backend}] ${scenario}: ${result.rps} req/s, p50 ${result.latencyMs.p50} ms, p99 ${result.latencyMs.p99} ms, ` +
          `non-2xx ${result.non2xx}, errors ${result.errors + result.timeouts}, pre-signed ${result.preSigned}, signed in loop ${result.signedInLoop}; CPU % server ` +
          `${serverCpuPercent}, load generator ${result.driverCpuPercent}, postgres ${postgresCpuPercent ?? '-'}`,
      );
      log(
        `    mean batch: ${Object.entries(meanBatch)
          .map(([phase, size]) => `${phase} ${size}`)
          .join(', ')}`,
      );
      if (Object.keys(meanPhaseMs).length > 0) {
        log(
          `    ms per request in each phase (its wait for a batch included): ${Object.entries(meanPhaseMs)
            .map(([phase, ms]) => `${phase} ${ms}`)
            .join(', ')}`,
        );
      }
      if (Object.keys(busyPercent).length > 0) {
        log(
          `    busy (share of the run a path's lanes were running a batch): ${Object.entries(busyPercent)
            .map(([path, percent]) => `${path} ${percent} %`)
            .join(', ')}`,
        );
      }
      const secondsLine = answersBySecondLine(result, o.warmupSeconds);
      if (secondsLine !== null) log(`    ${secondsLine}`);
      const coresLine = coresOf(cores);
      if (coresLine !== null) log(`    ${coresLine}`);
      const work = db === null ? null : dbWorkLine(db, result.answered);
      if (work !== null) log(`    ${work}`);
      for (const w of waits?.slice(0, 6) ?? [])
        log(`    ${String(w.percent).padStart(5)}%  ${w.wait.padEnd(28)} ${w.query}`);
    }
    return { backend: o.backend, lanes: keys.length, clients: o.clients, rssIdleKb, scenarios };
  } finally {
    await stats?.end().catch(() => {});
    await waitsClient?.end().catch(() => {});
    if (server !== null) await server.stop();
    await database?.drop().catch((err: unknown) => log(`could not drop the bench database: ${String(err)}`));
    await rm(dataDir, { recursive: true, force: true });
  }
}
