import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import { type HttpLoadResult, runHttpLoad } from './http-load.ts';
import { laneRequests } from './lane-requests.ts';
import type { DriverMessage } from './load.ts';
import type { LoadJob, LoadResult } from './load-job.ts';
import { requestOf } from './load-job.ts';
import { coreShare, schedOf } from './server-process.ts';
import type { SignWork } from './sign-worker.ts';
import { privateKeyOf, signatureOf } from './signing.ts';

/**
 * The load generator, run as its own process (forked by load.ts) so that it never shares a CPU thread with the
 * server. It receives one LoadJob over IPC, pre-signs a pool of requests in worker threads, drives them over
 * plain sockets (http-load.ts; autocannon when the job asks for it), and sends back a LoadResult.
 *
 * Nonces: POST needs a nonce strictly above the key's mark, so two requests of one key must never be in flight
 * at once (the later could overtake the earlier and turn it into a replay). Each request therefore takes a
 * lane (a key) that has nothing in flight, and gives it back when its answer arrives; with at least as many
 * lanes as connections a lane is always free.
 */

// autocannon ships no type declarations; this is the part used here.
interface AutocannonRequest {
  setupRequest?: (req: Record<string, unknown>, context: Record<string, unknown>) => Record<string, unknown> | null;
  onResponse?: (status: number, body: string, context: Record<string, unknown>) => void;
}
interface AutocannonResult {
  duration: number;
  requests: { total: number; average: number };
  latency: { p50: number; p90: number; p99: number; max: number; average: number };
  non2xx: number;
  errors: number;
  timeouts: number;
  statusCodeStats: Record<string, { count: number }>;
}
type Autocannon = (opts: Record<string, unknown>) => Promise<AutocannonResult>;
const autocannon = createRequire(import.meta.url)('autocannon') as Autocannon;

// A worker thread does not inherit the tsx loader of `--import tsx`: the bootstrap registers it, then loads the
// TypeScript worker module.
const BOOT = `const { workerData } = require('node:worker_threads');
import(workerData.boot.tsx).then((tsx) => { tsx.register(); return import(workerData.boot.entry); });`;
const BOOT_PATHS = {
  tsx: import.meta.resolve('tsx/esm/api'),
  entry: new URL('./sign-worker.ts', import.meta.url).href,
};

async function presign(job: LoadJob, perLane: number): Promise<string[][]> {
  const signatures: string[][] = job.lanes.map(() => []);
  if (perLane === 0) return signatures;
  const threads = Math.max(1, Math.min(job.signThreads, job.lanes.length));
  const shares: number[][] = Array.from({ length: threads }, () => []);
  for (let lane = 0; lane < job.lanes.length; lane++) shares[lane % threads]!.push(lane);
  const { runTag, scenario, lanes } = job;
  await Promise.all(
    shares.map(
      (share) =>
        new Promise<void>((resolve, reject) => {
          const work: SignWork = {
            job: { runTag, scenario, lanes },
            lanes: share,
            perLane,
            deadline: Date.now() + job.presignSeconds * 1000,
          };
          const worker = new Worker(BOOT, { eval: true, workerData: { ...work, boot: BOOT_PATHS } });
          worker.once('message', (out: { lane: number; signatures: string[] }[]) => {
            for (const o of out) signatures[o.lane] = o.signatures;
            resolve();
          });
          worker.once('error', reject);
          worker.once('exit', (code) => {
            if (code !== 0) reject(new Error(`sign worker exited with ${code}`));
          });
        }),
    ),
  );
  return signatures;
}

async function run(job: LoadJob): Promise<LoadResult> {
  const perLane = Math.ceil(job.poolSize / job.lanes.length);
  const t0 = performance.now();
  const pool = await presign(job, perLane);
  const presignMs = performance.now() - t0;
  const presigned = pool.map((sigs) => sigs.length);

  const keys = job.lanes.map((l) => privateKeyOf(l.privatePem));
  const next = job.lanes.map(() => 0);
  const free: number[] = job.lanes.map((_, i) => i);
  const busySince = new Map<number, number>();
  let signedInLoop = 0;
  let reused = 0;
  let laneSteals = 0;
  const statusCounts: Record<string, number> = {};
  const failureSamples: string[] = [];

  const takeLane = (): number => {
    const lane = free.shift();
    if (lane !== undefined) return lane;
    // Only after a lost answer (timeout, reset): reuse the lane busy for longest.
    laneSteals++;
    let oldest = 0;
    let since = Number.POSITIVE_INFINITY;
    for (const [l, t] of busySince) {
      if (t < since) {
        since = t;
        oldest = l;
      }
    }
    return oldest;
  };

  // The index of a lane's next request; past the end of its pool, the pool again from its first when the target
  // checks no nonce (job.reusePool), else a request signed in the loop.
  const nextIndex = (lane: number): number => {
    const i = next[lane]!++;
    const size = presigned[lane]!;
    if (job.reusePool !== true || size === 0 || i < size) return i;
    reused++;
    return i % size;
  };

  const answered = (lane: number | undefined, status: number, body: string) => {
    if (lane !== undefined && busySince.delete(lane)) free.push(lane);
    const key = String(status);
    statusCounts[key] = (statusCounts[key] ?? 0) + 1;
    if ((status < 200 || status > 299) && failureSamples.length < 5) {
      failureSamples.push(`${status} ${body.slice(0, 200)}`);
    }
  };

  // autocannon (BENCH_GENERATOR=autocannon), the generator of the full runs up to 20:20 on 2026-11-28.
  const request: AutocannonRequest = {
    setupRequest(req, context) {
      const lane = takeLane();
      busySince.set(lane, performance.now());
      context['lane'] = lane;
      const i = nextIndex(lane);
      const input = requestOf(job, lane, i);
      let signature = pool[lane]![i];
      if (signature === undefined) {
        signedInLoop++;
        signature = signatureOf(input, keys[lane]!);
      }
      const headers: Record<string, string> = {
        'x-api-key': input.apiKey,
        'x-nonce': input.nonce,
        'x-signature': signature,
      };
      if (input.idempotencyKey !== undefined) headers['idempotency-key'] = input.idempotencyKey;
      if (input.body !== '') headers['content-type'] = 'application/json';
      req['method'] = input.method;
      req['path'] = input.target;
      req['headers'] = headers;
      req['body'] = input.body;
      return req;
    },
    onResponse: (status, body, context) => answered(context['lane'] as number | undefined, status, body),
  };

  const url = new URL(job.baseUrl);
  const host = `${url.hostname}:${url.port}`;
  const generator = job.generator ?? 'sockets';
  const bytesOf = (lane: number, i: number, signature: string): Buffer => {
    const input = requestOf(job, lane, i);
    const body = Buffer.from(input.body, 'utf8');
    let head = `${input.method} ${input.target} HTTP/1.1\r\nhost: ${host}\r\nx-api-key: ${input.apiKey}\r\nx-nonce: ${input.nonce}\r\nx-signature: ${signature}\r\n`;
    if (input.idempotencyKey !== undefined) head += `idempotency-key: ${input.idempotencyKey}\r\n`;
    if (body.length > 0) head += `content-type: application/json\r\ncontent-length: ${body.length}\r\n`;
    return Buffer.concat([Buffer.from(`${head}\r\n`, 'latin1'), body]);
  };
  // The pre-signed requests' bytes are built before the timed run, the loop only writes them, and the signatures
  // are let go: the collector has nothing of the pool to walk during the run (lane-requests.ts).
  const prebuilt =
    generator === 'sockets' ? pool.map((sigs, lane) => laneRequests(sigs, (i, sig) => bytesOf(lane, i, sig))) : [];
  if (generator === 'sockets') pool.fill([]);
  const requestBytes = (lane: number): Buffer => {
    const i = nextIndex(lane);
    const ready = prebuilt[lane]!;
    if (i < ready.count) return ready.at(i);
    signedInLoop++;
    return bytesOf(lane, i, signatureOf(requestOf(job, lane, i), keys[lane]!));
  };

  // The parent measures the server and the database from this message on, so it is sent when the timed run
  // begins, after the warm-up; so is this process's own CPU taken.
  let cpuBefore = process.cpuUsage();
  let schedBefore = schedOf('self');
  const timedRunBegins = () => {
    process.send!({ kind: 'started' } satisfies DriverMessage);
    cpuBefore = process.cpuUsage();
    schedBefore = schedOf('self');
  };
  const result =
    generator === 'sockets'
      ? await runHttpLoad<number>({
          host: url.hostname,
          port: Number(url.port),
          connections: job.connections,
          seconds: job.seconds,
          warmupSeconds: job.warmupSeconds,
          onTimed: timedRunBegins,
          timeoutMs: 10_000,
          next() {
            const lane = takeLane();
            busySince.set(lane, performance.now());
            return { bytes: requestBytes(lane), context: lane };
          },
          onResponse: (status, body, lane) => answered(lane, status, body ?? ''),
        })
      : await autocannonWarmThenRun(url, job, request, timedRunBegins);
  const cpu = process.cpuUsage(cpuBefore);
  const schedAfter = schedOf('self');

  return {
    scenario: job.scenario,
    connections: job.connections,
    durationSeconds: result.duration,
    requests: result.total,
    answered: result.answered,
    answersBySecond: result.answersBySecond,
    rps: result.duration > 0 ? Math.round(result.total / result.duration) : 0,
    latencyMs: result.latencyMs,
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    statusCounts,
    failureSamples,
    preSigned: presigned.reduce((a, n) => a + n, 0),
    signedInLoop,
    reused,
    presignMs: Math.round(presignMs),
    laneSteals,
    driverCpuPercent: result.duration > 0 ? Math.round((cpu.user + cpu.system) / 10_000 / result.duration) : 0,
    driverCores: coreShare(schedBefore, schedAfter, result.duration),
  };
}

/**
 * autocannon's run in the shape of runHttpLoad's. Its warm-up is a run of its own, whose figures are dropped (but
 * not its failures); the timed run follows on new connections.
 */
async function autocannonWarmThenRun(
  url: URL,
  job: LoadJob,
  request: AutocannonRequest,
  onTimed: () => void,
): Promise<HttpLoadResult> {
  const warm = job.warmupSeconds > 0 ? await autocannonRun(url, job.connections, job.warmupSeconds, request) : null;
  onTimed();
  const timed = await autocannonRun(url, job.connections, job.seconds, request);
  if (warm === null) return timed;
  return {
    ...timed,
    answered: warm.answered + timed.answered,
    non2xx: warm.non2xx + timed.non2xx,
    errors: warm.errors + timed.errors,
    timeouts: warm.timeouts + timed.timeouts,
  };
}

async function autocannonRun(
  url: URL,
  connections: number,
  seconds: number,
  request: AutocannonRequest,
): Promise<HttpLoadResult> {
  const r = await autocannon({
    url: `${url.origin}/`,
    connections,
    pipelining: 1,
    duration: seconds,
    timeout: 10,
    requests: [request],
  });
  return {
    duration: r.duration,
    total: r.requests.total,
    answered: r.requests.total,
    answersBySecond: [],
    latencyMs: {
      p50: r.latency.p50,
      p90: r.latency.p90,
      p99: r.latency.p99,
      max: r.latency.max,
      mean: Math.round(r.latency.average * 100) / 100,
    },
    non2xx: r.non2xx,
    errors: r.errors,
    timeouts: r.timeouts,
  };
}

process.once('message', (job: LoadJob) => {
  run(job).then(
    (result) => process.send!({ kind: 'done', ok: true, result } satisfies DriverMessage, () => process.exit(0)),
    (err: unknown) => {
      const error = err instanceof Error ? (err.stack ?? err.message) : String(err);
      process.send!({ kind: 'done', ok: false, error } satisfies DriverMessage, () => process.exit(1));
    },
  );
});
