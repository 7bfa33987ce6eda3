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
import { createAdminCaller } from './signing.ts';

/**
 * The payment path's database step on its own: batches of reserves and bookings through advanceBatch, as the
 * pipeline makes them, with no HTTP, no rail and no background worker running beside them. What it prints (the
 * database time of a step and of a payment) moves with the machine's speed like every timing here, but it is
 * quick and steady enough to compare two versions of the step's SQL alternated in one sitting.
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
}

/** Runs `steps` steps of `batch` payments on db (seeded with keys) and times them. */
export async function timeSteps(db: Db, keys: readonly Key[], batch: number, steps: number, joint: boolean) {
  const runTag = randomBytes(4).toString('hex');
  const nonces = keys.map(() => BigInt(Date.now()) * 1_000_000n);
  let n = 0;
  let pending: Payment[] = [];
  let elapsed = 0;
  const book = () => pending.map((payment) => ({ payment, outcome: { kind: 'completed' } as const }));
  for (let s = 0; s <= steps; s++) {
    const items: ReserveItem[] = [];
    for (let i = 0; i < batch && s < steps; i++, n++) {
      const k = n % keys.length;
      nonces[k]! += 1n;
      items.push(reserveItem(keys[k]!, n, nonces[k]!, runTag));
    }
    const t0 = performance.now();
    // Joint: one call books the previous batch and reserves this one; separate: the booking, then the reserve.
    const first = await advanceBatch(db, systemClock, joint ? items : [], book());
    for (const b of first.booked) if (!b.ok) throw b.error;
    const { reserved } = joint ? first : await advanceBatch(db, systemClock, items, []);
    // The first step has nothing to book and the last nothing to reserve: neither is timed.
    if (s > 0 && s < steps) elapsed += performance.now() - t0;
    pending = reserved.map((r) => {
      if (r.ok && r.value.kind === 'created') return r.value.payment;
      throw new Error(`a reserve answered ${r.ok ? r.value.kind : String(r.error)}`);
    });
  }
  const timed = Math.max(1, steps - 1);
  return { steps: timed, batch, msPerStep: elapsed / timed, msPerPayment: elapsed / timed / batch };
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
    const perPayment: number[][] = versions.map(() => []);
    for (let r = 0; r < rounds; r++) {
      for (const [v, [label, sql]] of versions.entries()) {
        if (sql !== undefined) {
          await db.exec(sql);
          await timeSteps(db, keys, batch, 10, joint);
        }
        const t = await timeSteps(db, keys, batch, steps, joint);
        perPayment[v]!.push(t.msPerPayment * 1000);
        process.stdout.write(
          `${label}${backend} ${joint ? 'joint' : 'separate'} batch ${batch}: ${t.msPerStep.toFixed(2)} ms a step, ` +
            `${(t.msPerPayment * 1000).toFixed(0)} µs a payment (${t.steps} steps)\n`,
        );
      }
    }
    for (const [v, [label]] of versions.entries()) {
      const sorted = [...perPayment[v]!].sort((a, b) => a - b);
      const median = sorted[Math.floor(sorted.length / 2)]!;
      process.stdout.write(`${label}median ${median.toFixed(0)} µs a payment, best ${sorted[0]!.toFixed(0)}\n`);
    }
    if (versions.length === 2) {
      // Each round's candidate against the migrated version timed right after it: the machine's drift cancels.
      const ratios = perPayment[0]!.map((c, i) => c / perPayment[1]![i]!).sort((a, b) => a - b);
      const mid = ratios[Math.floor(ratios.length / 2)]!;
      const q1 = ratios[Math.floor(ratios.length / 4)]!;
      const q3 = ratios[Math.floor((3 * ratios.length) / 4)]!;
      process.stdout.write(
        `candidate / migrated, round by round: median ${mid.toFixed(3)} (quartiles ${q1.toFixed(3)}-${q3.toFixed(3)})\n`,
      );
    }
  } finally {
    await setup.cleanup();
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === path.resolve(new URL(import.meta.url).pathname)) {
  await main();
}
