import { completedPaymentBody } from './seed.ts';
import type { CoreShare } from './server-process.ts';
import type { SignInput } from './signing.ts';

/**
 * What the parent asks the load driver (a separate process) to do, and what it reports back.
 *
 * A lane is one API key. Every request of a lane is fully determined by (job, lane, index): nonce, idempotency
 * key, body and target. So requests can be signed ahead in worker threads (only signatures travel back) and,
 * when the pre-signed pool runs dry, the driver signs the very same request in the loop.
 */

export type Scenario = 'create-payment' | 'get-payment';

export interface Lane {
  apiKey: string;
  privatePem: string;
  /** Decimal; request i of this lane carries nonce nonceStart + i. */
  nonceStart: string;
  /** get-payment: the payments this lane reads, in turn. */
  paymentIds: string[];
}

export interface LoadJob {
  baseUrl: string;
  scenario: Scenario;
  /** Unique per run: part of every idempotency key. */
  runTag: string;
  lanes: Lane[];
  connections: number;
  /** The timed run. */
  seconds: number;
  /** Load before the timed run that nothing is measured of but its failures (http-load.ts, warmupSeconds). */
  warmupSeconds: number;
  /** Requests signed before the load (warm-up and timed run), over all lanes. */
  poolSize: number;
  /** Pre-signing stops after this long, whatever the pool size (the rest is signed in the loop). */
  presignSeconds: number;
  /** Worker threads that pre-sign. */
  signThreads: number;
  /** The generator: plain sockets (http-load.ts, the default) or autocannon. Default: generatorOf(process.env). */
  generator?: Generator;
  /**
   * The target checks neither nonces nor idempotency keys (the floor, floor-server.ts): a lane whose pre-signed
   * requests are used up sends them again from its first instead of signing in the loop. Signing in the loop
   * takes a quarter of a millisecond of the generator's CPU a request, from the two cores the target runs on;
   * the floor answers faster than any pool sized for the service's targets lasts, and its figure would be the
   * generator's signing rate instead of the floor's.
   */
  reusePool?: boolean;
}

export type Generator = 'sockets' | 'autocannon';

/**
 * BENCH_GENERATOR: `sockets` (default) or `autocannon`, the generator of the full runs up to 20:20 on 2026-11-28
 * (docs/performance-log.md), kept so that a figure can be taken again the way those were.
 */
export function generatorOf(env: NodeJS.ProcessEnv): Generator {
  const g = env['BENCH_GENERATOR'] ?? 'sockets';
  if (g !== 'sockets' && g !== 'autocannon') throw new Error(`BENCH_GENERATOR must be sockets or autocannon, not ${g}`);
  return g;
}

export interface LoadResult {
  scenario: Scenario;
  connections: number;
  durationSeconds: number;
  /** Responses received within the timed run. */
  requests: number;
  /**
   * Every response of the load: the warm-up's, the timed run's, and those in flight at its end. What the
   * database did is counted over the whole load (its statistics lag up to a second behind its work, too far to
   * read at the timed run's start), and so is divided by this.
   */
  answered: number;
  /** Responses in each whole second of the load, the warm-up's first (http-load.ts; empty with autocannon). */
  answersBySecond: number[];
  /** Responses per second over the run. */
  rps: number;
  latencyMs: { p50: number; p90: number; p99: number; max: number; mean: number };
  non2xx: number;
  errors: number;
  timeouts: number;
  statusCounts: Record<string, number>;
  /** First few non-2xx answers, to say why. */
  failureSamples: string[];
  /** Requests pre-signed (fewer than the pool size when pre-signing hit its time limit). */
  preSigned: number;
  /** Requests that had to be signed during the timed run (the pool ran dry). */
  signedInLoop: number;
  /** Pre-signed requests sent again after their lane's pool was used up (reusePool only). */
  reused: number;
  presignMs: number;
  /** CPU the load generator itself used during the timed run, in % of one core. */
  driverCpuPercent: number;
  /** Its main thread's share of the timed run on a core and waiting for one; null without /proc. */
  driverCores: CoreShare | null;
  /** Times no lane was free and a busy one was reused (a nonce race; should stay 0). */
  laneSteals: number;
}

/** The line under a run's figures with its answers by second, or null when there are none (autocannon). */
export function answersBySecondLine(result: LoadResult, warmupSeconds: number): string | null {
  if (result.answersBySecond.length === 0) return null;
  return `answers by second (the first ${warmupSeconds} the warm-up): ${result.answersBySecond.join(' ')}`;
}

export function requestOf(job: Pick<LoadJob, 'scenario' | 'runTag' | 'lanes'>, lane: number, i: number): SignInput {
  const l = job.lanes[lane]!;
  const nonce = (BigInt(l.nonceStart) + BigInt(i)).toString();
  if (job.scenario === 'create-payment') {
    return {
      method: 'POST',
      target: '/v2/payments',
      apiKey: l.apiKey,
      idempotencyKey: `bench-${job.runTag}-${lane}-${i}`,
      body: JSON.stringify(completedPaymentBody(lane * 31 + i)),
      nonce,
    };
  }
  const id = l.paymentIds[i % l.paymentIds.length];
  if (id === undefined) throw new Error(`lane ${lane} has no payment to read`);
  return { method: 'GET', target: `/v2/payments/${id}`, apiKey: l.apiKey, body: '', nonce };
}
