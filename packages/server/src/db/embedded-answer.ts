import { messages, protocol } from '@electric-sql/pglite';

/**
 * The answer of one bind-execute-sync pass of the embedded database, read from the backend's bytes here instead of
 * by PGlite's protocol parser and its result builder. Those two turn every row into a message object, copy each
 * value's bytes into a buffer of its own before decoding it, and build each row from an array of pairs: under the
 * GET bench they took an eighth of the thread that serves requests, and under the POST bench a twelfth. Here a
 * value is decoded straight from the answer's bytes and a row is one object filled in place; each value still goes
 * through PGlite's parser for its type, so the rows are those PGlite's own query() gives.
 */

/** A column of a declared statement's rows: its name and how its text becomes a value. */
export interface AnswerColumn {
  name: string;
  typeId: number;
  parse: ((text: string, typeId: number) => unknown) | undefined;
}

export interface Answer {
  rows: Record<string, unknown>[];
  affectedRows: number;
}

const DATA_ROW = 0x44; // 'D'
const COMMAND_COMPLETE = 0x43; // 'C'
const ERROR_RESPONSE = 0x45; // 'E'

/** The commands whose completion tag counts rows changed (as PGlite's own results count them). */
const COUNTED = new Set(['INSERT', 'UPDATE', 'DELETE', 'COPY', 'MERGE']);

/**
 * The rows and changed-row count of an answer; throws the database's error, the same DatabaseError PGlite's query()
 * throws, when the answer holds one.
 */
export function readAnswer(bytes: Buffer, columns: readonly AnswerColumn[]): Answer {
  const rows: Record<string, unknown>[] = [];
  let affectedRows = 0;
  let at = 0;
  while (at + 5 <= bytes.length) {
    const type = bytes[at]!;
    const end = at + 1 + bytes.readInt32BE(at + 1);
    if (type === DATA_ROW) {
      rows.push(readRow(bytes, at + 5, columns));
    } else if (type === COMMAND_COMPLETE) {
      const words = bytes.toString('utf8', at + 5, end - 1).split(' ');
      const count = Number.parseInt(words[words.length - 1]!, 10);
      if (COUNTED.has(words[0]!) && !Number.isNaN(count)) affectedRows += count;
    } else if (type === ERROR_RESPONSE) {
      throw databaseError(bytes);
    }
    at = end;
  }
  return { rows, affectedRows };
}

function readRow(bytes: Buffer, start: number, columns: readonly AnswerColumn[]): Record<string, unknown> {
  const row: Record<string, unknown> = {};
  const count = bytes.readInt16BE(start);
  let at = start + 2;
  for (let i = 0; i < count; i++) {
    const length = bytes.readInt32BE(at);
    at += 4;
    const column = columns[i];
    if (column === undefined) throw new Error(`an answer row has more values than its statement's ${columns.length}`);
    if (length < 0) {
      row[column.name] = null;
      continue;
    }
    const text = bytes.toString('utf8', at, at + length);
    at += length;
    row[column.name] = column.parse ? column.parse(text, column.typeId) : text;
  }
  return row;
}

/** The first error of an answer, parsed by PGlite's own protocol parser so that it is the error query() throws. */
function databaseError(bytes: Buffer): Error {
  let found: Error | undefined;
  new protocol.Parser().parse(bytes, (message) => {
    if (found === undefined && message instanceof messages.DatabaseError) found = message;
  });
  return found ?? new Error('the embedded database answered with an error that could not be read');
}
