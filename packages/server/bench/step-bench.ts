import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { Db } from '../src/db/db.ts';
import { prepared, preparedName } from '../src/db/prepared.ts';
import { createLogger } from '../src/logger.ts';
import { advanceBatch } from '../src/payments/advance.ts';
import type { ReserveItem } from '../src/payments/create.ts';
import { paymentFingerprint } from '../src/payments/fingerprint.ts';
import type { Payment } from '../src/payments/repository.ts';
import { start } from '../src/server.ts';
import { systemClock } from '../src/shared/clock.ts';
import { type InProcessSetup, inProcessSetup } from './in-process.ts';
import { completedPaymentBody, seedClients } from './seed.ts';
import { schedOf } from './server-process.ts';
import { createAdminCaller } from './signing.ts';

/**
 * The payment path's database step on its own: batches of reserves and bookings through advanceBatch, as the
 * pipeline makes them, with no HTTP, no rail and no background worker running beside them. What it prints (the
 * database time of a step and of a payment, and the CPU a payment of the database's backends and of this process)
 * moves with the machine's speed like every timing here, but it is quick and steady enough to compare two versions
 * of the step's SQL alternated in one sitting.
 *
 *   node --import tsx packages/server/bench/step-bench.ts [embedded|postgres] [batch=12] [steps=300]
 *
 * Each step reserves one batch of new payments (one per key, keys taken in turn) and books the batch reserved by
 * the step before as completed: in one call on PostgreSQL, in two on the embedded database, as the pipeline does
 * (`STEP_JOINT=1` or `0` chooses). `STEP_SQL=file.sql` runs that file
 * after the migrations (a candidate version of the step's functions) and, with `STEP_SQL_BASE=file.sql` (the
 * migrated version), alternates the two round by round; `STEP_ROUNDS` sets the rounds (3).
 *
 * `STEP_INTERLEAVE=1` alternates them step by step instead, which resolves about a per cent where rounds resolve
 * eight: the migrated functions and the candidate (STEP_SQL run over a copy of them; without it the same functions,
 * an A/A run) each live in a schema of their own over the same tables, and the steps call one and the other in
 * turn. It prints each one's mean and the candidate's time over the migrated one's with two standard errors either
 * side, from blocks of `STEP_BLOCK` steps (20); `STEP_ROUNDS` (4, made even) rounds of `steps` steps.
 * `STEP_INTERLEAVE=databases` does the same over two databases, migrated and seeded alike, with STEP_SQL run over
 * the second: for a candidate that is not only functions (an index dropped, a table's fillfactor, a trigger).
 * `STEP_OTHER_URL` puts the second database on another server or connection (another configuration of
 * PostgreSQL on another port, or the same server through its Unix socket).
 */

interface Key {
  clientId: string;
  keyId: string;
}

function reserveItem(key: Key, n: number, nonce: bigint, runTag: string): ReserveItem {
  const body = completedPaymentBody(n);
  const amountMinor = BigInt(body['amountMinor']!);
  const destination = {
    rail: 'PM' as const,
    account: body['beneficiary']!,
    bankCode: body['bankCode']!,
    docType: 'V' as const,
    docNumber: body['docNumber']!,
    beneficiaryName: null,
  };
  return {
    client: key.clientId,
    key: key.keyId,
    idem: `step-${runTag}-${n}`,
    nonce: nonce.toString(),
    fingerprint: paymentFingerprint({ amountMinor, destination, quoteId: null }),
    amountMinor: amountMinor.toString(),
    rail: 'PM',
    account: destination.account,
    bankCode: destination.bankCode,
    docType: destination.docType,
    docNumber: destination.docNumber,
    beneficiaryName: null,
    beneficiaryId: null,
    sourceCurrency: 'VES',
    sourceAmountMinor: amountMinor.toString(),
    quoteId: null,
    rateId: null,
    noRate: false,
    refused: null,
    servicePerPaymentMaxMinor: null,
    serviceDailyMaxMinor: null,
  };
}

export interface StepTiming {
  steps: number;
  batch: number;
  msPerStep: number;
  msPerPayment: number;
  /**
   * CPU a payment of the database's backends (PostgreSQL on this machine, /proc/<pid>/schedstat: time on a core, to
   * the nanosecond) and of this process, in µs, over the timed steps. Unlike the wall time it leaves out the waits
   * (the commit's flush, the round trip), so it says which part of a step a candidate changed; null where the
   * backends cannot be read (the embedded database runs in this process: its CPU is the process's).
   */
  databaseCpuUsPerPayment: number | null;
  processCpuUsPerPayment: number;
}

/** The backends serving this database, as pg_stat_activity lists them (PostgreSQL only). */
async function backendPids(db: Db): Promise<number[]> {
  if (db.kind !== 'postgres') return [];
  const { rows } = await db.query<{ pid: number }>(
    'SELECT pid FROM pg_stat_activity WHERE datname = current_database()',
  );
  return rows.map((r) => Number(r.pid));
}

/** Seconds on a core of each of the given processes that can be read, by pid. */
function runSeconds(pids: readonly number[]): Map<number, number> {
  const out = new Map<number, number>();
  for (const pid of pids) {
    const t = schedOf(pid);
    if (t !== null) out.set(pid, t.run);
  }
  return out;
}

/** The time on a core between two readings, of the processes read both times (the pool closes idle connections). */
function runDelta(before: Map<number, number>, after: Map<number, number>): number | null {
  let total = 0;
  let read = 0;
  for (const [pid, t0] of before) {
    const t1 = after.get(pid);
    if (t1 === undefined) continue;
    total += t1 - t0;
    read++;
  }
  return read === 0 ? null : total;
}

/**
 * Steps alternated between two versions of the step, one step each in turn (STEP_INTERLEAVE): a candidate that
 * changes a step by a few per cent is lost in the drift of the machine between rounds of hundreds of steps, but not
 * between one step and the next.
 */
interface Interleave {
  /** The database as each version's steps see it: that version's functions over the same tables, or its database. */
  dbs: Db[];
  /** Each version's keys where the versions have databases of their own (else the keys timeSteps is given). */
  keys?: (readonly Key[])[];
  /**
   * Which version takes the odd steps: the step after another differs from it by a per cent or two whatever the
   * versions (an A/A run shows it), so the rounds take turns and that difference cancels over an even count.
   */
  offset: number;
  /** Told each timed step's version, wall time (ms) and backends' CPU (s; null where they cannot be read). */
  sample(version: number, wallMs: number, cpuSeconds: number | null): void;
}

/** The functions a step calls, copied into each version's schema. */
const STEP_FUNCTIONS = [
  'advance_payments',
  'reserve_payments',
  'book_payments',
  'consume_nonces',
  'payment_rail_reference',
];

/**
 * Copies the step's migrated functions into schema, each resolving names there first (so a version's
 * advance_payments calls its own reserve_payments), then runs sql there: a candidate's CREATE OR REPLACE FUNCTION
 * statements, unqualified, replace the copies. Triggers and tables stay shared.
 */
async function installVersion(db: Db, schema: string, sql: string | undefined): Promise<void> {
  const { rows } = await db.query<{ def: string }>(
    `SELECT pg_get_functiondef(p.oid) AS def FROM pg_proc p
     WHERE p.pronamespace = 'public'::regnamespace AND p.proname = ANY ($1)`,
    [STEP_FUNCTIONS],
  );
  await db.tx(async (q) => {
    await q.exec(`DROP SCHEMA IF EXISTS ${schema} CASCADE; CREATE SCHEMA ${schema}`);
    await q.exec(`SET LOCAL search_path = ${schema}, public`);
    for (const r of rows) {
      await q.exec(r.def.replace(/^CREATE OR REPLACE FUNCTION public\./, `CREATE FUNCTION ${schema}.`));
    }
    if (sql !== undefined) await q.exec(sql);
    const own = await q.query<{ sig: string }>(
      'SELECT p.oid::regprocedure::text AS sig FROM pg_proc p WHERE p.pronamespace = $1::regnamespace',
      [schema],
    );
    for (const f of own.rows) await q.exec(`ALTER FUNCTION ${f.sig} SET search_path = ${schema}, public`);
  });
}

/** db with the step's calls made to the functions of schema (as prepared statements of their own). */
export function inSchema(db: Db, schema: string): Db {
  const rewrite = (sql: string) => {
    const out = sql.replace(/\bFROM (advance_payments|reserve_payments|book_payments)\(/g, `FROM ${schema}.$1(`);
    return preparedName(sql) === undefined ? out : prepared(out);
  };
  return {
    kind: db.kind,
    query: <R>(sql: string, params?: readonly unknown[]) => db.query<R>(rewrite(sql), params),
    exec: (sql: string) => db.exec(sql),
    tx: (fn, options) => db.tx(fn, options),
    close: () => db.close(),
  };
}

/**
 * The candidate's time over the migrated version's, from interleaved steps: the ratio of their sums in each block
 * of `block` consecutive steps, and the geometric mean of those ratios with two standard errors either side.
 */
export function interleavedRatio(samples: readonly { version: number; value: number }[], block: number) {
  const logs: number[] = [];
  for (let i = 0; i + block <= samples.length; i += block) {
    const sums = [0, 0];
    for (const s of samples.slice(i, i + block)) sums[s.version]! += s.value;
    if (sums[0]! > 0 && sums[1]! > 0) logs.push(Math.log(sums[1]! / sums[0]!));
  }
  const n = logs.length;
  const mean = logs.reduce((a, b) => a + b, 0) / n;
  const sd = Math.sqrt(logs.reduce((a, b) => a + (b - mean) ** 2, 0) / Math.max(1, n - 1));
  const se = sd / Math.sqrt(n);
  return { ratio: Math.exp(mean), low: Math.exp(mean - 2 * se), high: Math.exp(mean + 2 * se), blocks: n };
}

/** Runs `steps` steps of `batch` payments on db (seeded with keys) and times them. */
export async function timeSteps(
  db: Db,
  keys: readonly Key[],
  batch: number,
  steps: number,
  joint: boolean,
  interleave?: Interleave,
) {
  const runTag = randomBytes(4).toString('hex');
  const dbs = interleave?.dbs ?? [db];
  // A key's nonces rise across versions that share its row (one database) and apart where they do not.
  const lastNonce = new Map<string, bigint>();
  let n = 0;
  // Each version books what it reserved: in two databases the other's payments are not there.
  const pending: Payment[][] = dbs.map(() => []);
  let elapsed = 0;
  let databaseCpu: number | null = 0;
  let processCpu = 0;
  // Read before the first step: a connection the pool opens later (it does not, one step at a time) goes uncounted.
  const pids = [...new Set((await Promise.all(dbs.map(backendPids))).flat())];
  for (let s = 0; s <= steps; s++) {
    const version = interleave === undefined ? 0 : (s + interleave.offset) % dbs.length;
    const versionKeys = interleave?.keys?.[version] ?? keys;
    const items: ReserveItem[] = [];
    for (let i = 0; i < batch && s < steps; i++, n++) {
      const key = versionKeys[n % versionKeys.length]!;
      const nonce = (lastNonce.get(key.keyId) ?? BigInt(Date.now()) * 1_000_000n) + 1n;
      lastNonce.set(key.keyId, nonce);
      items.push(reserveItem(key, n, nonce, runTag));
    }
    const book = pending[version]!.map((payment) => ({ payment, outcome: { kind: 'completed' } as const }));
    const counted = s > 0 && s < steps;
    const cpu0 = counted ? runSeconds(pids) : new Map<number, number>();
    const proc0 = process.cpuUsage();
    const t0 = performance.now();
    // Joint: one call books the previous batch and reserves this one; separate: the booking, then the reserve.
    const stepDb = dbs[version]!;
    const first = await advanceBatch(stepDb, stepDb, systemClock, joint ? items : [], book);
    for (const b of first.booked) if (!b.ok) throw b.error;
    const { reserved } = joint ? first : await advanceBatch(stepDb, stepDb, systemClock, items, []);
    // The first step has nothing to book and the last nothing to reserve: neither is timed.
    if (counted) {
      const wall = performance.now() - t0;
      elapsed += wall;
      const used = process.cpuUsage(proc0);
      processCpu += (used.user + used.system) / 1e6;
      const backendRun = runDelta(cpu0, runSeconds(pids));
      databaseCpu = databaseCpu === null || backendRun === null ? null : databaseCpu + backendRun;
      interleave?.sample(version, wall, backendRun);
    }
    pending[version] = reserved.map((r) => {
      if (r.ok && r.value.kind === 'created') return r.value.payment;
      throw new Error(`a reserve answered ${r.ok ? r.value.kind : String(r.error)}`);
    });
  }
  const timed = Math.max(1, steps - 1);
  const payments = timed * batch;
  return {
    steps: timed,
    batch,
    msPerStep: elapsed / timed,
    msPerPayment: elapsed / payments,
    databaseCpuUsPerPayment: pids.length === 0 || databaseCpu === null ? null : (databaseCpu * 1e6) / payments,
    processCpuUsPerPayment: (processCpu * 1e6) / payments,
  } satisfies StepTiming;
}

/**
 * Two versions of the step alternated step by step over STEP_ROUNDS rounds of `steps` steps, and the candidate's
 * (the second's) time over the migrated one's.
 */
async function runInterleaved(
  db: Db,
  keys: readonly Key[],
  batch: number,
  steps: number,
  joint: boolean,
  versions: Pick<Interleave, 'dbs' | 'keys'>,
): Promise<void> {
  const wall: { version: number; value: number }[] = [];
  const cpu: { version: number; value: number }[] = [];
  const interleave: Interleave = {
    ...versions,
    offset: 0,
    sample(version, wallMs, cpuSeconds) {
      wall.push({ version, value: wallMs });
      if (cpuSeconds !== null) cpu.push({ version, value: cpuSeconds });
    },
  };
  await timeSteps(db, keys, batch, 20, joint, interleave);
  wall.length = 0;
  cpu.length = 0;
  const rounds = 2 * Math.ceil(Number(process.env['STEP_ROUNDS'] ?? 4) / 2);
  for (let r = 0; r < rounds; r++) {
    interleave.offset = r % 2;
    await timeSteps(db, keys, batch, steps, joint, interleave);
  }
  const block = Number(process.env['STEP_BLOCK'] ?? 20);
  for (const [measure, samples] of [
    ['wall', wall],
    ['database CPU', cpu],
  ] as const) {
    if (samples.length < 2 * block) continue;
    const perPayment = (v: number) => {
      const xs = samples.filter((s) => s.version === v).map((s) => s.value);
      const scale = measure === 'wall' ? 1000 : 1e6;
      return ((xs.reduce((a, b) => a + b, 0) / xs.length) * scale) / batch;
    };
    const { ratio, low, high, blocks } = interleavedRatio(samples, block);
    process.stdout.write(
      `${measure}: migrated ${perPayment(0).toFixed(0)} µs a payment, candidate ${perPayment(1).toFixed(0)}; ` +
        `candidate / migrated ${ratio.toFixed(3)} (${low.toFixed(3)}-${high.toFixed(3)}, ${blocks} blocks of ` +
        `${block} steps)\n`,
    );
  }
}

async function main(): Promise<void> {
  const backend = process.argv[2] === 'postgres' ? 'postgres' : 'embedded';
  const batch = Number(process.argv[3] ?? 12);
  const steps = Number(process.argv[4] ?? 300);
  // As the pipeline runs them (payments/pipeline.ts) unless STEP_JOINT says otherwise.
  const joint = process.env['STEP_JOINT'] === undefined ? backend === 'postgres' : process.env['STEP_JOINT'] === '1';
  const postgresUrl =
    process.env['BENCH_DATABASE_URL'] ?? process.env['DATABASE_URL'] ?? 'postgres://postgres@127.0.0.1:5432/test';
  const setup = await inProcessSetup(backend, postgresUrl, 'step');
  const { db } = setup;
  const setups = [setup];
  try {
    const keys = await seeded(setup);
    // Warm-up: plans, caches, the first rows of each key's day.
    await timeSteps(db, keys, batch, 20, joint);
    const interleave = process.env['STEP_INTERLEAVE'];
    const candidate = process.env['STEP_SQL'] ? await readFile(process.env['STEP_SQL'], 'utf8') : undefined;
    if (interleave === '1') {
      await installVersion(db, 'step_a', undefined);
      await installVersion(db, 'step_b', candidate);
      const dbs = [inSchema(db, 'step_a'), inSchema(db, 'step_b')];
      await runInterleaved(db, keys, batch, steps, joint, { dbs });
      return;
    }
    if (interleave === 'databases') {
      // A second database, migrated and seeded alike, with STEP_SQL run over it: any change (an index, a table's
      // storage, a trigger), where the schemas above can only hold functions.
      const other = await inProcessSetup(backend, process.env['STEP_OTHER_URL'] ?? postgresUrl, 'step');
      setups.push(other);
      const otherKeys = await seeded(other);
      if (candidate !== undefined) await other.db.exec(candidate);
      await timeSteps(other.db, otherKeys, batch, 20, joint);
      await runInterleaved(db, keys, batch, steps, joint, { dbs: [db, other.db], keys: [keys, otherKeys] });
      return;
    }
    // A candidate version of the step's SQL, alternated round by round with the migrated one (STEP_SQL_BASE: the
    // SQL that puts the migrated version back), so both see the same minutes of the machine.
    const versions: [string, string | undefined][] = [['', undefined]];
    if (process.env['STEP_SQL']) {
      versions[0] = ['candidate ', await readFile(process.env['STEP_SQL'], 'utf8')];
      if (process.env['STEP_SQL_BASE'])
        versions.push(['migrated  ', await readFile(process.env['STEP_SQL_BASE'], 'utf8')]);
    }
    const rounds = Number(process.env['STEP_ROUNDS'] ?? 3);
    // Per version, per round: wall time, the database's CPU and this process's, each in µs a payment.
    const measures = ['wall', 'database CPU', 'process CPU'] as const;
    const perPayment: (number | null)[][][] = versions.map(() => measures.map(() => []));
    for (let r = 0; r < rounds; r++) {
      for (const [v, [label, sql]] of versions.entries()) {
        if (sql !== undefined) {
          await db.exec(sql);
          await timeSteps(db, keys, batch, 10, joint);
        }
        const t = await timeSteps(db, keys, batch, steps, joint);
        const values = [t.msPerPayment * 1000, t.databaseCpuUsPerPayment, t.processCpuUsPerPayment];
        values.forEach((value, m) => {
          perPayment[v]![m]!.push(value);
        });
        const own = `${t.processCpuUsPerPayment.toFixed(0)} µs this process`;
        const cpu =
          t.databaseCpuUsPerPayment === null
            ? `, CPU ${own}`
            : `, CPU ${t.databaseCpuUsPerPayment.toFixed(0)} µs database / ${own}`;
        process.stdout.write(
          `${label}${backend} ${joint ? 'joint' : 'separate'} batch ${batch}: ${t.msPerStep.toFixed(2)} ms a step, ` +
            `${(t.msPerPayment * 1000).toFixed(0)} µs a payment${cpu} (${t.steps} steps)\n`,
        );
      }
    }
    const quartiles = (xs: number[]) => {
      const sorted = [...xs].sort((a, b) => a - b);
      const at = (f: number) => sorted[Math.floor(f * sorted.length)]!;
      return { q1: at(0.25), median: at(0.5), q3: at(0.75), best: sorted[0]! };
    };
    measures.forEach((measure, m) => {
      for (const [v, [label]] of versions.entries()) {
        const xs = perPayment[v]![m]!;
        if (xs.some((x) => x === null)) continue;
        const { median, best } = quartiles(xs as number[]);
        process.stdout.write(`${label}${measure}: median ${median.toFixed(0)} µs a payment, best ${best.toFixed(0)}\n`);
      }
      if (versions.length !== 2) return;
      const c = perPayment[0]![m]!;
      const b = perPayment[1]![m]!;
      if (c.some((x) => x === null) || b.some((x) => x === null)) return;
      // Each round's candidate against the migrated version measured right after it: the machine's drift cancels.
      const { q1, median, q3 } = quartiles(c.map((x, i) => x! / b[i]!));
      process.stdout.write(
        `candidate / migrated, ${measure}, round by round: median ${median.toFixed(3)} ` +
          `(quartiles ${q1.toFixed(3)}-${q3.toFixed(3)})\n`,
      );
    });
  } finally {
    for (const s of setups) await s.cleanup();
  }
}

/** Clients and keys seeded through the admin API of the service started over setup's database (then stopped). */
async function seeded(setup: InProcessSetup): Promise<Key[]> {
  const running = await start({ config: setup.config, db: setup.db, logger: createLogger('warn') });
  try {
    return await seedClients(createAdminCaller(running.adminUrl, setup.config.adminToken), {
      clients: 8,
      keysPerClient: 4,
      fundMinor: 10n ** 15n,
      label: 'step',
    });
  } finally {
    await running.stop();
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === path.resolve(new URL(import.meta.url).pathname)) {
  await main();
}
