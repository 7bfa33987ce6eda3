import { readFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectLedgerSound } from '../support/ledger.ts';
import { startTestServer, type TestServer } from '../support/test-server.ts';

/** Statement files through the operator API feed the same ingestion as the bank gateway (issue 8, item 4). */

let server: TestServer;
const fixture = (name: string) => readFile(new URL(`../fixtures/${name}`, import.meta.url), 'utf8');
const countLines = async () =>
  Number((await server.testDb.db.query<{ n: string }>('SELECT count(*)::text AS n FROM recon_lines')).rows[0]!.n);

beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await expectLedgerSound(server.testDb.db);
  await server.stop();
});

describe('POST /admin/v1/reconciliation/statements', () => {
  it('imports a camt.053 file once: a second import of the same file adds nothing', async () => {
    const content = await fixture('camt053-sample.xml');
    const before = await countLines();
    const first = await server.admin('POST', '/admin/v1/reconciliation/statements', { format: 'camt053', content });
    expect(first.status).toBe(201);
    expect(first.body.payload).toMatchObject({ format: 'camt053', alreadyImported: 0 });
    expect(first.body.payload.newLines).toBeGreaterThan(0);
    expect(await countLines()).toBe(before + first.body.payload.newLines);
    // Its lines belong to no payment or funding of this service: each ends in an exception for a person.
    expect(first.body.payload.exceptions).toBe(first.body.payload.newLines - first.body.payload.matched);
    const again = await server.admin('POST', '/admin/v1/reconciliation/statements', { format: 'camt053', content });
    expect(again.body.payload).toMatchObject({ newLines: 0, alreadyImported: first.body.payload.lines });
    expect(await countLines()).toBe(before + first.body.payload.newLines);
  });

  it('matches a CSV credit to its funding by reference; an unknown credit is an unfunded_credit exception', async () => {
    const c = await server.newClient({ fundMinor: 1n });
    await server.admin('POST', `/admin/v1/clients/${c.clientId}/fundings`, {
      amountMinor: '500000',
      reference: 'WIRE-CSV-1',
    });
    const csv = [
      'bank_line_id,direction,amount_minor,currency,value_date,reference',
      'CSV-T-0001,credit,500000,VES,2026-11-20,WIRE-CSV-1',
      'CSV-T-0002,credit,777,VES,2026-11-20,NOBODY-KNOWS',
    ].join('\n');
    const res = await server.admin('POST', '/admin/v1/reconciliation/statements', { format: 'csv', content: csv });
    expect(res.status).toBe(201);
    expect(res.body.payload).toMatchObject({ lines: 2, newLines: 2, matched: 1, exceptions: 1 });
    expect(res.body.payload.exceptionsByKind).toEqual({ unfunded_credit: 1 });
    const open = await server.admin('GET', '/admin/v1/reconciliation/exceptions?kind=unfunded_credit');
    expect(JSON.stringify(open.body.payload.data)).toContain('CSV-T-0002');
  });

  it('refuses a malformed file whole, naming the line or element, and imports nothing', async () => {
    const before = await countLines();
    const csv = [
      'bank_line_id,direction,amount_minor,currency,value_date,reference',
      'CSV-B-0001,credit,100,VES,2026-11-20,OK-LINE',
      'CSV-B-0002,sideways,100,VES,2026-11-20,BAD-LINE',
    ].join('\n');
    const bad = await server.admin('POST', '/admin/v1/reconciliation/statements', { format: 'csv', content: csv });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toMatch(/line 3/);
    // The first entry's debit/credit indicator becomes nonsense.
    const xml = (await fixture('camt053-sample.xml')).replace(
      '<CdtDbtInd>DBIT</CdtDbtInd>',
      '<CdtDbtInd>SIDEWAYS</CdtDbtInd>',
    );
    const badXml = await server.admin('POST', '/admin/v1/reconciliation/statements', {
      format: 'camt053',
      content: xml,
    });
    expect(badXml.status).toBe(400);
    expect(badXml.body.error).toMatch(/CdtDbtInd/);
    expect(
      (await server.admin('POST', '/admin/v1/reconciliation/statements', { format: 'mt940', content: 'x' })).status,
    ).toBe(400);
    expect(await countLines()).toBe(before);
  });
});
