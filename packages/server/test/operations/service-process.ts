import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { collectLines } from '../support/child-lines.ts';

/**
 * The service as an operator runs it: `node --import tsx packages/server/src/main.ts` in its own process, with only
 * the environment the test states. Lines are kept per stream as they arrive.
 */

export const REPO = fileURLToPath(new URL('../../../../', import.meta.url));

export interface ServiceProcess {
  child: ChildProcess;
  stdout: string[];
  stderr: string[];
  /** Resolves with the first line of the stream that matches (already seen or still to come). */
  waitFor(stream: 'stdout' | 'stderr', pattern: RegExp, timeoutMs?: number): Promise<string>;
  /** Resolves with the exit status once the process has ended. */
  exited: Promise<number | null>;
  /** The JSON log lines of stdout, parsed (throws on a line that is not JSON). */
  logs(): Record<string, unknown>[];
}

export function startService(env: Record<string, string>): ServiceProcess {
  const child = spawn(process.execPath, ['--import', 'tsx', 'packages/server/src/main.ts'], {
    cwd: REPO,
    env: { PATH: process.env['PATH'], ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines = collectLines(child);
  return {
    child,
    stdout: lines.stdout,
    stderr: lines.stderr,
    exited: lines.exited,
    waitFor: lines.waitFor,
    logs() {
      return lines.stdout.map((l) => {
        try {
          return JSON.parse(l) as Record<string, unknown>;
        } catch {
          throw new Error(`stdout line is not JSON: ${l}`);
        }
      });
    },
  };
}
