import type { OutStream } from './command.ts';

/**
 * A progress indicator for long listings and imports, always on stderr so that stdout stays one JSON document.
 * On a terminal it rewrites one line in place; when forced on elsewhere (--progress, e.g. into a log file) it
 * writes whole lines, at most one per `minIntervalMs`, so a long walk does not flood the log.
 */

export interface Progress {
  /** The running count, and an optional word after it ("pages 3"). */
  update(count: number, detail?: string): void;
  done(summary?: string): void;
}

export const silentProgress: Progress = { update() {}, done() {} };

export interface ProgressOptions {
  stream: OutStream;
  label: string;
  /** true: rewrite one line with carriage returns; false: whole lines. */
  inPlace: boolean;
  minIntervalMs?: number;
  now?: () => number;
}

export function createProgress(options: ProgressOptions): Progress {
  const now = options.now ?? Date.now;
  const minInterval = options.minIntervalMs ?? (options.inPlace ? 80 : 1000);
  let last = Number.NEGATIVE_INFINITY;
  let shown = false;
  let latest = '';

  const render = (count: number, detail?: string) =>
    `${options.label}: ${count}${detail === undefined ? '' : ` (${detail})`}`;

  return {
    update(count, detail) {
      latest = render(count, detail);
      const t = now();
      if (t - last < minInterval) return;
      last = t;
      shown = true;
      options.stream.write(options.inPlace ? `\r\x1b[2K${latest}` : `${latest}\n`);
    },
    done(summary) {
      const text = summary === undefined ? latest : `${options.label}: ${summary}`;
      if (options.inPlace) {
        if (shown || text !== '') options.stream.write(`\r\x1b[2K${text}\n`);
      } else if (text !== '') {
        options.stream.write(`${text}\n`);
      }
    },
  };
}
