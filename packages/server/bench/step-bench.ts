import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { Db } from '../src/db/db.ts';
import { createLogger } from '../src/logger.ts';
import { advanceBatch } from '../src/payments/advance.ts';
import type { ReserveItem } from '../src/payments/create.ts';
import { paymentFingerprint } from '../src/payments/fingerprint.ts';
import type { Payment } from '../src/payments/repository.ts';
import { start } from '../src/server.ts';
import { systemClock } from '../src/shared/clock.ts';
import { inProcessSetup } from './in-process.ts';
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

/** Runs `steps` steps of `batch` payments on db (seeded with keys) and times them. */
export async function timeSteps(db: Db, keys: readonly Key[], batch: number, steps: number, joint: boolean) {
  const runTag = randomBytes(4).toString('hex');
  const nonces = keys.map(() => BigInt(Date.now()) * 1_000_000n);
  let n = 0;
  let pending: Payment[] = [];
  let elapsed = 0;
  let databaseCpu: number | null = 0;
  let processCpu = 0;
  // Read before the first step: a connection the pool opens later (it does not, one step at a time) goes uncounted.
  const pids = await backendPids(db);
  const book = () => pending.map((payment) => ({ payment, outcome: { kind: 'completed' } as const }));
  for (let s = 0; s <= steps; s++) {
    const items: ReserveItem[] = [];
    for (let i = 0; i < batch && s < steps; i++, n++) {
      const k = n % keys.length;
      nonces[k]! += 1n;
      items.push(reserveItem(keys[k]!, n, nonces[k]!, runTag));
    }
    const counted = s > 0 && s < steps;
    const cpu0 = counted ? runSeconds(pids) : new Map<number, number>();
    const proc0 = process.cpuUsage();
    const t0 = performance.now();
    // Joint: one call books the previous batch and reserves this one; separate: the booking, then the reserve.
    const first = await advanceBatch(db, systemClock, joint ? items : [], book());
    for (const b of first.booked) if (!b.ok) throw b.error;
    const { reserved } = joint ? first : await advanceBatch(db, systemClock, items, []);
    // The first step has nothing to book and the last nothing to reserve: neither is timed.
    if (counted) {
      elapsed += performance.now() - t0;
      const used = process.cpuUsage(proc0);
      processCpu += (used.user + used.system) / 1e6;
      const backendRun = runDelta(cpu0, runSeconds(pids));
      databaseCpu = databaseCpu === null || backendRun === null ? null : databaseCpu + backendRun;
    }
    pending = reserved.map((r) => {
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

async function main(): Promise<void> {
  const backend = process.argv[2] === 'postgres' ? 'postgres' : 'embedded';
  const batch = Number(process.argv[3] ?? 12);
  const steps = Number(process.argv[4] ?? 300);
  // As the pipeline runs them (payments/pipeline.ts) unless STEP_JOINT says otherwise.
  const joint = process.env['STEP_JOINT'] === undefined ? backend === 'postgres' : process.env['STEP_JOINT'] === '1';
  const postgresUrl =
    process.env['BENCH_DATABASE_URL'] ?? process.env['DATABASE_URL'] ?? 'postgres://postgres@127.0.0.1:5432/test';
  const setup = await inProcessSetup(backend, postgresUrl, 'step');
  const { db, config } = setup;
  try {
    const running = await start({ config, db, logger: createLogger('warn') });
    let keys: Key[];
    try {
      keys = await seedClients(createAdminCaller(running.adminUrl, config.adminToken), {
        clients: 8,
        keysPerClient: 4,
        fundMinor: 10n ** 15n,
        label: 'step',
      });
    } finally {
      await running.stop();
    }
    // Warm-up: plans, caches, the first rows of each key's day.
    await timeSteps(db, keys, batch, 20, joint);
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
    await setup.cleanup();
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === path.resolve(new URL(import.meta.url).pathname)) {
  await main();
}
