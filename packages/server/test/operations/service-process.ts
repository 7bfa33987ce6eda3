import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

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
  const lines = { stdout: [] as string[], stderr: [] as string[] };
  const waiters: { stream: 'stdout' | 'stderr'; pattern: RegExp; resolve: (line: string) => void }[] = [];
  const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  for (const stream of ['stdout', 'stderr'] as const) {
    let partial = '';
    child[stream]!.setEncoding('utf8').on('data', (chunk: string) => {
      partial += chunk;
      const parts = partial.split('\n');
      partial = parts.pop()!;
      for (const line of parts) {
        lines[stream].push(line);
        for (const w of [...waiters]) {
          if (w.stream === stream && w.pattern.test(line)) {
            waiters.splice(waiters.indexOf(w), 1);
            w.resolve(line);
          }
        }
      }
    });
  }
  return {
    child,
    stdout: lines.stdout,
    stderr: lines.stderr,
    exited,
    waitFor(stream, pattern, timeoutMs = 45_000) {
      const seen = lines[stream].find((l) => pattern.test(l));
      if (seen !== undefined) return Promise.resolve(seen);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          reject(
            new Error(`no ${stream} line matching ${pattern}:\n${lines.stdout.join('\n')}\n${lines.stderr.join('\n')}`),
          );
        }, timeoutMs);
        void exited.then(() => {
          clearTimeout(timer);
          reject(new Error(`exited before a ${stream} line matched ${pattern}:\n${lines.stderr.join('\n')}`));
        });
        waiters.push({
          stream,
          pattern,
          resolve: (line) => {
            clearTimeout(timer);
            resolve(line);
          },
        });
      });
    },
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
