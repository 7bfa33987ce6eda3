import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { wasmFunctionNames } from './wasm-names.ts';

/**
 * Summarises a V8 .cpuprofile (node --cpu-prof, e.g. BENCH_CPU_PROF=dir npm run bench): the functions with the
 * most self time, the project's own functions with the most total time (self plus everything they call), and on
 * the embedded database PostgreSQL's functions inside PGlite by name (wasm-names.ts): each sample in PGlite's code
 * charged to the nearest frame on its stack that has one, and the total under each.
 *   node --import tsx packages/server/bench/profile-summary.ts <file.cpuprofile> [top=25] [--load[=percent]]
 * --load keeps only the longest stretch of seconds in which the thread was busy 80 % or more: a bench's timed run,
 * without the start, the seeding and the pre-signing around it. --load=60 takes 60 % instead: a server that waits
 * on PostgreSQL is busy well under 80 % during a run, and the start-up's seconds would be the longest stretch.
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

export interface SummaryOptions {
  /** Names of the embedded database's WASM functions by index (wasm-names.ts). */
  wasmNames?: Map<number, string>;
  /** Only samples taken in [fromUs, toUs) after the profile's start. */
  window?: { fromUs: number; toUs: number };
}

const WASM_FRAME = /^wasm-function\[(\d+)\]$/;
const IDLE = '(idle)';

/** When each sample was taken, in µs after the profile's start (timeDeltas[i] is the gap before sample i). */
function sampleTimes(profile: Profile): number[] {
  const times: number[] = [];
  let t = 0;
  for (const d of profile.timeDeltas) {
    t += d;
    times.push(t);
  }
  return times;
}

/**
 * The longest run of whole seconds in which the profiled thread was busy at least minBusy of the time: under a bench,
 * the timed load. Null when no second was that busy.
 */
export function loadWindow(profile: Profile, minBusy = 0.8): { fromUs: number; toUs: number } | null {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const times = sampleTimes(profile);
  const seconds: { all: number; idle: number }[] = [];
  profile.samples.forEach((id, i) => {
    const s = Math.floor(times[i]! / 1e6);
    seconds[s] ??= { all: 0, idle: 0 };
    const second = seconds[s];
    const us = profile.timeDeltas[i] ?? 0;
    second.all += us;
    if (byId.get(id)?.callFrame.functionName === IDLE) second.idle += us;
  });
  let best: { from: number; to: number } | null = null;
  let from = -1;
  for (let s = 0; s <= seconds.length; s++) {
    const second = seconds[s];
    const busy = second !== undefined && second.all > 0 && 1 - second.idle / second.all >= minBusy;
    if (busy && from < 0) from = s;
    if (!busy && from >= 0) {
      if (best === null || s - from > best.to - best.from) best = { from, to: s };
      from = -1;
    }
  }
  return best && { fromUs: best.from * 1e6, toUs: best.to * 1e6 };
}

/**
 * The WASM module whose frames PGlite's names apply to: of the modules in the profile, the one whose frames reach
 * the highest function index (PostgreSQL's own module has over ten thousand functions; an extension's, such as
 * PL/pgSQL's, a few hundred).
 */
function mainWasmModule(profile: Profile): string | undefined {
  let found: { url: string; index: number } | undefined;
  for (const n of profile.nodes) {
    const m = WASM_FRAME.exec(n.callFrame.functionName);
    if (m && (found === undefined || Number(m[1]) > found.index)) found = { url: n.callFrame.url, index: Number(m[1]) };
  }
  return found?.url;
}

const label = (n: ProfileNode): string => {
  const { functionName, url, lineNumber } = n.callFrame;
  const file =
    url === '' ? '' : ` ${url.replace(/^file:\/\//, '').replace(/^.*node_modules\//, '~/')}:${lineNumber + 1}`;
  return `${functionName || '(anonymous)'}${file}`;
};

// The service's own code, as run from source (tsx) or from its build (npm start, npm run bench).
const PROJECT = /\/packages\/server\/(src|dist)\//;

export function summarise(
  profile: Profile,
  top = 25,
  options: SummaryOptions = {},
): { self: Hotspot[]; ownTotal: Hotspot[]; pgliteSelf: Hotspot[]; pgliteTotal: Hotspot[]; totalMs: number } {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const times = sampleTimes(profile);
  const selfUs = new Map<number, number>();
  profile.samples.forEach((id, i) => {
    const { window } = options;
    if (window && (times[i]! < window.fromUs || times[i]! >= window.toUs)) return;
    selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
  });
  const totalUs = [...selfUs.values()].reduce((a, b) => a + b, 0);

  const pglite = options.wasmNames && mainWasmModule(profile);
  /** PostgreSQL's name for a frame of PGlite's module, when it exports one. */
  const pgName = (n: ProfileNode): string | undefined => {
    if (pglite === undefined || n.callFrame.url !== pglite) return undefined;
    const m = WASM_FRAME.exec(n.callFrame.functionName);
    return m ? options.wasmNames?.get(Number(m[1])) : undefined;
  };

  const self = new Map<string, number>();
  const own = new Map<string, number>();
  const pgSelf = new Map<string, number>();
  const pgTotal = new Map<string, number>();
  const charge = (m: Map<string, number>, key: string, us: number) => m.set(key, (m.get(key) ?? 0) + us);
  for (const [id, us] of selfUs) {
    const node = byId.get(id)!;
    const named = pgName(node);
    charge(self, named ? `${named} (PGlite)` : label(node), us);
    // Charge every distinct project frame, and every distinct named PostgreSQL function, on the stack once.
    const seen = new Set<string>();
    let nearest: string | undefined;
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const n = byId.get(cur)!;
      const pg = pgName(n);
      if (pg !== undefined) {
        nearest ??= pg;
        if (!seen.has(pg)) charge(pgTotal, pg, us);
        seen.add(pg);
        continue;
      }
      if (!PROJECT.test(n.callFrame.url)) continue;
      const l = label(n);
      if (seen.has(l)) continue;
      seen.add(l);
      charge(own, l, us);
    }
    if (nearest !== undefined && WASM_FRAME.test(node.callFrame.functionName)) charge(pgSelf, nearest, us);
  }
  const rank = (m: Map<string, number>): Hotspot[] =>
    [...m.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([name, us]) => ({ name, ms: Math.round(us / 1000), percent: Math.round((1000 * us) / totalUs) / 10 }));
  return {
    self: rank(self),
    ownTotal: rank(own),
    pgliteSelf: rank(pgSelf),
    pgliteTotal: rank(pgTotal),
    totalMs: Math.round(totalUs / 1000),
  };
}

/** PGlite's WASM module as installed beside the service, when it is. */
function installedPgliteWasm(): string | undefined {
  try {
    const entry = createRequire(import.meta.url).resolve('@electric-sql/pglite');
    const file = path.join(path.dirname(entry), 'pglite.wasm');
    return existsSync(file) ? file : undefined;
  } catch {
    return undefined;
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === path.resolve(new URL(import.meta.url).pathname)) {
  const loadArg = process.argv.find((a) => a === '--load' || a.startsWith('--load='));
  const args = process.argv.slice(2).filter((a) => a !== loadArg);
  const file = args[0];
  if (!file) {
    process.stderr.write('usage: profile-summary.ts <file.cpuprofile> [top] [--load[=percent]]\n');
    process.exit(2);
  }
  const profile = JSON.parse(await readFile(file, 'utf8')) as Profile;
  const options: SummaryOptions = {};
  if (loadArg !== undefined) {
    const percent = loadArg === '--load' ? 80 : Number(loadArg.slice('--load='.length));
    if (!(percent > 0 && percent <= 100)) {
      process.stderr.write(`${loadArg}: the busy share is a percentage, 1 to 100\n`);
      process.exit(2);
    }
    const window = loadWindow(profile, percent / 100);
    if (window === null)
      process.stderr.write(`no second of the profile was ${percent} % busy: summarising all of it\n`);
    else options.window = window;
  }
  const wasm = installedPgliteWasm();
  if (wasm !== undefined) options.wasmNames = wasmFunctionNames(await readFile(wasm));
  const result = summarise(profile, Number(args[1] ?? 25), options);
  const print = (title: string, rows: Hotspot[]) => {
    if (rows.length === 0) return;
    process.stdout.write(`\n${title}\n`);
    for (const r of rows)
      process.stdout.write(`${String(r.percent).padStart(5)}%  ${String(r.ms).padStart(7)} ms  ${r.name}\n`);
  };
  const span = options.window ? ` (seconds ${options.window.fromUs / 1e6}-${options.window.toUs / 1e6})` : '';
  process.stdout.write(`profile: ${result.totalMs} ms sampled${span}\n`);
  print('self time', result.self);
  print('total time of project functions', result.ownTotal);
  print("PGlite's self time by PostgreSQL function (the nearest named frame)", result.pgliteSelf);
  print("PGlite's total time by PostgreSQL function", result.pgliteTotal);
}
