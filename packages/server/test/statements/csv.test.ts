import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseStatementCsv } from '../../src/statements/csv.ts';

const SAMPLE = readFileSync(new URL('../fixtures/statement-sample.csv', import.meta.url), 'utf8');
const HEADER = 'bank_line_id,direction,amount_minor,currency,value_date,reference';

function errorOf(text: string): string {
  const parsed = parseStatementCsv(text);
  if (parsed.ok) throw new Error('expected the file to be refused');
  return parsed.error;
}

describe('parseStatementCsv on the sample', () => {
  it('reads every line, amounts in bigint minor units', () => {
    const parsed = parseStatementCsv(SAMPLE);
    expect(parsed.ok).toBe(true);
    if (!parsed.ok) return;
    expect(parsed.lines).toHaveLength(4);
    expect(parsed.lines[0]).toEqual({
      bankLineId: 'BV2026010500000417',
      direction: 'debit',
      amountMinor: 150000n,
      currency: 'VES',
      valueDate: '2026-01-05',
      reference: 'rr_4f2a9c1d7e',
      raw: 'debit,150000,VES,2026-01-05,rr_4f2a9c1d7e',
    });
    // Quotes are removed from the value but kept in raw, which is the record as written minus its id.
    expect(parsed.lines[3]).toMatchObject({
      reference: 'rr_4f2a9c1d7e',
      raw: 'credit,150000,VES,2026-01-05,"rr_4f2a9c1d7e"',
    });
  });
});

describe('parseStatementCsv accepts', () => {
  it('columns in any order, CRLF, a byte order mark, blank lines, and quoted fields with commas, quotes and line breaks', () => {
    const text =
      '\ufeffreference,Value_Date,currency,amount_minor,direction,bank_line_id\r\n' +
      '"Pago, ""enero""\r\nsegunda línea",2026-01-05,VES,100,credit,L1\r\n' +
      '\r\n' +
      'r2,2026-01-06,VES,200,debit,L2\r\n';
    const parsed = parseStatementCsv(text);
    expect(parsed).toMatchObject({
      ok: true,
      lines: [
        {
          bankLineId: 'L1',
          reference: 'Pago, "enero"\r\nsegunda línea',
          amountMinor: 100n,
          direction: 'credit',
        },
        { bankLineId: 'L2', reference: 'r2', valueDate: '2026-01-06' },
      ],
    });
  });

  it('a double booking with its own id has a byte-identical raw', () => {
    const parsed = parseStatementCsv(`${HEADER}\nL1,debit,100,VES,2026-01-05,rr_1\nL2,debit,100,VES,2026-01-05,rr_1\n`);
    expect(parsed.ok && parsed.lines[0]!.raw === parsed.lines[1]!.raw).toBe(true);
  });

  it('a header alone is an empty import', () => {
    expect(parseStatementCsv(`${HEADER}\n`)).toEqual({ ok: true, lines: [] });
  });
});

describe('parseStatementCsv refuses the whole file, naming line and column', () => {
  const row = 'L9,debit,100,VES,2026-01-05,rr_9';
  const cases: Array<[string, string, string]> = [
    ['an empty file', '', 'statement CSV: line 1: the header row is missing'],
    ['an unknown column', `${HEADER},memo\n`, 'statement CSV: line 1: unknown column "memo" at position 7'],
    [
      'a missing column',
      'bank_line_id,direction,amount_minor,currency,value_date\n',
      'statement CSV: line 1: header lacks column reference',
    ],
    ['a repeated column', `${HEADER},currency\n`, 'statement CSV: line 1: column currency appears twice'],
    ['a short record', `${HEADER}\n${row}\nL10,debit,100,VES\n`, 'statement CSV: line 3: expected 6 fields, found 4'],
    [
      'a bad direction',
      `${HEADER}\n${row}\nL10,DR,100,VES,2026-01-05,r\n`,
      'statement CSV: line 3, column direction: must be debit or credit',
    ],
    [
      'a decimal amount',
      `${HEADER}\nL10,debit,1.50,VES,2026-01-05,r\n`,
      'statement CSV: line 2, column amount_minor: must be a positive integer of minor units',
    ],
    [
      'a zero amount',
      `${HEADER}\nL10,debit,0,VES,2026-01-05,r\n`,
      'statement CSV: line 2, column amount_minor: must be a positive integer of minor units',
    ],
    [
      'a lower-case currency',
      `${HEADER}\nL10,debit,10,ves,2026-01-05,r\n`,
      'statement CSV: line 2, column currency: must be three upper-case letters',
    ],
    [
      'an impossible date',
      `${HEADER}\nL10,debit,10,VES,2026-02-30,r\n`,
      'statement CSV: line 2, column value_date: must be a date YYYY-MM-DD',
    ],
    [
      'an empty id',
      `${HEADER}\n,debit,10,VES,2026-01-05,r\n`,
      'statement CSV: line 2, column bank_line_id: must hold 1 to 128 characters',
    ],
    [
      'a repeated id',
      `${HEADER}\n${row}\n\n${row}\n`,
      'statement CSV: line 4, column bank_line_id: L9 already used on line 2',
    ],
    [
      'an unclosed quote',
      `${HEADER}\n${row}\nL10,debit,10,VES,2026-01-05,"open\n`,
      'statement CSV: line 3: a quoted field is not closed',
    ],
    [
      'a stray quote',
      `${HEADER}\nL10,debit,10,VES,2026-01-05,ab"c\n`,
      'statement CSV: line 2, field 6: a quote inside an unquoted field',
    ],
  ];
  for (const [name, text, message] of cases) {
    it(name, () => {
      expect(errorOf(text)).toBe(message);
    });
  }

  it('a line number counts the line breaks inside quoted fields', () => {
    const text = `${HEADER}\nL1,debit,1,VES,2026-01-05,"two\nlines"\nL2,debit,x,VES,2026-01-05,r\n`;
    expect(errorOf(text)).toBe('statement CSV: line 4, column amount_minor: must be a positive integer of minor units');
  });
});
