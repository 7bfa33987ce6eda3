import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseCamt053 } from '../../src/statements/camt053.ts';

const SAMPLE = readFileSync(new URL('../fixtures/camt053-sample.xml', import.meta.url), 'utf8');

/** 1-based line of the first occurrence of `needle` in the sample. */
function lineOf(text: string, needle: string): number {
  const at = text.indexOf(needle);
  if (at < 0) throw new Error(`not in the sample: ${needle}`);
  return text.slice(0, at).split('\n').length;
}

/** The sample with the n-th (1-based) Ntry's text changed. */
function withEntry(n: number, change: (entry: string) => string): string {
  let index = -1;
  for (let i = 0; i < n; i++) index = SAMPLE.indexOf('<Ntry>', index + 1);
  const end = SAMPLE.indexOf('</Ntry>', index) + '</Ntry>'.length;
  return SAMPLE.slice(0, index) + change(SAMPLE.slice(index, end)) + SAMPLE.slice(end);
}

function errorOf(xml: string): string {
  const parsed = parseCamt053(xml);
  if (parsed.ok) throw new Error('expected the file to be refused');
  return parsed.error;
}

describe('parseCamt053 on the sample statement', () => {
  const parsed = parseCamt053(SAMPLE);

  it('reads the four booked entries and leaves out the pending one', () => {
    expect(parsed.ok).toBe(true);
    if (!parsed.ok) return;
    expect(parsed.lines.map(({ raw: _raw, ...rest }) => rest)).toEqual([
      {
        bankLineId: 'BV2026010500000417',
        direction: 'debit',
        amountMinor: 150000n,
        currency: 'VES',
        valueDate: '2026-01-05',
        reference: 'rr_4f2a9c1d7e',
      },
      {
        bankLineId: 'BV2026010500000422',
        direction: 'credit',
        amountMinor: 25000000n,
        currency: 'VES',
        valueDate: '2026-01-05',
        reference: 'FUND-cli_7h3k-0001',
      },
      {
        bankLineId: 'BV2026010500000431',
        direction: 'debit',
        amountMinor: 75050n,
        currency: 'VES',
        valueDate: '2026-01-06',
        reference: 'rr_9b7e11aa03',
      },
      {
        bankLineId: 'BV2026010500000455',
        direction: 'credit',
        amountMinor: 150000n,
        currency: 'VES',
        valueDate: '2026-01-05',
        reference: 'rr_4f2a9c1d7e',
      },
    ]);
  });

  it('keeps the exact XML text of each Ntry as raw', () => {
    if (!parsed.ok) throw new Error(parsed.error);
    const first = parsed.lines[0]!.raw;
    expect(first.startsWith('<Ntry>\n        <NtryRef>1</NtryRef>')).toBe(true);
    expect(first.endsWith('</Ntry>')).toBe(true);
    expect(first).toContain('<EndToEndId>rr_4f2a9c1d7e</EndToEndId>');
    expect(first).not.toContain('<NtryRef>2</NtryRef>');
    for (const line of parsed.lines) expect(SAMPLE).toContain(line.raw);
  });
});

describe('parseCamt053 variants the standard allows', () => {
  it('reads namespace-prefixed documents, a byte order mark and Sts as text (versions up to 001.06)', () => {
    const prefixed = `\ufeff<?xml version="1.0"?>
<c:Document xmlns:c="urn:iso:std:iso:20022:tech:xsd:camt.053.001.02"><c:BkToCstmrStmt><c:Stmt>
<c:Ntry><c:NtryRef>A1</c:NtryRef><c:Amt Ccy="VES">10</c:Amt><c:CdtDbtInd>CRDT</c:CdtDbtInd><c:Sts>BOOK</c:Sts>
<c:BookgDt><c:Dt>2026-01-07</c:Dt></c:BookgDt>
<c:NtryDtls><c:TxDtls><c:RmtInf><c:Ustrd>Pago &amp; abono</c:Ustrd></c:RmtInf></c:TxDtls></c:NtryDtls></c:Ntry>
<c:Ntry><c:NtryRef>A2</c:NtryRef><c:Amt Ccy="VES">1.00</c:Amt><c:CdtDbtInd>DBIT</c:CdtDbtInd><c:Sts>PDNG</c:Sts>
<c:BookgDt><c:Dt>2026-01-07</c:Dt></c:BookgDt></c:Ntry>
</c:Stmt></c:BkToCstmrStmt></c:Document>`;
    const parsed = parseCamt053(prefixed);
    expect(parsed).toMatchObject({
      ok: true,
      lines: [
        {
          bankLineId: 'A1',
          direction: 'credit',
          amountMinor: 1000n,
          valueDate: '2026-01-07',
          reference: 'Pago & abono',
        },
      ],
    });
  });

  it('uses NtryRef when there is no AcctSvcrRef, and an empty reference when the bank carried none', () => {
    const xml = withEntry(3, (e) =>
      e.replace(/<AcctSvcrRef>.*<\/AcctSvcrRef>/, '').replace(/<NtryDtls>[\s\S]*<\/NtryDtls>/, ''),
    );
    const parsed = parseCamt053(xml);
    expect(parsed.ok && parsed.lines[2]).toMatchObject({ bankLineId: '3', reference: '' });
  });

  it('a statement with no entries is an empty import', () => {
    const empty = SAMPLE.replace(/<Ntry>[\s\S]*<\/Ntry>/, '');
    expect(parseCamt053(empty)).toEqual({ ok: true, lines: [] });
  });
});

describe('parseCamt053 refuses a malformed file whole, naming the element and line', () => {
  it('XML that is not well-formed', () => {
    const broken = SAMPLE.replace('</CdtDbtInd>\n        <Sts>', '</CdtDbtIndX>\n        <Sts>');
    const error = errorOf(broken);
    expect(error).toMatch(/not well-formed XML/);
    expect(error).toContain('CdtDbtInd');
    expect(error).toContain(`line ${lineOf(broken, '</CdtDbtIndX>')}`);
  });

  it('a DOCTYPE (entity expansion is never needed)', () => {
    const xml = SAMPLE.replace('<Document', '<!DOCTYPE d [<!ENTITY x "y">]>\n<Document');
    expect(errorOf(xml)).toMatch(/DOCTYPE is not accepted \(line 4\)/);
  });

  it('another message type', () => {
    const notification = SAMPLE.replaceAll('BkToCstmrStmt', 'BkToCstmrDbtCdtNtfctn');
    expect(errorOf(notification)).toMatch(/BkToCstmrStmt is missing/);
  });

  it('no Stmt', () => {
    expect(errorOf('<Document><BkToCstmrStmt><GrpHdr/></BkToCstmrStmt></Document>')).toMatch(/holds no Stmt/);
  });

  const entryLine = (n: number) => {
    let index = -1;
    for (let i = 0; i < n; i++) index = SAMPLE.indexOf('<Ntry>', index + 1);
    return SAMPLE.slice(0, index).split('\n').length;
  };

  const cases: Array<[string, number, (entry: string) => string, RegExp]> = [
    ['Amt missing', 2, (e) => e.replace(/<Amt Ccy="VES">250000.00<\/Amt>/, ''), /^camt\.053: Amt is missing/],
    ['Amt without Ccy', 1, (e) => e.replace('<Amt Ccy="VES">1500.00</Amt>', '<Amt>1500.00</Amt>'), /Amt needs a Ccy/],
    [
      'Amt with a third decimal',
      1,
      (e) => e.replace('1500.00</Amt>', '1500.005</Amt>'),
      /Amt 1500\.005 has more decimals than VES allows/,
    ],
    ['Amt not a number', 1, (e) => e.replace('1500.00</Amt>', '1,500.00</Amt>'), /Amt "1,500\.00" is not a decimal/],
    ['Amt zero', 1, (e) => e.replace('1500.00</Amt>', '0.00</Amt>'), /Amt must be greater than zero/],
    [
      'CdtDbtInd unknown',
      1,
      (e) => e.replace('<CdtDbtInd>DBIT</CdtDbtInd>', '<CdtDbtInd>DR</CdtDbtInd>'),
      /CdtDbtInd must be CRDT or DBIT/,
    ],
    [
      'CdtDbtInd twice',
      1,
      (e) => e.replace('<CdtDbtInd>DBIT</CdtDbtInd>', '<CdtDbtInd>DBIT</CdtDbtInd><CdtDbtInd>CRDT</CdtDbtInd>'),
      /CdtDbtInd must appear once/,
    ],
    [
      'no identifier',
      3,
      (e) => e.replace(/<AcctSvcrRef>.*<\/AcctSvcrRef>/, '').replace('<NtryRef>3</NtryRef>', ''),
      /AcctSvcrRef or NtryRef is required/,
    ],
    [
      'an impossible value date',
      2,
      (e) => e.replace('<ValDt>\n          <Dt>2026-01-05</Dt>', '<ValDt>\n          <Dt>2026-02-30</Dt>'),
      /ValDt must hold Dt/,
    ],
    [
      'no date at all',
      2,
      (e) => e.replace(/<BookgDt>[\s\S]*?<\/BookgDt>/, '').replace(/<ValDt>[\s\S]*?<\/ValDt>/, ''),
      /ValDt \(or BookgDt\) is missing/,
    ],
  ];
  for (const [name, n, change, message] of cases) {
    it(`${name} → refused, naming the Ntry's line`, () => {
      const error = errorOf(withEntry(n, change));
      expect(error).toMatch(message);
      expect(error).toContain(`(Ntry at line ${entryLine(n)})`);
    });
  }

  it('the same entry id twice names both lines', () => {
    const xml = withEntry(3, (e) => e.replace('BV2026010500000431', 'BV2026010500000417'));
    expect(errorOf(xml)).toBe(
      `camt.053: entry id BV2026010500000417 appears twice (Ntry at line ${entryLine(1)} and at line ${entryLine(3)})`,
    );
  });

  it('an empty Ntry', () => {
    expect(errorOf(SAMPLE.replace('<Ntry>', '<Ntry/><Ntry>'))).toMatch(/empty Ntry/);
  });
});
