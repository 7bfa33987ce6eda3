import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { PaymentState } from '../../src/payments/model.ts';
import { matchBatch, matchSteps } from '../../src/reconciliation/matcher.ts';
import {
  type FundingFacts,
  fundingKey,
  type IncomingLine,
  type MatchFacts,
  type PaymentFacts,
  rawHashOf,
} from '../../src/reconciliation/model.ts';
import { runAtOnce, runInSlices } from '../../src/shared/event-loop.ts';

/**
 * The pure matcher over random batches: payments in every state (some already debited or returned), fundings
 * (some already matched), and statements mixing payout debits, returns, fundings, orphans, unfunded credits
 * and byte-identical copies.
 */

const STATES: PaymentState[] = ['processing', 'pending', 'unknown', 'completed', 'failed'];

const world = fc.record({
  payments: fc.array(
    fc.record({
      state: fc.constantFrom(...STATES),
      amount: fc.bigInt({ min: 1n, max: 50n }),
      priorDebit: fc.constantFrom('none', 'matched', 'awaiting'),
      priorReturn: fc.boolean(),
    }),
    { maxLength: 6 },
  ),
  fundings: fc.array(fc.record({ amount: fc.bigInt({ min: 1n, max: 50n }), matched: fc.boolean() }), { maxLength: 4 }),
  lines: fc.array(
    fc.record({
      direction: fc.constantFrom('debit' as const, 'credit' as const),
      // Which reference: a payment's, a funding's, or an unknown one.
      target: fc.constantFrom('payment', 'funding', 'none'),
      index: fc.nat(10),
      // Most lines carry the right amount; some another one.
      amountRight: fc.boolean(),
      amount: fc.bigInt({ min: 1n, max: 50n }),
      // A byte-identical copy of an earlier line of the batch.
      copyOf: fc.option(fc.nat(20), { freq: 4 }),
    }),
    { maxLength: 30 },
  ),
});

type World = typeof world extends fc.Arbitrary<infer T> ? T : never;

function build(w: World): { lines: IncomingLine[]; facts: MatchFacts } {
  const payments = new Map<string, PaymentFacts>();
  w.payments.forEach((p, i) => {
    const debit = p.priorDebit === 'none' ? null : { bankLineId: `OLD-D${i}`, status: p.priorDebit };
    payments.set(`PREF${i}`, {
      id: `pay_${i}`,
      state: p.state,
      amountMinor: p.amount,
      currency: 'VES',
      debit,
      returned: debit !== null && debit.status === 'matched' && p.priorReturn,
    });
  });
  const fundings = new Map<string, FundingFacts>();
  w.fundings.forEach((f, i) => {
    fundings.set(fundingKey('VES', `FREF${i}`), {
      id: `fnd_${i}`,
      amountMinor: f.amount,
      currency: 'VES',
      matched: f.matched,
    });
  });
  const lines: IncomingLine[] = [];
  w.lines.forEach((l, i) => {
    const earlier = l.copyOf !== null && lines.length > 0 ? lines[l.copyOf % lines.length]! : null;
    if (earlier !== null) {
      lines.push({ ...earlier, bankLineId: `NEW${i}` });
      return;
    }
    let reference = `NOBODY${i}`;
    let amount = l.amount;
    if (l.target === 'payment' && w.payments.length > 0) {
      const k = l.index % w.payments.length;
      reference = `PREF${k}`;
      if (l.amountRight) amount = w.payments[k]!.amount;
    } else if (l.target === 'funding' && w.fundings.length > 0) {
      const k = l.index % w.fundings.length;
      reference = `FREF${k}`;
      if (l.amountRight) amount = w.fundings[k]!.amount;
    }
    lines.push({
      bankLineId: `NEW${i}`,
      direction: l.direction,
      amountMinor: amount,
      currency: 'VES',
      valueDate: '2026-01-01',
      reference,
      rawHash: rawHashOf(`${l.direction};${amount};${reference};${i}`),
    });
  });
  return { lines, facts: { payments, fundings, debitsByHash: new Map() } };
}

describe('matcher properties', () => {
  it('every line gets exactly one consistent outcome, and no payment or funding is matched twice', () => {
    fc.assert(
      fc.property(world, (w) => {
        const { lines, facts } = build(w);
        const result = matchBatch(lines, facts);
        expect(result.lines.map((o) => o.line.bankLineId)).toEqual(lines.map((l) => l.bankLineId));
        expect(matchBatch(lines, facts)).toEqual(result);

        for (const o of result.lines) {
          expect(o.status === 'matched').toBe(o.matchKind !== null);
          expect(o.status === 'exception').toBe(o.exception !== null);
          if (o.booked) expect(o.status).toBe('matched');
          if (o.matchKind === 'funding') expect(o.line.direction).toBe('credit');
          if (o.matchKind === 'payout' || o.status === 'awaiting') expect(o.line.direction).toBe('debit');
          if (o.matchKind === 'return') expect(o.line.direction).toBe('credit');
          if (o.exception?.kind === 'unfunded_credit') expect(o.line.direction).toBe('credit');
          if (o.exception?.kind === 'orphan_debit' || o.exception?.kind === 'double_debit') {
            expect(o.line.direction).toBe('debit');
          }
          // A matched line carries exactly the owner's money.
          if (o.matchKind === 'payout' || o.matchKind === 'return') {
            const p = [...facts.payments.values()].find((x) => x.id === o.paymentId)!;
            expect(o.line.amountMinor).toBe(p.amountMinor);
          }
          if (o.matchKind === 'funding') {
            const f = [...facts.fundings.values()].find((x) => x.id === o.fundingId)!;
            expect(o.line.amountMinor).toBe(f.amountMinor);
            expect(f.matched).toBe(false);
          }
        }

        // Per payment: at most one debit and one return ever, counting what was stored before.
        for (const p of facts.payments.values()) {
          const mine = result.lines.filter((o) => o.paymentId === p.id);
          const debits = mine.filter((o) => o.matchKind === 'payout' || o.status === 'awaiting').length;
          const returns = mine.filter((o) => o.matchKind === 'return').length;
          expect(debits + (p.debit === null ? 0 : 1)).toBeLessThanOrEqual(1);
          expect(returns + (p.returned ? 1 : 0)).toBeLessThanOrEqual(1);
          const actions = result.actions.filter((a) => a.paymentId === p.id).map((a) => a.kind);
          const decided = actions.filter((a) => a === 'complete' || a === 'fail_returned');
          expect(decided.length).toBeLessThanOrEqual(1);
          if (decided.length > 0) expect(['processing', 'pending', 'unknown']).toContain(p.state);
          const bookedDebits = mine.filter((o) => o.matchKind === 'payout' && o.booked).length;
          const bookedReturns = mine.filter((o) => o.matchKind === 'return' && o.booked).length;
          // The ledger moves exactly with the booked lines: a completion or confirmation per booked debit,
          // a reversal per booked return.
          expect(bookedDebits).toBe(actions.filter((a) => a === 'complete' || a === 'debit_confirmed').length);
          expect(bookedReturns).toBe(actions.filter((a) => a === 'reverse').length);
          if (actions.includes('fail_returned')) {
            expect(
              mine
                .filter((o) => o.status === 'matched' && !o.booked)
                .map((o) => o.matchKind)
                .sort(),
            ).toEqual(['payout', 'return']);
          }
          // A payment final before the batch is never completed or failed again.
          if (p.state === 'failed') expect(actions.filter((a) => a !== 'debit_confirmed')).toEqual([]);
        }
        for (const f of facts.fundings.values()) {
          expect(result.lines.filter((o) => o.fundingId === f.id).length + (f.matched ? 1 : 0)).toBeLessThanOrEqual(1);
        }
        // Byte-identical copies: only the first of a hash can be anything but a double_debit.
        const firstOfHash = new Map<string, string>();
        for (const o of result.lines) {
          if (o.line.direction !== 'debit') continue;
          const first = firstOfHash.get(o.line.rawHash);
          if (first === undefined) firstOfHash.set(o.line.rawHash, o.line.bankLineId);
          else {
            expect(o.exception).toMatchObject({
              kind: 'double_debit',
              reason: 'byte_identical',
              relatedBankLineId: first,
            });
          }
        }
        // Paired awaiting debits are the payments' stored awaiting ones.
        for (const id of result.pairedAwaiting) expect(id).toMatch(/^OLD-D/);
      }),
      { numRuns: 500 },
    );
  });

  it('in slices (as ingestion runs it between requests) it decides exactly what it decides in one stretch', async () => {
    await fc.assert(
      fc.asyncProperty(world, fc.integer({ min: 1, max: 7 }), async (w, slice) => {
        const { lines, facts } = build(w);
        const whole = matchBatch(lines, facts);
        // Each yield is a point where other work may run: the generator must stop at them, one per slice.
        let yields = 0;
        const steps = matchSteps(lines, facts, slice);
        const counted = (function* () {
          for (;;) {
            const next = steps.next();
            if (next.done) return next.value;
            yields++;
            yield;
          }
        })();
        expect(runAtOnce(counted)).toEqual(whole);
        const returns = lines.filter((l) => l.direction === 'credit' && facts.payments.has(l.reference)).length;
        expect(yields).toBe(
          Math.max(0, Math.ceil(lines.length / slice) - 1) + Math.max(0, Math.ceil(returns / slice) - 1),
        );
        expect(await runInSlices(matchSteps(lines, facts, slice))).toEqual(whole);
      }),
      { numRuns: 200 },
    );
  });
});
