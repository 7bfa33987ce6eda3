import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { runLoad } from './load.ts';
import { answersBySecondLine, type Lane, type Scenario } from './load-job.ts';
import { cpuSecondsOf, freePort } from './server-process.ts';
import { generateKeyPairs } from './signing.ts';

/**
 * Measures the floor (floor-server.ts) with the same load generator, connections, lanes and pre-signed requests
 * as the service's runs, in the same bench run, so each figure of the service is quoted as a ratio to it.
 */

const FLOOR_SERVER = fileURLToPath(new URL('./floor-server.ts', import.meta.url));

export interface FloorResult {
  scenario: Scenario;
  rps: number;
  p50: number;
  p99: number;
  /** CPU the floor server used per request, ms. */
  cpuMsPerRequest: number | null;
  /** req/s of each measurement this figure combines, in the order taken. */
  measured: number[];
  /** Requests the generator had to sign during the timed runs (0: the floor is the server's, not the signing's). */
  signedInLoop: number;
}

/** The load generator's CPU a request, ms. */
const loadCpuMs = (r: { driverCpuPercent: number; rps: number }): number | null =>
  r.rps > 0 ? Math.round((r.driverCpuPercent * 10_000) / r.rps) / 1000 : null;

const mean = (xs: readonly number[]): number => xs.reduce((a, b) => a + b, 0) / xs.length;

/**
 * The floor measured before and after the service's runs, as one figure per scenario: the mean of the two, each
 * kept in `measured`. On the 2-core machine the GET floor moved by a third from one run to the next while the
 * service's figures moved less (docs/performance-log.md), so one reading of the floor taken minutes before the
 * service's could decide a verdict by itself; the service's runs bracketed by two, and the spread printed beside
 * the ratio, say how far the ratio can be trusted.
 */
export function bracketFloor(before: readonly FloorResult[], after: readonly FloorResult[]): FloorResult[] {
  return before.map((b) => {
    const a = after.find((x) => x.scenario === b.scenario);
    if (a === undefined) return b;
    const cpu =
      b.cpuMsPerRequest === null || a.cpuMsPerRequest === null ? null : mean([b.cpuMsPerRequest, a.cpuMsPerRequest]);
    return {
      scenario: b.scenario,
      rps: Math.round(mean([b.rps, a.rps])),
      p50: Math.round(mean([b.p50, a.p50])),
      p99: Math.round(mean([b.p99, a.p99])),
      cpuMsPerRequest: cpu === null ? null : Math.round(cpu * 1000) / 1000,
      measured: [...b.measured, ...a.measured],
      signedInLoop: b.signedInLoop + a.signedInLoop,
    };
  });
}

/** How far the measurements of a floor figure lie apart, as a share of their mean (0 for one measurement). */
export function floorSpread(f: FloorResult): number {
  if (f.measured.length < 2) return 0;
  return (Math.max(...f.measured) - Math.min(...f.measured)) / mean(f.measured);
}

/** The floor server, started as its own process for the given lanes' keys. */
export interface FloorServer {
  baseUrl: string;
  pid: number;
  stop(): Promise<void>;
}

export async function startFloorServer(lanes: readonly Lane[]): Promise<FloorServer> {
  const dir = await mkdtemp(path.join(tmpdir(), 'dispersa-floor-'));
  const keysFile = path.join(dir, 'keys.json');
  await writeFile(keysFile, JSON.stringify(Object.fromEntries(lanes.map((l) => [l.apiKey, l.privatePem]))));
  const port = await freePort();
  const child = spawn(process.execPath, ['--import', 'tsx', FLOOR_SERVER], {
    env: { ...process.env, FLOOR_KEYS: keysFile, FLOOR_PORT: String(port) },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  const stop = async () => {
    child.kill('SIGKILL');
    await rm(dir, { recursive: true, force: true });
  };
  const baseUrl = `http://127.0.0.1:${port}`;
  try {
    const deadline = Date.now() + 30_000;
    for (;;) {
      try {
        if ((await fetch(`${baseUrl}/health`)).ok) break;
      } catch {
        // not listening yet
      }
      if (Date.now() > deadline) throw new Error('floor server did not start');
      await new Promise((r) => setTimeout(r, 50));
    }
  } catch (err) {
    await stop();
    throw err;
  }
  return { baseUrl, pid: child.pid!, stop };
}

/** One lane a connection, each with a fresh key; the floor reads no payment, so any id will do. */
export async function floorLanes(count: number): Promise<Lane[]> {
  const pairs = await generateKeyPairs(count);
  return pairs.map((p, i) => ({
    apiKey: `floor-${i}-${randomBytes(8).toString('hex')}`,
    privatePem: p.privatePem,
    nonceStart: '1',
    paymentIds: ['pay_0000000000000001'],
  }));
}

export async function benchFloor(o: {
  scenarios: Scenario[];
  connections: number;
  seconds: number;
  warmupSeconds: number;
  pool: Record<Scenario, number>;
  signThreads: number;
  presignSeconds: number;
  log: (line: string) => void;
}): Promise<FloorResult[]> {
  const lanes = await floorLanes(o.connections);
  const server = await startFloorServer(lanes);
  try {
    const results: FloorResult[] = [];
    for (const scenario of o.scenarios) {
      let cpuStart: { cpu: number | null; at: number } | null = null;
      const result = await runLoad(
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
          // The floor answers faster than a pool sized for the service's targets lasts (a POST floor of 10,000/s
          // against 3,500/s × BENCH_SECONDS signed); it checks no nonce, so its lanes send their pool again.
          reusePool: true,
        },
        () => {
          cpuStart = { cpu: cpuSecondsOf(server.pid), at: performance.now() };
        },
      );
      const start = cpuStart as { cpu: number | null; at: number } | null;
      const cpuEnd = cpuSecondsOf(server.pid);
      const cpuMsPerRequest =
        start === null || start.cpu === null || cpuEnd === null || result.requests === 0
          ? null
          : Math.round(((cpuEnd - start.cpu) * 1e6) / result.requests) / 1000;
      results.push({
        scenario,
        rps: result.rps,
        p50: result.latencyMs.p50,
        p99: result.latencyMs.p99,
        cpuMsPerRequest,
        measured: [result.rps],
        signedInLoop: result.signedInLoop,
      });
      o.log(
        `[floor] ${scenario}: ${result.rps} req/s, p50 ${result.latencyMs.p50} ms, p99 ${result.latencyMs.p99} ms; CPU ms/req server ${cpuMsPerRequest}, load generator ${loadCpuMs(result)}; pre-signed ${result.preSigned}, sent again ${result.reused}, signed in loop ${result.signedInLoop}`,
      );
      const seconds = answersBySecondLine(result, o.warmupSeconds);
      if (seconds !== null) o.log(`    ${seconds}`);
    }
    return results;
  } finally {
    await server.stop();
  }
}
