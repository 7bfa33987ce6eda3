/**
 * The bytes of one bind-execute-sync pass of a declared statement (embedded-prepared.ts), written here in one buffer.
 * PGlite's protocol serializer measures each value's UTF-8 length in a JavaScript loop over its characters, writes it
 * into a growing buffer that starts at 256 bytes for every message, and copies the values into the message and the
 * message out again: a batch's JSON parameter runs through all of that for every step. Under the embedded POST bench
 * that was 4 % of the thread that serves requests (docs/performance-log.md). Node measures and encodes a string
 * natively; the message is the same, byte for byte (test/db/embedded-bind.test.ts holds it to PGlite's).
 *
 * Only text values and nulls are written here, each in the text format, with the results in text: what the declared
 * statements send. Anything else answers null, and the caller uses PGlite's serializer.
 */

const BIND = 0x42; // 'B'
/** Execute the unnamed portal, all rows; then Sync. */
const EXECUTE_SYNC = Buffer.from([0x45, 0, 0, 0, 9, 0, 0, 0, 0, 0, 0x53, 0, 0, 0, 4]);

export function bindExecuteSync(statement: string, values: readonly unknown[]): Buffer | null {
  const count = values.length;
  if (count > 0xffff) return null;
  const statementBytes = Buffer.byteLength(statement);
  // Code, length, the unnamed portal's empty name, the statement's name, the format codes (one per value, all text),
  // the value count, each value's length and bytes, the result format count (none: all text).
  let size = 1 + 4 + 1 + statementBytes + 1 + 2 + 2 * count + 2 + 2;
  const lengths = new Array<number>(count);
  for (let i = 0; i < count; i++) {
    const value = values[i];
    if (value === null) {
      lengths[i] = -1;
      size += 4;
    } else if (typeof value === 'string') {
      const n = Buffer.byteLength(value);
      lengths[i] = n;
      size += 4 + n;
    } else {
      return null;
    }
  }
  const out = Buffer.allocUnsafe(size + EXECUTE_SYNC.length);
  let at = 0;
  out[at++] = BIND;
  out.writeInt32BE(size - 1, at);
  at += 4;
  out[at++] = 0;
  at += out.write(statement, at);
  out[at++] = 0;
  out.writeUInt16BE(count, at);
  at += 2;
  out.fill(0, at, at + 2 * count);
  at += 2 * count;
  out.writeUInt16BE(count, at);
  at += 2;
  for (let i = 0; i < count; i++) {
    const n = lengths[i]!;
    out.writeInt32BE(n, at);
    at += 4;
    if (n > 0) at += out.write(values[i] as string, at);
  }
  out.writeInt16BE(0, at);
  at += 2;
  EXECUTE_SYNC.copy(out, at);
  return out;
}
