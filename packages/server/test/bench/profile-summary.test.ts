import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadWindow, summarise } from '../../bench/profile-summary.ts';
import { wasmFunctionNames } from '../../bench/wasm-names.ts';

/** An entry of WasmModule.exports(). */
interface Export {
  name: string;
  kind: string;
}

// The runtime's WebAssembly.Module, which the project's type libraries do not declare as a value.
const WasmModule = (
  globalThis as unknown as {
    WebAssembly: { Module: { new (bytes: Uint8Array): object; exports(module: object): Export[] } };
  }
).WebAssembly.Module;

const frame = (id: number, functionName: string, url: string, children: number[] = []) => ({
  id,
  callFrame: { functionName, url, lineNumber: 0 },
  children,
});

// (module (import "m" "f" (func)) (func) (func) (export "a" (func 1)) (export "b" (func 2)) (export "mem" (memory 0)))
// written out by hand: function 0 is the import, so the module's own two are 1 and 2.
// biome-ignore format: one line a section reads as the module's layout
const TINY_MODULE = Uint8Array.from([
  0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, // magic, version
  0x01, 0x04, 0x01, 0x60, 0x00, 0x00, // types: () -> ()
  0x02, 0x07, 0x01, 0x01, 0x6d, 0x01, 0x66, 0x00, 0x00, // import m.f
  0x03, 0x03, 0x02, 0x00, 0x00, // two functions of type 0
  0x05, 0x03, 0x01, 0x00, 0x01, // one memory of one page
  0x07, 0x0f, 0x03, 0x01, 0x61, 0x00, 0x01, 0x01, 0x62, 0x00, 0x02, 0x03, 0x6d, 0x65, 0x6d, 0x02, 0x00, // exports
  0x0a, 0x07, 0x02, 0x02, 0x00, 0x0b, 0x02, 0x00, 0x0b, // two empty bodies
]);

describe('the CPU profile summary', () => {
  it("charges the service's own frames, run from source or from its build, with what they call", () => {
    const profile = {
      nodes: [
        frame(1, '(root)', '', [2, 3]),
        frame(2, 'handler', 'file:///repo/packages/server/dist/payments/routes.js', [4]),
        frame(3, 'reserve', 'file:///repo/packages/server/src/payments/reserve.ts'),
        frame(4, 'stringify', 'file:///repo/node_modules/fast-json-stringify/index.js'),
      ],
      samples: [4, 4, 3, 1],
      timeDeltas: [1000, 1000, 1000, 1000],
    };
    const { ownTotal, totalMs, pgliteSelf } = summarise(profile);
    expect(totalMs).toBe(4);
    expect(ownTotal.map((h) => [h.name.split(' ')[0], h.ms])).toEqual([
      ['handler', 2],
      ['reserve', 1],
    ]);
    expect(pgliteSelf).toEqual([]);
  });

  it("names PostgreSQL's functions in PGlite's module only, charging unnamed code to the nearest named caller", () => {
    const pg = 'wasm://wasm/0000aaaa';
    const plpgsql = 'wasm://wasm/0000bbbb';
    const profile = {
      nodes: [
        frame(1, '(root)', '', [2]),
        frame(2, 'exchange', 'file:///repo/packages/server/dist/db/embedded-prepared.js', [3]),
        frame(3, 'wasm-function[9000]', pg, [4, 6]),
        frame(4, 'wasm-function[12]', plpgsql, [5]),
        frame(5, 'wasm-function[9100]', pg),
        frame(6, 'wasm-function[9200]', pg),
      ],
      samples: [5, 5, 6, 4, 3],
      timeDeltas: [1000, 1000, 1000, 1000, 1000],
    };
    // Index 12 is named too, but in PL/pgSQL's module it is another function: its frame stays unnamed.
    const wasmNames = new Map([
      [9000, 'ExecutorRun'],
      [9100, 'ExecInsertIndexTuples'],
      [12, 'not_this_one'],
    ]);
    const { self, pgliteSelf, pgliteTotal } = summarise(profile, 25, { wasmNames });
    expect(self.map((h) => [h.name, h.ms])).toEqual([
      ['ExecInsertIndexTuples (PGlite)', 2],
      ['wasm-function[9200] wasm://wasm/0000aaaa:1', 1],
      ['wasm-function[12] wasm://wasm/0000bbbb:1', 1],
      ['ExecutorRun (PGlite)', 1],
    ]);
    // The PL/pgSQL frame's sample and the unnamed one's go to ExecutorRun, their nearest named caller.
    expect(pgliteSelf.map((h) => [h.name, h.ms])).toEqual([
      ['ExecutorRun', 3],
      ['ExecInsertIndexTuples', 2],
    ]);
    expect(pgliteTotal.map((h) => [h.name, h.ms])).toEqual([
      ['ExecutorRun', 5],
      ['ExecInsertIndexTuples', 2],
    ]);
  });

  it('keeps to the longest stretch of busy seconds when asked', () => {
    const profile = {
      nodes: [frame(1, '(root)', '', [2, 3]), frame(2, '(idle)', ''), frame(3, 'work', 'file:///x.js')],
      samples: [] as number[],
      timeDeltas: [] as number[],
    };
    // Seconds: 0 busy, 1 idle, 2-4 busy, 5 idle; 10 samples of 100 ms each.
    for (const busy of [true, false, true, true, true, false])
      for (let i = 0; i < 10; i++) {
        profile.samples.push(busy || i === 0 ? 3 : 2);
        profile.timeDeltas.push(100_000);
      }
    const window = loadWindow(profile);
    expect(window).toEqual({ fromUs: 2e6, toUs: 5e6 });
    expect(summarise(profile, 25, { window: window! }).totalMs).toBe(3000);
    expect(loadWindow({ ...profile, samples: profile.samples.map(() => 2) })).toBeNull();
  });

  it('takes a lower busy share when given one (a server waiting on PostgreSQL is busy well under 80 %)', () => {
    const profile = {
      nodes: [frame(1, '(root)', '', [2, 3]), frame(2, '(idle)', ''), frame(3, 'work', 'file:///x.js')],
      samples: [] as number[],
      timeDeltas: [] as number[],
    };
    // Seconds: 0 fully busy, 1-3 busy 6 samples in 10, 4 idle.
    for (const share of [10, 6, 6, 6, 0])
      for (let i = 0; i < 10; i++) {
        profile.samples.push(i < share ? 3 : 2);
        profile.timeDeltas.push(100_000);
      }
    expect(loadWindow(profile)).toEqual({ fromUs: 0, toUs: 1e6 });
    expect(loadWindow(profile, 0.6)).toEqual({ fromUs: 0, toUs: 4e6 });
    expect(loadWindow(profile, 0.75)).toEqual({ fromUs: 0, toUs: 1e6 });
  });
});

describe("a WebAssembly module's function names", () => {
  it('are read from its export section by function index, imports counted', () => {
    expect(() => new WasmModule(TINY_MODULE)).not.toThrow();
    expect(wasmFunctionNames(TINY_MODULE)).toEqual(
      new Map([
        [1, 'a'],
        [2, 'b'],
      ]),
    );
    expect(() => wasmFunctionNames(Uint8Array.from([1, 2, 3, 4]))).toThrow('not a WebAssembly module');
  });

  it("include PostgreSQL's executor in PGlite's module, by index", async () => {
    const pglite = path.join(
      path.dirname(createRequire(import.meta.url).resolve('@electric-sql/pglite')),
      'pglite.wasm',
    );
    const bytes = await readFile(pglite);
    const names = wasmFunctionNames(bytes);
    const exported = WasmModule.exports(new WasmModule(bytes)).filter((e) => e.kind === 'function');
    // Every name read is one the module exports; a function exported under two names is read under its first.
    const exportedNames = new Set(exported.map((e) => e.name));
    expect([...names.values()].filter((n) => !exportedNames.has(n))).toEqual([]);
    expect(names.size).toBeGreaterThan(exported.length * 0.9);
    expect([...names.values()]).toEqual(expect.arrayContaining(['standard_ExecutorRun', 'PostgresMainLoopOnce']));
  });
});
