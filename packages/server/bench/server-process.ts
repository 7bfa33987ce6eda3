import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import net from 'node:net';
import { fileURLToPath } from 'node:url';

/**
 * The real service as a child process, for the benchmark (`node dist/main.js`, what `npm start` runs) and the crash
 * test (`node --import tsx src/main.ts`, the sources under test, whether or not they were built):
 * its own CPU thread, its own memory (RSS read from /proc), and a process that can be SIGKILLed like a real
 * deployment. Loopback only.
 */

export const REPO_ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const MAIN = fileURLToPath(new URL('../src/main.ts', import.meta.url));
const BUILT_MAIN = fileURLToPath(new URL('../dist/main.js', import.meta.url));

export interface ServerProcessOptions {
  dataDir: string;
  adminToken: string;
  /** PostgreSQL database of this server; null or absent: the embedded database under dataDir. */
  databaseUrl?: string | null;
  /** Extra DISPERSA_* variables (they win over the defaults here). */
  env?: Record<string, string>;
  /** Extra node flags, e.g. ['--cpu-prof', '--cpu-prof-dir=/tmp/prof']. */
  nodeArgs?: string[];
  /** Run the build (dist/main.js, `npm run build`) as `npm start` does, instead of the sources through tsx. */
  built?: boolean;
  readyTimeoutMs?: number;
}

export interface ServerProcess {
  readonly pid: number;
  readonly baseUrl: string;
  readonly adminUrl: string;
  /** Resident set size in kB from /proc/<pid>/status, or null once the process is gone. */
  rssKb(): number | null;
  /** CPU seconds used so far, or null once the process is gone. */
  cpuSeconds(): number | null;
  /** Its main thread's time on a core and waiting for one so far, or null once the process is gone. */
  sched(): SchedTimes | null;
  /** The last few kB of stdout and stderr, for failure messages. */
  output(): string;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** SIGKILL, resolved once the process is gone. */
  kill(): Promise<void>;
  /** SIGTERM (graceful shutdown), SIGKILL after graceMs; resolved once the process is gone. */
  stop(graceMs?: number): Promise<void>;
}

/** A port free right now on loopback (the kernel's pick). */
export async function freePort(): Promise<number> {
  const srv = net.createServer();
  await new Promise<void>((resolve, reject) => {
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => resolve());
  });
  const address = srv.address();
  await new Promise<void>((resolve) => srv.close(() => resolve()));
  if (address === null || typeof address === 'string') throw new Error('no TCP address');
  return address.port;
}

// USER_HZ: 100 on every Linux this runs on (getconf CLK_TCK).
const CLOCK_TICKS = 100;

/** CPU seconds (user + system) a process has used, from /proc/<pid>/stat; null once it is gone. */
export function cpuSecondsOf(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may contain spaces): utime and stime are the 12th and 13th.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
  } catch {
    return null;
  }
}

/** The pids of the processes named `name` (e.g. the local PostgreSQL's backends); none without /proc. */
function pidsNamed(name: string): number[] {
  let entries: string[] = [];
  try {
    entries = readdirSync('/proc');
  } catch {
    return [];
  }
  return entries
    .filter((entry) => {
      if (!/^\d+$/.test(entry)) return false;
      try {
        return readFileSync(`/proc/${entry}/comm`, 'utf8').trim() === name;
      } catch {
        return false;
      }
    })
    .map(Number);
}

/** A reading of each process named `name`, by pid; a process gone before its reading is left out. */
function byPid<T>(name: string, read: (pid: number) => T | null): Map<number, T> {
  const out = new Map<number, T>();
  for (const pid of pidsNamed(name)) {
    const value = read(pid);
    if (value !== null) out.set(pid, value);
  }
  return out;
}

/** CPU seconds of each process named `name` (e.g. the local PostgreSQL's backends), by pid; empty without /proc. */
export function cpuSecondsByPid(name: string): Map<number, number> {
  return byPid(name, cpuSecondsOf);
}

/**
 * How long a process's main thread has run on a core and how long it has waited for one while runnable, in seconds
 * (/proc/<pid>/schedstat, nanoseconds). On a machine of two cores shared by the service, its database and the load,
 * the wait is what the CPU share alone hides: a thread that runs 50 % of the time and waits 25 % has no core free
 * for a quarter of the run.
 */
export interface SchedTimes {
  run: number;
  wait: number;
}

export function schedOf(pid: number | 'self'): SchedTimes | null {
  try {
    const [run, wait] = readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ').map(Number);
    if (run === undefined || wait === undefined || !Number.isFinite(run) || !Number.isFinite(wait)) return null;
    return { run: run / 1e9, wait: wait / 1e9 };
  } catch {
    return null;
  }
}

export function schedByPid(name: string): Map<number, SchedTimes> {
  return byPid(name, schedOf);
}

/** A thread's share of a span: running on a core and waiting, runnable, for one, in % of the span. */
export interface CoreShare {
  running: number;
  waiting: number;
}

export function coreShare(before: SchedTimes | null, after: SchedTimes | null, seconds: number): CoreShare | null {
  if (before === null || after === null || seconds <= 0) return null;
  return {
    running: Math.round(((after.run - before.run) / seconds) * 100),
    waiting: Math.round(((after.wait - before.wait) / seconds) * 100),
  };
}

/**
 * The processes' shares summed (a new one counted whole, one gone by the second reading left out): for PostgreSQL's
 * backends, the cores its statements took and the time they stood runnable without one.
 */
export function summedShare(
  before: ReadonlyMap<number, SchedTimes>,
  after: ReadonlyMap<number, SchedTimes>,
  seconds: number,
): CoreShare | null {
  if (after.size === 0) return null;
  const first = { run: 0, wait: 0 };
  const second = { run: 0, wait: 0 };
  for (const [pid, times] of after) {
    const was = before.get(pid) ?? { run: 0, wait: 0 };
    first.run += was.run;
    first.wait += was.wait;
    second.run += times.run;
    second.wait += times.wait;
  }
  return coreShare(first, second, seconds);
}

/**
 * CPU seconds the processes spent between two readings: each one's growth, a new one's whole use. A process gone
 * by the second reading (a pooled connection closed when idle) counts nothing: summed, its vanished total would
 * make the spend negative.
 */
export function cpuSecondsSpent(before: ReadonlyMap<number, number>, after: ReadonlyMap<number, number>): number {
  let total = 0;
  for (const [pid, seconds] of after) total += seconds - (before.get(pid) ?? 0);
  return total;
}

export function rssKbOf(pid: number): number | null {
  try {
    const m = /^VmRSS:\s+(\d+)\s+kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) : null;
  } catch {
    return null;
  }
}

// The parent's own DISPERSA_* and DATABASE_URL must not leak into the child: it gets exactly what we pass.
function childEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (k.startsWith('DISPERSA_') || k === 'DATABASE_URL' || k.startsWith('VITEST') || k === 'NODE_OPTIONS') continue;
    env[k] = v;
  }
  return { ...env, ...extra };
}

async function waitReady(
  baseUrl: string,
  child: ChildProcess,
  exited: Promise<unknown>,
  timeoutMs: number,
  output: () => string,
): Promise<void> {
  let gone = false;
  void exited.then(() => {
    gone = true;
  });
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (gone) throw new Error(`server exited during start (code ${child.exitCode}):\n${output()}`);
    try {
      const res = await fetch(`${baseUrl}/health`, { signal: AbortSignal.timeout(1000) });
      await res.arrayBuffer();
      if (res.ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  child.kill('SIGKILL');
  throw new Error(`server not ready after ${timeoutMs} ms:\n${output()}`);
}

/**
 * Starts the service on two ports free a moment ago. Another process may take one of them in between (tests run in
 * parallel); the service then exits naming the port in use, and it is started again on two other ports.
 */
export async function startServerProcess(options: ServerProcessOptions): Promise<ServerProcess> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnPorts(options, await freePort(), await freePort());
    } catch (err) {
      if (attempt >= 5 || !(err instanceof Error && err.message.includes('address already in use'))) throw err;
    }
  }
}

async function startOnPorts(options: ServerProcessOptions, port: number, adminPort: number): Promise<ServerProcess> {
  const env = childEnv({
    DISPERSA_HOST: '127.0.0.1',
    DISPERSA_ADMIN_HOST: '127.0.0.1',
    DISPERSA_PORT: String(port),
    DISPERSA_ADMIN_PORT: String(adminPort),
    DISPERSA_DATA_DIR: options.dataDir,
    DISPERSA_ADMIN_TOKEN: options.adminToken,
    DISPERSA_LOG_LEVEL: 'warn',
    ...(options.databaseUrl ? { DATABASE_URL: options.databaseUrl } : {}),
    ...options.env,
  });
  if (options.built && !existsSync(BUILT_MAIN)) throw new Error(`${BUILT_MAIN} is missing: run npm run build first`);
  const entry = options.built ? [BUILT_MAIN] : ['--import', 'tsx', MAIN];
  const child = spawn(process.execPath, [...(options.nodeArgs ?? []), ...entry], {
    cwd: REPO_ROOT,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let tail = '';
  const keep = (chunk: Buffer) => {
    tail = (tail + chunk.toString('utf8')).slice(-8192);
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once('exit', (code, signal) => resolve({ code, signal }));
  });
  const pid = child.pid;
  if (pid === undefined) throw new Error('server process did not start');
  const baseUrl = `http://127.0.0.1:${port}`;
  await waitReady(baseUrl, child, exited, options.readyTimeoutMs ?? 60_000, () => tail);

  const isGone = () => child.exitCode !== null || child.signalCode !== null;
  return {
    pid,
    baseUrl,
    adminUrl: `http://127.0.0.1:${adminPort}`,
    rssKb: () => (isGone() ? null : rssKbOf(pid)),
    cpuSeconds: () => (isGone() ? null : cpuSecondsOf(pid)),
    sched: () => (isGone() ? null : schedOf(pid)),
    output: () => tail,
    exited,
    async kill() {
      if (!isGone()) child.kill('SIGKILL');
      await exited;
    },
    async stop(graceMs = 15_000) {
      if (!isGone()) child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      await exited;
      clearTimeout(timer);
    },
  };
}
