import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type BankSim, startBankSim } from '../../src/bank-sim/bank-sim.ts';
import { HEADER_SIGNATURE, HEADER_TIMESTAMP } from '../../src/rails/gateway/signature.ts';
import { ManualClock } from '../../src/shared/clock.ts';
import { KEY_ID, reference, SECRET, signedRequest } from './sim-fixture.ts';

/** The simulator spoken to directly over HTTP, as an operator's client or the control API would. */

let clock: ManualClock;
let sim: BankSim;

beforeEach(async () => {
  clock = new ManualClock(Date.UTC(2026, 0, 5, 18, 0));
  sim = await startBankSim({
    port: 0,
    keyId: KEY_ID,
    secret: SECRET,
    clock,
    openingBalances: { VES: 1_000_000n },
  });
});

afterEach(async () => {
  await sim.close();
});

function body(ref = reference(), amountMinor = '1000') {
  return {
    reference: ref,
    rail: 'PM',
    amountMinor,
    currency: 'VES',
    destination: {
      account: '04141234567',
      bankCode: '0105',
      docType: 'V',
      docNumber: '12345678',
      name: null,
    },
  };
}

describe('authentication', () => {
  it('answers a correctly signed request', async () => {
    const res = await signedRequest(sim.url, 'GET', '/v1/balance?currency=VES');
    expect(res).toEqual({ status: 200, json: { currency: 'VES', balanceMinor: '1000000' } });
  });

  it('a bad signature is 401 bad_signature, and nothing is booked', async () => {
    const transfer = body();
    const res = await signedRequest(sim.url, 'POST', '/v1/transfers', transfer, { secret: 'x'.repeat(40) });
    expect(res).toEqual({ status: 401, json: { error: 'bad_signature' } });
    expect(sim.ledger.transfer(transfer.reference)).toBeUndefined();
    expect(sim.ledger.lines()).toHaveLength(0);
  });

  it('a signature over a different body is 401', async () => {
    const res = await signedRequest(sim.url, 'POST', '/v1/transfers', body(), {
      tamper: (h) => {
        h[HEADER_SIGNATURE] = h[HEADER_SIGNATURE]!.replace(/^./, (c) => (c === 'A' ? 'B' : 'A'));
      },
    });
    expect(res.status).toBe(401);
  });

  it('a timestamp skewed more than five minutes is 401 stale_timestamp', async () => {
    const old = await signedRequest(sim.url, 'GET', '/v1/balance?currency=VES', undefined, {
      nowMs: Date.now() - 5 * 60_000 - 5000,
    });
    expect(old).toEqual({ status: 401, json: { error: 'stale_timestamp' } });
    const ahead = await signedRequest(sim.url, 'GET', '/v1/balance?currency=VES', undefined, {
      nowMs: Date.now() + 5 * 60_000 + 5000,
    });
    expect(ahead.status).toBe(401);
  });

  it('missing headers and an unknown key are 401', async () => {
    const missing = await signedRequest(sim.url, 'GET', '/v1/balance?currency=VES', undefined, {
      tamper: (h) => {
        delete h[HEADER_TIMESTAMP];
      },
    });
    expect(missing).toEqual({ status: 401, json: { error: 'missing_auth' } });
    const unknown = await signedRequest(sim.url, 'GET', '/v1/balance?currency=VES', undefined, {
      keyId: 'other',
    });
    expect(unknown).toEqual({ status: 401, json: { error: 'unknown_key' } });
  });

  it('the control API needs the same signature', async () => {
    const res = await signedRequest(
      sim.url,
      'POST',
      '/_control/faults',
      { kind: 'offline' },
      { secret: 'y'.repeat(40) },
    );
    expect(res.status).toBe(401);
    expect(sim.faults.list()).toHaveLength(0);
  });
});

describe('transfers', () => {
  it('books a confirmed PM transfer once and reports it by reference', async () => {
    const transfer = body();
    const res = await signedRequest(sim.url, 'POST', '/v1/transfers', transfer);
    expect(res).toEqual({
      status: 200,
      json: { reference: transfer.reference, result: 'confirmed', reasonCode: null, detail: null },
    });
    const query = await signedRequest(sim.url, 'GET', `/v1/transfers/${transfer.reference}`);
    expect(query.json).toMatchObject({ reference: transfer.reference, result: 'confirmed' });
    expect(sim.ledger.balance('VES')).toBe(999_000n);
  });

  it('never books a reference twice, even when submitted concurrently', async () => {
    const transfer = body();
    const answers = await Promise.all(
      Array.from({ length: 6 }, () => signedRequest(sim.url, 'POST', '/v1/transfers', transfer)),
    );
    const results = answers.map((a) => (a.json as { result: string }).result).sort();
    expect(results).toEqual(['confirmed', 'duplicate', 'duplicate', 'duplicate', 'duplicate', 'duplicate']);
    expect(sim.ledger.linesFor(transfer.reference)).toHaveLength(1);
    expect(sim.ledger.balance('VES')).toBe(999_000n);
  });

  it('a reference declined once answers duplicate when sent again', async () => {
    const transfer = body(reference(), '2000000');
    const first = await signedRequest(sim.url, 'POST', '/v1/transfers', transfer);
    expect(first.json).toMatchObject({ result: 'declined', reasonCode: 'insufficient_funds' });
    const again = await signedRequest(sim.url, 'POST', '/v1/transfers', transfer);
    expect(again.json).toMatchObject({ result: 'duplicate' });
    expect(sim.ledger.lines()).toHaveLength(0);
  });

  it('an unknown reference is 404 transfer_not_found', async () => {
    const res = await signedRequest(sim.url, 'GET', '/v1/transfers/rr_nobody');
    expect(res).toEqual({ status: 404, json: { error: 'transfer_not_found' } });
  });

  it('a malformed request is 400 invalid_request naming the field', async () => {
    const res = await signedRequest(sim.url, 'POST', '/v1/transfers', { ...body(), amountMinor: 1000 });
    expect(res.status).toBe(400);
    expect(res.json).toMatchObject({
      error: 'invalid_request',
      detail: expect.stringContaining('amountMinor'),
    });
  });

  it('unknown routes are 404 and wrong methods 405', async () => {
    expect((await signedRequest(sim.url, 'GET', '/v2/anything')).status).toBe(404);
    expect((await signedRequest(sim.url, 'GET', '/v1/transfers')).status).toBe(405);
    expect((await signedRequest(sim.url, 'DELETE', '/v1/statement')).status).toBe(405);
  });
});

describe('the control API', () => {
  it('adds, lists and clears faults', async () => {
    const added = await signedRequest(sim.url, 'POST', '/_control/faults', { kind: 'offline', count: 2 });
    expect(added.status).toBe(201);
    expect(added.json).toMatchObject({ id: expect.any(String), fault: { kind: 'offline', count: 2 } });
    const listed = await signedRequest(sim.url, 'GET', '/_control/faults');
    expect((listed.json as { faults: unknown[] }).faults).toHaveLength(1);
    const cleared = await signedRequest(sim.url, 'DELETE', '/_control/faults');
    expect(cleared.json).toEqual({ cleared: 1 });
    expect(sim.faults.list()).toHaveLength(0);
  });

  it('removes one fault by id', async () => {
    const added = await signedRequest(sim.url, 'POST', '/_control/faults', { kind: 'cannot_process' });
    const id = (added.json as { id: string }).id;
    expect((await signedRequest(sim.url, 'DELETE', `/_control/faults/${id}`)).status).toBe(200);
    expect((await signedRequest(sim.url, 'DELETE', `/_control/faults/${id}`)).status).toBe(404);
  });

  it('refuses a fault it does not know, with the reason', async () => {
    const res = await signedRequest(sim.url, 'POST', '/_control/faults', { kind: 'explode' });
    expect(res).toEqual({
      status: 400,
      json: { error: 'invalid_request', detail: 'unknown fault kind "explode"' },
    });
  });

  it('"next N transfers": the first two are offline, the third goes through', async () => {
    await signedRequest(sim.url, 'POST', '/_control/faults', { kind: 'offline', count: 2 });
    const results: string[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await signedRequest(sim.url, 'POST', '/v1/transfers', body());
      results.push((res.json as { result: string }).result);
    }
    expect(results).toEqual(['offline', 'offline', 'confirmed']);
    expect(sim.faults.list()).toHaveLength(0);
  });

  it('a fault scoped to a reference leaves other transfers alone', async () => {
    const target = body();
    await signedRequest(sim.url, 'POST', '/_control/faults', {
      kind: 'cannot_process',
      reference: target.reference,
    });
    const other = await signedRequest(sim.url, 'POST', '/v1/transfers', body());
    expect(other.json).toMatchObject({ result: 'confirmed' });
    const hit = await signedRequest(sim.url, 'POST', '/v1/transfers', target);
    expect(hit.json).toMatchObject({ result: 'cannot_process' });
    expect(sim.ledger.linesFor(target.reference)).toHaveLength(0);
  });

  it('books a credit, which shows on the statement and in the balance', async () => {
    const res = await signedRequest(sim.url, 'POST', '/_control/credits', {
      amountMinor: '250000',
      reference: 'FUND-1',
    });
    expect(res.status).toBe(201);
    expect(res.json).toMatchObject({
      line: { direction: 'credit', amountMinor: '250000', reference: 'FUND-1' },
    });
    expect(sim.ledger.balance('VES')).toBe(1_250_000n);
    const statement = await signedRequest(sim.url, 'GET', '/v1/statement');
    expect((statement.json as { lines: unknown[] }).lines).toHaveLength(1);
  });
});

describe('the statement', () => {
  it('pages with limit and cursor; a cursor never given out is 400 invalid_cursor', async () => {
    for (let i = 1; i <= 3; i++) sim.ledger.credit({ amountMinor: BigInt(i), currency: 'VES', reference: `F${i}` });
    const first = await signedRequest(sim.url, 'GET', '/v1/statement?limit=2');
    const page1 = first.json as { lines: Array<{ reference: string }>; cursor: string };
    expect(page1.lines.map((l) => l.reference)).toEqual(['F1', 'F2']);
    const second = await signedRequest(sim.url, 'GET', `/v1/statement?since=${page1.cursor}&limit=2`);
    const page2 = second.json as { lines: Array<{ reference: string }>; cursor: string };
    expect(page2.lines.map((l) => l.reference)).toEqual(['F3']);
    const third = await signedRequest(sim.url, 'GET', `/v1/statement?since=${page2.cursor}`);
    expect(third.json).toEqual({ lines: [], cursor: page2.cursor });
    expect((await signedRequest(sim.url, 'GET', '/v1/statement?since=42')).json).toMatchObject({
      error: 'invalid_cursor',
    });
    expect((await signedRequest(sim.url, 'GET', '/v1/statement?limit=0')).status).toBe(400);
  });

  it('a line is written in the bank raw format without its own id', async () => {
    const line = sim.ledger.credit({ amountMinor: 123_456n, currency: 'VES', reference: 'FUND-9' });
    expect(line.raw).toBe('2026-01-05;C;1234.56;VES;ABONO;FUND-9');
    expect(line.raw).not.toContain(line.bankLineId);
  });

  it('value dates follow the bank local day (Caracas, UTC-4)', async () => {
    clock.set(new Date(Date.UTC(2026, 0, 6, 2, 0))); // 22:00 on the 5th in Caracas
    expect(sim.ledger.credit({ amountMinor: 1n, currency: 'VES', reference: 'F' }).valueDate).toBe('2026-01-05');
  });
});
