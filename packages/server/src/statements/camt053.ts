import { XMLParser, XMLValidator } from 'fast-xml-parser';
import { CURRENCY_PATTERN, isCalendarDate } from '../rails/gateway/protocol.ts';
import type { BankStatementLine } from '../rails/rail.ts';
import { lineIndex, minorOfDecimal, type StatementParse, withoutBom } from './common.ts';

/**
 * ISO 20022 camt.053 (Bank-to-Customer Statement), any version 001.02 to 001.13: the elements read here
 * kept their names and places across versions. Document/BkToCstmrStmt/Stmt/Ntry becomes one line each;
 * the file is refused whole at the first problem, with the element and its line.
 */

// Elements that may repeat; parsed as arrays always so that one and many read the same way.
const REPEATING = new Set(['Stmt', 'Ntry', 'NtryDtls', 'TxDtls', 'Ustrd']);

const parser = new XMLParser({
  ignoreAttributes: false,
  attributeNamePrefix: '@_',
  removeNSPrefix: true,
  parseTagValue: false,
  parseAttributeValue: false,
  trimValues: true,
  captureMetaData: true,
  isArray: (name, _path, _leaf, isAttribute) => !isAttribute && REPEATING.has(name),
});
// Typed as the boxed `Symbol` by the library; it is a plain symbol at run time.
const META = XMLParser.getMetaDataSymbol() as unknown as symbol;

type Node = Record<string | symbol, unknown>;

class Refusal extends Error {}

function isNode(value: unknown): value is Node {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function startOf(node: Node): number | null {
  const meta = node[META] as { startIndex?: number } | undefined;
  return typeof meta?.startIndex === 'number' ? meta.startIndex : null;
}

/** The text of a leaf element (with or without attributes); undefined when absent, Refusal when repeated. */
function text(parent: Node, name: string, where: string): string | undefined {
  const value = parent[name];
  if (value === undefined) return undefined;
  if (typeof value === 'string') return value;
  if (isNode(value)) {
    const inner = value['#text'];
    if (inner === undefined) return '';
    if (typeof inner === 'string') return inner;
  }
  throw new Refusal(`${name} must appear once and hold text (${where})`);
}

function child(parent: Node, name: string, where: string): Node | undefined {
  const value = parent[name];
  if (value === undefined || value === '') return undefined;
  if (isNode(value)) return value;
  throw new Refusal(`${name} must appear once and hold elements (${where})`);
}

function list(parent: Node, name: string): unknown[] {
  const value = parent[name];
  return Array.isArray(value) ? value : [];
}

function dateOf(holder: Node | undefined, name: string, where: string): string | undefined {
  if (holder === undefined) return undefined;
  const date = text(holder, 'Dt', where) ?? text(holder, 'DtTm', where)?.slice(0, 10);
  if (date === undefined || !isCalendarDate(date)) {
    throw new Refusal(`${name} must hold Dt (YYYY-MM-DD) or DtTm (${where})`);
  }
  return date;
}

/** EndToEndId when the bank carried one, else the first unstructured remittance line. */
function referenceOf(ntry: Node, where: string): string {
  let unstructured: string | undefined;
  for (const details of list(ntry, 'NtryDtls')) {
    if (!isNode(details)) continue;
    for (const tx of list(details, 'TxDtls')) {
      if (!isNode(tx)) continue;
      const refs = child(tx, 'Refs', where);
      const endToEnd = refs === undefined ? undefined : text(refs, 'EndToEndId', where)?.trim();
      // NOTPROVIDED is the standard's placeholder for "the ordering party gave none".
      if (endToEnd !== undefined && endToEnd !== '' && endToEnd !== 'NOTPROVIDED') return endToEnd;
      const remittance = child(tx, 'RmtInf', where);
      const first = remittance === undefined ? undefined : list(remittance, 'Ustrd')[0];
      if (unstructured === undefined && typeof first === 'string' && first.trim() !== '') unstructured = first.trim();
    }
  }
  return unstructured ?? '';
}

/** Sts is text in versions up to 001.06 and Sts/Cd from 001.07; an entry without it counts as booked. */
function isBooked(ntry: Node, where: string): boolean {
  const status = ntry['Sts'];
  if (status === undefined) return true;
  const code = isNode(status) && status['Cd'] !== undefined ? text(status, 'Cd', where) : text(ntry, 'Sts', where);
  return code === 'BOOK';
}

function entryOf(xml: string, ntry: unknown, lineAt: (offset: number) => number): BankStatementLine | null {
  if (!isNode(ntry)) throw new Refusal('Ntry must hold elements (an empty Ntry was found)');
  const start = startOf(ntry);
  const end = (ntry[META] as { endIndex?: number } | undefined)?.endIndex;
  const where = start === null ? 'Ntry' : `Ntry at line ${lineAt(start)}`;
  if (start === null || typeof end !== 'number') throw new Refusal(`could not locate the text of ${where}`);
  if (!isBooked(ntry, where)) return null;

  const bankLineId = (text(ntry, 'AcctSvcrRef', where) ?? text(ntry, 'NtryRef', where))?.trim();
  if (bankLineId === undefined || bankLineId === '') {
    throw new Refusal(`AcctSvcrRef or NtryRef is required to identify the entry (${where})`);
  }
  const amount = ntry['Amt'];
  if (amount === undefined) throw new Refusal(`Amt is missing (${where})`);
  const currency = isNode(amount) ? amount['@_Ccy'] : undefined;
  if (typeof currency !== 'string' || !CURRENCY_PATTERN.test(currency)) {
    throw new Refusal(`Amt needs a Ccy attribute of three upper-case letters (${where})`);
  }
  const value = minorOfDecimal(text(ntry, 'Amt', where) ?? '', currency);
  if (!value.ok) throw new Refusal(`Amt ${value.problem} (${where})`);
  if (value.minor <= 0n) throw new Refusal(`Amt must be greater than zero (${where})`);
  const indicator = text(ntry, 'CdtDbtInd', where);
  if (indicator !== 'CRDT' && indicator !== 'DBIT') throw new Refusal(`CdtDbtInd must be CRDT or DBIT (${where})`);
  const valueDate =
    dateOf(child(ntry, 'ValDt', where), 'ValDt', where) ?? dateOf(child(ntry, 'BookgDt', where), 'BookgDt', where);
  if (valueDate === undefined) throw new Refusal(`ValDt (or BookgDt) is missing (${where})`);

  return {
    bankLineId,
    direction: indicator === 'DBIT' ? 'debit' : 'credit',
    amountMinor: value.minor,
    currency,
    valueDate,
    reference: referenceOf(ntry, where),
    raw: xml.slice(start, end),
  };
}

function statementsOf(document: unknown): unknown[] {
  const root = isNode(document) ? document['Document'] : undefined;
  const body = isNode(root) ? root['BkToCstmrStmt'] : undefined;
  if (!isNode(body)) throw new Refusal('Document/BkToCstmrStmt is missing: this is not a camt.053 statement');
  const statements = list(body, 'Stmt');
  if (statements.length === 0) throw new Refusal('BkToCstmrStmt holds no Stmt');
  return statements;
}

export function parseCamt053(input: string): StatementParse {
  const xml = withoutBom(input);
  const doctype = /<!DOCTYPE/i.exec(xml);
  const lineAt = lineIndex(xml);
  if (doctype !== null) {
    // Entity declarations are how XML bombs work; a bank statement never needs one.
    return { ok: false, error: `camt.053: DOCTYPE is not accepted (line ${lineAt(doctype.index)})` };
  }
  const valid = XMLValidator.validate(xml);
  if (valid !== true) {
    const { msg, line, col } = valid.err;
    return { ok: false, error: `camt.053: not well-formed XML: ${msg} (line ${line}, column ${col})` };
  }
  let document: unknown;
  try {
    document = parser.parse(xml);
  } catch (error) {
    return {
      ok: false,
      error: `camt.053: not readable: ${error instanceof Error ? error.message : String(error)}`,
    };
  }
  try {
    const lines: BankStatementLine[] = [];
    const seen = new Map<string, number>();
    for (const [s, statement] of statementsOf(document).entries()) {
      if (!isNode(statement)) throw new Refusal(`Stmt ${s + 1} must hold elements`);
      for (const ntry of list(statement, 'Ntry')) {
        const line = entryOf(xml, ntry, lineAt);
        if (line === null) continue;
        const at = lineAt(startOf(ntry as Node) ?? 0);
        const first = seen.get(line.bankLineId);
        if (first !== undefined) {
          throw new Refusal(`entry id ${line.bankLineId} appears twice (Ntry at line ${first} and at line ${at})`);
        }
        seen.set(line.bankLineId, at);
        lines.push(line);
      }
    }
    return { ok: true, lines };
  } catch (error) {
    if (error instanceof Refusal) return { ok: false, error: `camt.053: ${error.message}` };
    throw error;
  }
}
