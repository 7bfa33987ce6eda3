/**
 * The --pretty rendering: a readable table for people. Scripts use the default JSON, which carries everything;
 * the table flattens nested objects into dotted columns and cuts very long cells.
 */

const MAX_CELL = 64;

type Row = Record<string, string>;

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isObjectList(value: unknown): value is Record<string, unknown>[] {
  return Array.isArray(value) && value.length > 0 && value.every(isRecord);
}

function cell(value: unknown): string {
  if (value === null || value === undefined) return '-';
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') return String(value);
  if (Array.isArray(value) && value.every((v) => !isRecord(v) && !Array.isArray(v))) return value.map(cell).join(',');
  return JSON.stringify(value);
}

function clip(text: string): string {
  const flat = text.replace(/\s+/g, ' ');
  return flat.length > MAX_CELL ? `${flat.slice(0, MAX_CELL - 1)}…` : flat;
}

/** { a: { b: 1 } } → { 'a.b': '1' }; lists of objects are left for their own table (see renderPretty). */
export function flatten(value: Record<string, unknown>, prefix = '', out: Row = {}): Row {
  for (const [key, inner] of Object.entries(value)) {
    const name = prefix === '' ? key : `${prefix}.${key}`;
    if (isRecord(inner) && Object.keys(inner).length > 0) flatten(inner, name, out);
    else if (!isObjectList(inner)) out[name] = clip(cell(inner));
  }
  return out;
}

export function renderTable(rows: readonly Row[], columns?: readonly string[]): string {
  const cols = columns ?? [...new Set(rows.flatMap((r) => Object.keys(r)))];
  if (cols.length === 0) return '(nothing)\n';
  const widths = cols.map((c) => Math.max(c.length, ...rows.map((r) => (r[c] ?? '').length)));
  const line = (values: string[]) =>
    values
      .map((v, i) => v.padEnd(widths[i]!))
      .join('  ')
      .trimEnd();
  const out = [line([...cols]), line(widths.map((w) => '-'.repeat(w)))];
  for (const r of rows) out.push(line(cols.map((c) => r[c] ?? '')));
  return `${out.join('\n')}\n`;
}

function renderList(items: readonly unknown[]): string {
  if (items.length === 0) return '(no items)\n';
  if (!items.every(isRecord)) return renderTable(items.map((v) => ({ value: clip(cell(v)) })));
  return renderTable(items.map((item) => flatten(item)));
}

function renderObject(value: Record<string, unknown>): string {
  const flat = flatten(value);
  const width = Math.max(0, ...Object.keys(flat).map((k) => k.length));
  let out = Object.entries(flat)
    .map(([k, v]) => `${k.padEnd(width)}  ${v}`)
    .join('\n');
  out += out === '' ? '' : '\n';
  for (const [key, inner] of Object.entries(value)) {
    if (isObjectList(inner)) out += `\n${key}:\n${renderList(inner)}`;
  }
  return out === '' ? '(empty)\n' : out;
}

/** A page of a keyset listing: its items, then where the walk goes on. */
function isPage(value: Record<string, unknown>): boolean {
  return Array.isArray(value['data']) && typeof value['hasMore'] === 'boolean';
}

export function renderPretty(value: unknown): string {
  if (Array.isArray(value)) return renderList(value);
  if (isRecord(value)) {
    if (isPage(value)) {
      const next = value['nextCursor'];
      const tail =
        value['hasMore'] === true && typeof next === 'string'
          ? `more: repeat with --cursor ${next} (or --all)\n`
          : 'end of list\n';
      return renderList(value['data'] as unknown[]) + tail;
    }
    return renderObject(value);
  }
  return `${cell(value)}\n`;
}
