import { CURRENCY_PATTERN, isCalendarDate } from '../rails/gateway/protocol.ts';
import type { BankStatementLine } from '../rails/rail.ts';
import { type StatementParse, withoutBom } from './common.ts';

/**
 * The plain statement format (docs/bank-gateway.md, "Statement imports"): RFC 4180 CSV, UTF-8, a header
 * row naming the six columns in any order, one booked line per record. Refused whole at the first
 * problem, naming the line and the column.
 */

export const CSV_COLUMNS = [
  'bank_line_id',
  'direction',
  'amount_minor',
  'currency',
  'value_date',
  'reference',
] as const;
type Column = (typeof CSV_COLUMNS)[number];

interface Field {
  value: string;
  /** The field as written, quotes included. */
  source: string;
}

interface CsvRecord {
  line: number;
  fields: Field[];
}

class Refusal extends Error {}

/** Splits RFC 4180 text into records; a quoted field may hold commas, quotes ("") and line breaks. */
function records(text: string): CsvRecord[] {
  const out: CsvRecord[] = [];
  let line = 1;
  let i = 0;
  while (i < text.length) {
    const startLine = line;
    const fields: Field[] = [];
    for (;;) {
      const fieldStart = i;
      let value = '';
      if (text[i] === '"') {
        i++;
        for (;;) {
          if (i >= text.length) throw new Refusal(`line ${startLine}: a quoted field is not closed`);
          const c = text[i]!;
          if (c === '"') {
            if (text[i + 1] === '"') {
              value += '"';
              i += 2;
              continue;
            }
            i++;
            break;
          }
          if (c === '\n') line++;
          value += c;
          i++;
        }
        if (i < text.length && text[i] !== ',' && text[i] !== '\n' && text[i] !== '\r') {
          throw new Refusal(`line ${line}, field ${fields.length + 1}: text after a closing quote`);
        }
      } else {
        while (i < text.length && text[i] !== ',' && text[i] !== '\n' && text[i] !== '\r') {
          if (text[i] === '"')
            throw new Refusal(`line ${line}, field ${fields.length + 1}: a quote inside an unquoted field`);
          value += text[i];
          i++;
        }
      }
      fields.push({ value, source: text.slice(fieldStart, i) });
      if (text[i] === ',') {
        i++;
        continue;
      }
      break;
    }
    if (text[i] === '\r') i++;
    if (text[i] === '\n') {
      i++;
      line++;
    } else if (i < text.length) {
      throw new Refusal(`line ${line}: a carriage return without a line feed`);
    }
    out.push({ line: startLine, fields });
  }
  return out;
}

function isBlank(record: CsvRecord): boolean {
  return record.fields.length === 1 && record.fields[0]!.source === '';
}

function headerOf(record: CsvRecord): Column[] {
  const names = record.fields.map((f) => f.value.trim().toLowerCase());
  for (const [i, name] of names.entries()) {
    if (!(CSV_COLUMNS as readonly string[]).includes(name)) {
      throw new Refusal(`line ${record.line}: unknown column "${name.slice(0, 40)}" at position ${i + 1}`);
    }
    if (names.indexOf(name) !== i) throw new Refusal(`line ${record.line}: column ${name} appears twice`);
  }
  for (const column of CSV_COLUMNS) {
    if (!names.includes(column)) throw new Refusal(`line ${record.line}: header lacks column ${column}`);
  }
  return names as Column[];
}

function lineOf(record: CsvRecord, header: Column[]): BankStatementLine {
  if (record.fields.length !== header.length) {
    throw new Refusal(`line ${record.line}: expected ${header.length} fields, found ${record.fields.length}`);
  }
  const value = (column: Column): string => record.fields[header.indexOf(column)]!.value;
  const fail = (column: Column, problem: string) => new Refusal(`line ${record.line}, column ${column}: ${problem}`);

  const bankLineId = value('bank_line_id');
  if (bankLineId.length === 0 || bankLineId.length > 128) throw fail('bank_line_id', 'must hold 1 to 128 characters');
  const direction = value('direction');
  if (direction !== 'debit' && direction !== 'credit') throw fail('direction', 'must be debit or credit');
  const amount = value('amount_minor');
  if (!/^[1-9]\d{0,29}$/.test(amount)) throw fail('amount_minor', 'must be a positive integer of minor units');
  const currency = value('currency');
  if (!CURRENCY_PATTERN.test(currency)) throw fail('currency', 'must be three upper-case letters');
  const valueDate = value('value_date');
  if (!isCalendarDate(valueDate)) throw fail('value_date', 'must be a date YYYY-MM-DD');

  // The record as written minus its own id, so a double booking with a fresh id is byte-identical.
  const idIndex = header.indexOf('bank_line_id');
  const raw = record.fields
    .filter((_, i) => i !== idIndex)
    .map((f) => f.source)
    .join(',');
  return {
    bankLineId,
    direction,
    amountMinor: BigInt(amount),
    currency,
    valueDate,
    reference: value('reference'),
    raw,
  };
}

export function parseStatementCsv(input: string): StatementParse {
  try {
    const all = records(withoutBom(input)).filter((r) => !isBlank(r));
    const [first, ...rest] = all;
    if (first === undefined) throw new Refusal('line 1: the header row is missing');
    const header = headerOf(first);
    const lines: BankStatementLine[] = [];
    const seen = new Map<string, number>();
    for (const record of rest) {
      const line = lineOf(record, header);
      const earlier = seen.get(line.bankLineId);
      if (earlier !== undefined) {
        throw new Refusal(
          `line ${record.line}, column bank_line_id: ${line.bankLineId} already used on line ${earlier}`,
        );
      }
      seen.set(line.bankLineId, record.line);
      lines.push(line);
    }
    return { ok: true, lines };
  } catch (error) {
    if (error instanceof Refusal) return { ok: false, error: `statement CSV: ${error.message}` };
    throw error;
  }
}
