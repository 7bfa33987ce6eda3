/**
 * The names of a WebAssembly module's exported functions by function index, read from its export section. V8's CPU
 * profile names a frame of WASM code `wasm-function[N]`, N an index in the module's function space (its imported
 * functions first), and PGlite's module carries no name section; but it exports some two thousand of PostgreSQL's
 * functions for its extensions (the executor, the planner, index and heap access, WAL), so a profile of the embedded
 * database can say which of them its time is under. An export's index is already in that space (imports included).
 */

const EXPORT_SECTION = 7;
const FUNCTION_KIND = 0;

export function wasmFunctionNames(bytes: Uint8Array): Map<number, string> {
  if (bytes[0] !== 0 || bytes[1] !== 0x61 || bytes[2] !== 0x73 || bytes[3] !== 0x6d) {
    throw new Error('not a WebAssembly module');
  }
  const decoder = new TextDecoder();
  let at = 8;
  const u32 = (): number => {
    let value = 0;
    let shift = 0;
    let byte: number;
    do {
      byte = bytes[at++]!;
      value += (byte & 0x7f) * 2 ** shift;
      shift += 7;
    } while (byte & 0x80);
    return value;
  };
  const name = (): string => {
    const length = u32();
    at += length;
    return decoder.decode(bytes.subarray(at - length, at));
  };
  const names = new Map<number, string>();
  while (at < bytes.length) {
    const id = bytes[at++]!;
    const end = u32() + at;
    if (id === EXPORT_SECTION) {
      for (let count = u32(); count > 0; count--) {
        const exported = name();
        const kind = bytes[at++]!;
        const index = u32();
        // A function exported under several names keeps the first.
        if (kind === FUNCTION_KIND && !names.has(index)) names.set(index, exported);
      }
    }
    at = end;
  }
  return names;
}
