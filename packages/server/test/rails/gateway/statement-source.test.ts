import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type BankSim, startBankSim } from '../../../src/bank-sim/bank-sim.ts';
import { createGatewayRail } from '../../../src/rails/gateway/gateway-rail.ts';
import { createGatewayStatementSource, GatewayError } from '../../../src/rails/gateway/statement-source.ts';
import type { BankStatementLine, Rail, StatementSource } from '../../../src/rails/rail.ts';
import { ManualClock } from '../../../src/shared/clock.ts';
import { gatewayConfig, KEY_ID, pmTransfer, SECRET } from '../../bank-sim/sim-fixture.ts';

let clock: ManualClock;
let sim: BankSim;
let rail: Rail;

beforeEach(async () => {
  clock = new ManualClock(Date.UTC(2026, 0, 5, 18, 0));
  sim = await startBankSim({
    port: 0,
    keyId: KEY_ID,
    secret: SECRET,
    clock,
    openingBalances: { VES: 10_000_000n },
  });
  rail = createGatewayRail({ config: gatewayConfig(sim.url) });
});

afterEach(async () => {
  await sim.close();
});

/** Reads every page from `cursor` on; bounded so a cursor that never advances fails the test. */
async function readAll(source: StatementSource, cursor: string | null) {
  const lines: BankStatementLine[] = [];
  let pages = 0;
  for (; pages < 50; pages++) {
    const page = await source.fetchSince(cursor);
    cursor = page.cursor;
    if (page.lines.length === 0) break;
    lines.push(...page.lines);
  }
  expect(pages).toBeLessThan(50);
  return { lines, cursor, pages };
}

describe('the gateway statement source', () => {
  it('pages through the statement with a cursor, each line once, in bigint minor units', async () => {
    const source = createGatewayStatementSource({ config: gatewayConfig(sim.url), pageSize: 2 });
    expect(source.name).toBe('bank-gateway');
    const references: string[] = [];
    for (let i = 0; i < 5; i++) {
      const transfer = pmTransfer({ amountMinor: BigInt(1000 + i) });
      references.push(transfer.railReference);
      expect(await rail.submit(transfer)).toEqual({ kind: 'completed' });
    }
    const first = await source.fetchSince(null);
    expect(first.lines).toHaveLength(2);
    const all = await readAll(source, null);
    expect(all.pages).toBe(3);
    expect(all.lines.map((l) => l.reference)).toEqual(references);
    expect(all.lines.map((l) => l.amountMinor)).toEqual([1000n, 1001n, 1002n, 1003n, 1004n]);
    expect(new Set(all.lines.map((l) => l.bankLineId)).size).toBe(5);
    expect(all.lines[0]).toMatchObject({ direction: 'debit', currency: 'VES', valueDate: '2026-01-05' });

    // Only newer lines after the cursor.
    const later = pmTransfer();
    await rail.submit(later);
    const next = await readAll(source, all.cursor);
    expect(next.lines.map((l) => l.reference)).toEqual([later.railReference]);
  });

  it('delivers a delayed line after the cursor once it becomes visible', async () => {
    const source = createGatewayStatementSource({ config: gatewayConfig(sim.url) });
    const delayed = pmTransfer();
    sim.faults.inject({ kind: 'delay_lines', ms: 10_000, reference: delayed.railReference });
    await rail.submit(delayed);
    const onTime = pmTransfer();
    await rail.submit(onTime);

    const before = await readAll(source, null);
    expect(before.lines.map((l) => l.reference)).toEqual([onTime.railReference]);
    // The balance already moved for both.
    expect(await source.balance('VES')).toBe(10_000_000n - 2n * 150_000n);

    clock.advance(10_000);
    const after = await readAll(source, before.cursor);
    expect(after.lines.map((l) => l.reference)).toEqual([delayed.railReference]);
  });

  it('delivers a bank-made double debit as two lines with their own ids and byte-identical raw', async () => {
    const source = createGatewayStatementSource({ config: gatewayConfig(sim.url) });
    const transfer = pmTransfer();
    sim.faults.inject({ kind: 'duplicate_line', count: 1 });
    expect(await rail.submit(transfer)).toEqual({ kind: 'completed' });
    const { lines } = await readAll(source, null);
    expect(lines).toHaveLength(2);
    const [a, b] = lines as [BankStatementLine, BankStatementLine];
    expect(a.bankLineId).not.toBe(b.bankLineId);
    expect(a.raw).toBe(b.raw);
    expect({ ...a, bankLineId: '' }).toEqual({ ...b, bankLineId: '' });
    expect(await source.balance('VES')).toBe(10_000_000n - 2n * 150_000n);
  });

  it('reads the balance the bank reports', async () => {
    const source = createGatewayStatementSource({ config: gatewayConfig(sim.url) });
    expect(await source.balance('VES')).toBe(10_000_000n);
    expect(await source.balance('USD')).toBe(0n);
  });

  it('without a gateway, reading throws not_configured', async () => {
    const source = createGatewayStatementSource({ config: null });
    await expect(source.fetchSince(null)).rejects.toMatchObject({
      name: 'GatewayError',
      code: 'not_configured',
    });
    await expect(source.balance('VES')).rejects.toBeInstanceOf(GatewayError);
  });

  it('a cursor the bank never gave out is an HTTP error, not an empty page', async () => {
    const source = createGatewayStatementSource({ config: gatewayConfig(sim.url) });
    await expect(source.fetchSince('999')).rejects.toMatchObject({ code: 'http_status' });
  });

  it('a gateway that is down throws transport', async () => {
    const source = createGatewayStatementSource({ config: gatewayConfig(sim.url) });
    await sim.close();
    await expect(source.fetchSince(null)).rejects.toMatchObject({ code: 'transport' });
    sim = await startBankSim({ port: 0, keyId: KEY_ID, secret: SECRET });
  });

  it('one malformed line rejects the whole page', async () => {
    const page = {
      lines: [
        {
          bankLineId: 'b1',
          direction: 'debit',
          amountMinor: '100',
          currency: 'VES',
          valueDate: '2026-01-05',
          reference: 'r',
          raw: 'x',
        },
        {
          bankLineId: 'b2',
          direction: 'debit',
          amountMinor: '1.5',
          currency: 'VES',
          valueDate: '2026-01-05',
          reference: 'r',
          raw: 'x',
        },
      ],
      cursor: '2',
    };
    const source = createGatewayStatementSource({
      config: gatewayConfig('http://127.0.0.1:9'),
      fetch: async () => new Response(JSON.stringify(page), { status: 200 }),
    });
    await expect(source.fetchSince(null)).rejects.toThrow(/lines\[1\]\.amountMinor/);
  });

  it('keeps the caller cursor when the gateway answers a null one', async () => {
    const source = createGatewayStatementSource({
      config: gatewayConfig('http://127.0.0.1:9'),
      fetch: async () => new Response(JSON.stringify({ lines: [], cursor: null }), { status: 200 }),
    });
    expect(await source.fetchSince('17')).toEqual({ lines: [], cursor: '17' });
  });
});
