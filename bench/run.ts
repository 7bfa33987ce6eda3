import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { benchFloor, bracketFloor } from '../packages/server/bench/floor.ts';
import { generatorOf, type Scenario } from '../packages/server/bench/load-job.ts';
import { type Backend, type BackendResult, benchPayments } from '../packages/server/bench/payments-bench.ts';
import { formatTable } from '../packages/server/bench/report.ts';

/**
 * `npm run bench`: the floor (a bare node:http server verifying one signature per request, floor-server.ts), then
 * the payments benchmark against each back-end, each figure also as a ratio to the floor, then the webhook delivery bench when present.
 * Everything on loopback; every run stops by itself. Settings (environment):
 *   BENCH_SECONDS       length of each timed run (default 10)
 *   BENCH_WARMUP_SECONDS  load before each timed run, not measured (default 2; 0 for none)
 *   BENCH_CONNECTIONS   concurrent connections (default 32)
 *   BENCH_CLIENTS       clients the keys are spread over (default 8)
 *   BENCH_BACKENDS      comma list of embedded, postgres (default both)
 *   BENCH_SCENARIOS     comma list of create-payment, get-payment (default both)
 *   BENCH_DATABASE_URL  PostgreSQL server for the bench database (default DATABASE_URL, else local "test")
 *   BENCH_POST_POOL / BENCH_GET_POOL  requests pre-signed per run (default: 5,000 and 20,000 a second × the
 *                      warm-up and the timed run)
 *   BENCH_SIGN_THREADS  pre-signing threads (default: CPU count)
 *   BENCH_PRESIGN_SECONDS  longest pre-signing per run (default 30); the rest is signed in the loop
 *   BENCH_GENERATOR     sockets (default: http-load.ts) or autocannon (the generator of the full runs up to 20:20 on 2026-11-28)
 *   BENCH_CPU_PROF      directory: write a V8 CPU profile of the server there
 *   BENCH_SERVER_NODE_ARGS  more node flags of the server, space-separated (e.g. --perf-basic-prof for perf)
 *   BENCH_SERVER_ENV    extra DISPERSA_* settings of the server, e.g. "DISPERSA_PAYMENT_LANES=1,DISPERSA_PAYMENT_MAX_BATCH=64"
 *   BENCH_WEBHOOK       0: skip the webhook delivery bench (packages/server/bench/webhook-delivery.ts)
 *   BENCH_RECONCILIATION  0: skip the reconciliation bench (packages/server/bench/reconciliation.ts)
 *   BENCH_FLOOR_AFTER   0: measure the floor before the service's runs only, not also after them
 *   BENCH_OUT           results file (default bench/bench-results.json)
 */

function int(name: string, fallback: number, least = 1): number {
  const v = process.env[name];
  if (v === undefined || v === '') return fallback;
  const n = Number(v);
  if (!Number.isInteger(n) || n < least) throw new Error(`${name} must be an integer of at least ${least}`);
  return n;
}

function list<T extends string>(name: string, allowed: readonly T[]): T[] {
  const v = process.env[name];
  if (v === undefined || v === '') return [...allowed];
  const items = v.split(',').map((s) => s.trim());
  for (const item of items) {
    if (!allowed.includes(item as T)) throw new Error(`${name}: unknown "${item}" (known: ${allowed.join(', ')})`);
  }
  return items as T[];
}

function serverEnvOf(text: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const pair of text.split(',').filter((p) => p.trim() !== '')) {
    const [name, ...rest] = pair.split('=');
    if (!name?.startsWith('DISPERSA_') || rest.length === 0) {
      throw new Error(`BENCH_SERVER_ENV: "${pair}" is not DISPERSA_NAME=value`);
    }
    env[name.trim()] = rest.join('=').trim();
  }
  return env;
}

async function postgresVersion(url: string): Promise<string | null> {
  const c = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3000 });
  try {
    await c.connect();
    const { rows } = await c.query<{ v: string }>("SELECT current_setting('server_version') AS v");
    return rows[0]!.v;
  } catch {
    return null;
  } finally {
    await c.end().catch(() => {});
  }
}

// Rates to pre-sign for: above the targets (3,000 payments/s) and above what a fast hour of the 2-core guests
// reaches (3,554 payments and 15,832 GETs a second on 2026-11-29), so that signing stays out of the timed run;
// beyond, the driver signs in the loop (reported as "signed in loop").
const PRESIGN_RPS: Record<Scenario, number> = { 'create-payment': 5000, 'get-payment': 20000 };

async function main(): Promise<void> {
  const seconds = int('BENCH_SECONDS', 10);
  // The first second of a fresh server's load is slower (the JIT compiling its hot paths): the 34th session's
  // runs had a p99 of 50.7 ms in their first tenth and 19-24 ms in most others.
  const warmupSeconds = int('BENCH_WARMUP_SECONDS', 2, 0);
  const connections = int('BENCH_CONNECTIONS', 32);
  const clients = int('BENCH_CLIENTS', 8);
  const backends = list<Backend>('BENCH_BACKENDS', ['embedded', 'postgres']);
  const scenarios = list<Scenario>('BENCH_SCENARIOS', ['create-payment', 'get-payment']);
  const postgresUrl =
    process.env['BENCH_DATABASE_URL'] ?? process.env['DATABASE_URL'] ?? 'postgres://postgres@127.0.0.1:5432/test';
  const pool: Record<Scenario, number> = {
    'create-payment': int('BENCH_POST_POOL', PRESIGN_RPS['create-payment'] * (warmupSeconds + seconds)),
    'get-payment': int('BENCH_GET_POOL', PRESIGN_RPS['get-payment'] * (warmupSeconds + seconds)),
  };
  const signThreads = int('BENCH_SIGN_THREADS', os.cpus().length);
  const presignSeconds = int('BENCH_PRESIGN_SECONDS', 30);
  const cpuProfileDir = process.env['BENCH_CPU_PROF'] || undefined;
  const serverEnv = serverEnvOf(process.env['BENCH_SERVER_ENV'] ?? '');
  const out = process.env['BENCH_OUT'] ?? fileURLToPath(new URL('./bench-results.json', import.meta.url));

  const pgVersion = backends.includes('postgres') ? await postgresVersion(postgresUrl) : null;
  const machine = {
    cpus: os.cpus().length,
    cpuModel: os.cpus()[0]?.model ?? 'unknown',
    memoryMb: Math.round(os.totalmem() / 2 ** 20),
    node: process.version,
    postgres: pgVersion,
    platform: `${os.type()} ${os.release()}`,
  };
  const log = (line: string) => process.stdout.write(`${line}\n`);
  log(`machine: ${machine.cpus} × ${machine.cpuModel}, ${machine.memoryMb} MB, node ${machine.node}`);
  // Read once here so a wrong value stops the bench before anything runs; each load process reads the same.
  const generator = generatorOf(process.env);
  const generatorName = generator === 'sockets' ? 'a socket generator (http-load.ts)' : 'autocannon';
  log(
    `load: ${connections} connections, ${warmupSeconds} s of warm-up and ${seconds} s timed per scenario, ${clients} clients, ${generatorName} in its own process`,
  );

  // The floor first and again after the service's runs, in this same run: every figure is quoted as a ratio to
  // the mean of the two (floor.ts, bracketFloor).
  const measureFloor = () =>
    benchFloor({ scenarios, connections, seconds, warmupSeconds, pool, signThreads, presignSeconds, log });
  const floorBefore = await measureFloor();
  const results: BackendResult[] = [];
  const skipped: string[] = [];
  for (const backend of backends) {
    if (backend === 'postgres' && pgVersion === null) {
      skipped.push(`postgres: no server reachable at ${new URL(postgresUrl).host}`);
      log(`skipping postgres: no server reachable at ${new URL(postgresUrl).host}`);
      continue;
    }
    if (cpuProfileDir) await mkdir(cpuProfileDir, { recursive: true });
    results.push(
      await benchPayments({
        backend,
        postgresUrl,
        seconds,
        warmupSeconds,
        connections,
        clients,
        pool,
        signThreads,
        presignSeconds,
        scenarios,
        cpuProfileDir,
        serverNodeArgs: (process.env['BENCH_SERVER_NODE_ARGS'] ?? '').split(' ').filter((a) => a !== ''),
        serverEnv,
        log,
      }),
    );
  }

  const floor =
    process.env['BENCH_FLOOR_AFTER'] === '0' ? floorBefore : bracketFloor(floorBefore, await measureFloor());

  log('');
  log(formatTable(results, floor));

  let webhookDelivery: unknown = null;
  const webhookBench = fileURLToPath(new URL('../packages/server/bench/webhook-delivery.ts', import.meta.url));
  if (process.env['BENCH_WEBHOOK'] !== '0' && existsSync(webhookBench)) {
    const mod = (await import(webhookBench)) as {
      benchWebhookDelivery?: (o: { databaseUrl: string | null }) => Promise<unknown>;
    };
    if (typeof mod.benchWebhookDelivery === 'function') {
      log('webhook delivery bench:');
      // Its PostgreSQL leg runs on its own database on the same server, when the payments bench used one.
      const databaseUrl = backends.includes('postgres') && pgVersion !== null ? postgresUrl : null;
      try {
        webhookDelivery = (await mod.benchWebhookDelivery({ databaseUrl })) ?? null;
        if (webhookDelivery !== null) log(JSON.stringify(webhookDelivery, null, 2));
      } catch (err) {
        // Its failure must not lose the payments results above.
        webhookDelivery = { error: err instanceof Error ? err.message : String(err) };
        log(`webhook delivery bench failed: ${String(err)}`);
      }
    }
  }

  // Statement lines reconciled per second (100,000 lines; PostgreSQL when DATABASE_URL is set, else embedded).
  let reconciliation: unknown = null;
  if (process.env['BENCH_RECONCILIATION'] !== '0') {
    log('reconciliation bench:');
    try {
      const { benchReconciliation } = await import('../packages/server/bench/reconciliation.ts');
      reconciliation = await benchReconciliation();
      log(JSON.stringify(reconciliation, null, 2));
    } catch (err) {
      reconciliation = { error: err instanceof Error ? err.message : String(err) };
      log(`reconciliation bench failed: ${String(err)}`);
    }
  }

  await writeFile(
    out,
    `${JSON.stringify({ at: new Date().toISOString(), machine, loadAverage: os.loadavg(), seconds, warmupSeconds, connections, generator, clients, floor, results, skipped, webhookDelivery, reconciliation }, null, 2)}\n`,
  );
  log(`results written to ${out}`);
}

main().catch((err: unknown) => {
  process.stderr.write(`bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
