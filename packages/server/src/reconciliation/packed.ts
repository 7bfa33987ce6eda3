import { SLICE_ITEMS, yieldToEventLoop } from '../shared/event-loop.ts';

/**
 * Thousands of values per statement, sent cheaply. A batch's lists (references, ids) and rows go to the database
 * as one text parameter, values joined by control characters and split there with string_to_table and
 * string_to_array: measured ~4x cheaper than a JSON array (json_to_recordset) and ~5x cheaper than parallel
 * array parameters, which both spend most of their time encoding and parsing.
 *
 * The separators are the ASCII unit and record separators, which no statement line carries in practice; a value
 * that does contain one makes the list go as a plain array parameter instead, so nothing is ever misread.
 *
 * Lists are joined into queries as `x IN (SELECT ...)`, never `x = ANY($1)`: with thousands of values the
 * planner estimates every element of an ANY, which costs more than the query.
 */

const FIELD = '\x1f';
const RECORD = '\x1e';

const clean = (v: string): boolean => !v.includes(FIELD) && !v.includes(RECORD);

export interface ListParam {
  value: string | string[];
  /** SQL producing the values as one text column, reading parameter $n. */
  rows(n: number): string;
}

export function listParam(values: readonly string[]): ListParam {
  // An empty value would vanish in the split (string_to_table of '' is no row at all).
  if (values.every((v) => v !== '' && clean(v))) {
    return { value: values.join(RECORD), rows: (n) => `SELECT string_to_table($${n}::text, E'\\x1e')` };
  }
  return { value: [...values], rows: (n) => `SELECT unnest($${n}::text[])` };
}

/**
 * Rows of text fields (null allowed where a field is never empty: it travels as the empty string). null when a
 * value contains a separator: the caller then sends the rows another way.
 */
export function packRows(rows: readonly (readonly (string | null)[])[]): string | null {
  if (rows.length === 0) return '';
  const text = rows.map((row) => row.map((v) => v ?? '').join(FIELD)).join(RECORD);
  // Counting separators once over the whole text is cheaper than searching every value: any extra one means a
  // value carried it.
  let fields = 0;
  let records = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x1f) fields++;
    else if (c === 0x1e) records++;
  }
  const width = rows[0]!.length;
  const uniform = rows.every((r) => r.length === width);
  return uniform && records === rows.length - 1 && fields === rows.length * (width - 1) ? text : null;
}

/** SQL producing packed rows as a text array column `x` (x[1], x[2], ...), reading parameter $n. */
export function packedRows(n: number): string {
  // OFFSET 0 keeps the subquery from being flattened, which would split each row again for every field.
  return `SELECT string_to_array(r, E'\\x1f') AS x FROM string_to_table($${n}::text, E'\\x1e') AS r OFFSET 0`;
}

/**
 * packRows in slices of `slice` rows, the event loop turning between them (shared/event-loop.ts): a reconciliation
 * batch packs thousands of rows, a few milliseconds of one stretch. The same text as packRows, or null as it.
 */
export async function packRowsInSlices(
  rows: readonly (readonly (string | null)[])[],
  slice: number = SLICE_ITEMS,
): Promise<string | null> {
  // packRows checks the width within its rows; the slices must agree with each other too.
  if (rows.some((r) => r.length !== rows[0]!.length)) return null;
  const parts: string[] = [];
  for (let i = 0; i < rows.length; i += slice) {
    if (i > 0) await yieldToEventLoop();
    const part = packRows(rows.slice(i, i + slice));
    if (part === null) return null;
    parts.push(part);
  }
  return parts.join(RECORD);
}
