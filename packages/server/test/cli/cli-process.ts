import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { collectLines } from '../support/child-lines.ts';

/**
 * `dispersa` as a child process, the way a user runs it. Always spawned asynchronously: the service under test
 * lives in this same process, and a synchronous spawn would block its event loop until the CLI timed out.
 */

export const BIN = fileURLToPath(new URL('../../bin/dispersa.mjs', import.meta.url));

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
  /** stdout parsed as one JSON document. */
  json(): any;
  /** The last line of stderr parsed as the error report. */
  error(): { error: string; status?: number; traceId?: string };
}

export interface CliEnv {
  [name: string]: string | undefined;
}

/** A private HOME per test file, so nonce state files never mix with the user's or other files'. */
export async function makeHome(): Promise<{ home: string; remove(): Promise<void> }> {
  const home = await mkdtemp(path.join(tmpdir(), 'dispersa-cli-home-'));
  return { home, remove: () => rm(home, { recursive: true, force: true }) };
}

function childEnv(env: CliEnv): NodeJS.ProcessEnv {
  // Nothing of the parent's DISPERSA_* configuration leaks in: each test states what the CLI sees.
  const base: NodeJS.ProcessEnv = { PATH: process.env['PATH'], TMPDIR: process.env['TMPDIR'] };
  for (const [k, v] of Object.entries(env)) if (v !== undefined) base[k] = v;
  return base;
}

export function spawnCli(args: readonly string[], options: { env: CliEnv; cwd?: string }): ChildProcess {
  return spawn(process.execPath, [BIN, ...args], {
    env: childEnv(options.env),
    cwd: options.cwd ?? process.cwd(),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

export function runCli(
  args: readonly string[],
  options: { env: CliEnv; cwd?: string; timeoutMs?: number },
): Promise<CliResult> {
  const child = spawnCli(args, options);
  let stdout = '';
  let stderr = '';
  child.stdout!.setEncoding('utf8').on('data', (d: string) => {
    stdout += d;
  });
  child.stderr!.setEncoding('utf8').on('data', (d: string) => {
    stderr += d;
  });
  const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 20_000);
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({
        code,
        stdout,
        stderr,
        json() {
          try {
            return JSON.parse(stdout);
          } catch {
            throw new Error(`stdout is not JSON (exit ${code}):\n${stdout}\nstderr:\n${stderr}`);
          }
        },
        error() {
          const last = stderr.trimEnd().split('\n').at(-1) ?? '';
          try {
            return JSON.parse(last);
          } catch {
            throw new Error(`last stderr line is not JSON (exit ${code}):\n${stderr}`);
          }
        },
      });
    });
  });
}

/** A long-running command (listen, bank-sim): lines as they come, and a clean stop. */
export interface RunningCli {
  child: ChildProcess;
  stdoutLines: string[];
  stderrLines: string[];
  /** Resolves with the first line (on either stream) matching, as lines arrive; rejects after timeoutMs. */
  waitFor(stream: 'stdout' | 'stderr', pattern: RegExp, timeoutMs?: number): Promise<string>;
  stop(): Promise<number | null>;
}

export function startCli(args: readonly string[], options: { env: CliEnv; cwd?: string }): RunningCli {
  const child = spawnCli(args, options);
  const lines = collectLines(child);
  return {
    child,
    stdoutLines: lines.stdout,
    stderrLines: lines.stderr,
    waitFor: lines.waitFor,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      return lines.exited;
    },
  };
}
