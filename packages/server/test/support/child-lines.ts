import type { ChildProcess } from 'node:child_process';

/** The lines a child process writes, per stream as they arrive, and a wait for the first line matching a pattern. */
export interface ChildLines {
  stdout: string[];
  stderr: string[];
  /** Resolves with the exit status once the process has ended. */
  exited: Promise<number | null>;
  /** Resolves with the first line of the stream that matches (already seen or still to come); rejects on timeout or exit. */
  waitFor(stream: 'stdout' | 'stderr', pattern: RegExp, timeoutMs?: number): Promise<string>;
}

export function collectLines(child: ChildProcess): ChildLines {
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
    stdout: lines.stdout,
    stderr: lines.stderr,
    exited,
    waitFor(stream, pattern, timeoutMs = 45_000) {
      const seen = lines[stream].find((l) => pattern.test(l));
      if (seen !== undefined) return Promise.resolve(seen);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          reject(
            new Error(
              `no ${stream} line matching ${pattern} within ${timeoutMs} ms:\n${lines.stdout.join('\n')}\n${lines.stderr.join('\n')}`,
            ),
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
  };
}
