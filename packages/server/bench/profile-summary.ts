import { readFile } from 'node:fs/promises';
import path from 'node:path';

/**
 * Summarises a V8 .cpuprofile (node --cpu-prof, e.g. BENCH_CPU_PROF=dir npm run bench): the functions with the
 * most self time, and the project's own functions with the most total time (self plus everything they call).
 * Usage: node --import tsx packages/server/bench/profile-summary.ts <file.cpuprofile> [top=25]
 */

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

export interface Hotspot {
  name: string;
  ms: number;
  percent: number;
}

const label = (n: ProfileNode): string => {
  const { functionName, url, lineNumber } = n.callFrame;
  const file =
    url === '' ? '' : ` ${url.replace(/^file:\/\//, '').replace(/^.*node_modules\//, '~/')}:${lineNumber + 1}`;
  return `${functionName || '(anonymous)'}${file}`;
};

// The service's own code, as run from source (tsx) or from its build (npm start, npm run bench).
const PROJECT = /\/packages\/server\/(src|dist)\//;

export function summarise(profile: Profile, top = 25): { self: Hotspot[]; ownTotal: Hotspot[]; totalMs: number } {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const selfUs = new Map<number, number>();
  profile.samples.forEach((id, i) => {
    selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
  });
  const totalUs = [...selfUs.values()].reduce((a, b) => a + b, 0);

  const self = new Map<string, number>();
  const own = new Map<string, number>();
  for (const [id, us] of selfUs) {
    const node = byId.get(id)!;
    self.set(label(node), (self.get(label(node)) ?? 0) + us);
    // Charge every distinct project frame on the stack once.
    const seen = new Set<string>();
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const n = byId.get(cur)!;
      if (!PROJECT.test(n.callFrame.url)) continue;
      const l = label(n);
      if (seen.has(l)) continue;
      seen.add(l);
      own.set(l, (own.get(l) ?? 0) + us);
    }
  }
  const rank = (m: Map<string, number>): Hotspot[] =>
    [...m.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([name, us]) => ({ name, ms: Math.round(us / 1000), percent: Math.round((1000 * us) / totalUs) / 10 }));
  return { self: rank(self), ownTotal: rank(own), totalMs: Math.round(totalUs / 1000) };
}

if (process.argv[1] && path.resolve(process.argv[1]) === path.resolve(new URL(import.meta.url).pathname)) {
  const file = process.argv[2];
  if (!file) {
    process.stderr.write('usage: profile-summary.ts <file.cpuprofile> [top]\n');
    process.exit(2);
  }
  const result = summarise(JSON.parse(await readFile(file, 'utf8')) as Profile, Number(process.argv[3] ?? 25));
  const print = (title: string, rows: Hotspot[]) => {
    process.stdout.write(`\n${title}\n`);
    for (const r of rows)
      process.stdout.write(`${String(r.percent).padStart(5)}%  ${String(r.ms).padStart(7)} ms  ${r.name}\n`);
  };
  process.stdout.write(`profile: ${result.totalMs} ms sampled\n`);
  print('self time', result.self);
  print('total time of project functions', result.ownTotal);
}
