import { describe, expect, it } from 'vitest';
import type { PaymentState } from '../../src/payments/model.ts';
import { type BatchResult, matchBatch } from '../../src/reconciliation/matcher.ts';
import {
  type FundingFacts,
  fundingKey,
  type IncomingLine,
  type MatchFacts,
  type PaymentFacts,
  rawHashOf,
} from '../../src/reconciliation/model.ts';

let n = 0;
function line(direction: 'debit' | 'credit', amount: bigint, reference: string, raw?: string): IncomingLine {
  n++;
  return {
    bankLineId: `L${n}`,
    direction,
    amountMinor: amount,
    currency: 'VES',
    valueDate: '2026-01-01',
    reference,
    rawHash: rawHashOf(raw ?? `${direction};${amount};${reference};${n}`),
  };
}

function payment(id: string, state: PaymentState, amount = 1000n, extra: Partial<PaymentFacts> = {}): PaymentFacts {
  return { id, state, amountMinor: amount, currency: 'VES', debit: null, returned: false, ...extra };
}

function facts(
  payments: Record<string, PaymentFacts> = {},
  fundings: (FundingFacts & { reference: string })[] = [],
  debitsByHash: Record<string, { bankLineId: string; paymentId: string | null }> = {},
): MatchFacts {
  return {
    payments: new Map(Object.entries(payments)),
    fundings: new Map(fundings.map((f) => [fundingKey(f.currency, f.reference), f])),
    debitsByHash: new Map(Object.entries(debitsByHash)),
  };
}

type Row = { status: string; kind: string | null; payment: string | null; funding: string | null; booked: boolean };
const rows = (r: BatchResult): Row[] =>
  r.lines.map((o) => ({
    status: o.status,
    kind: o.matchKind ?? (o.exception ? `${o.exception.kind}/${o.exception.reason}` : null),
    payment: o.paymentId,
    funding: o.fundingId,
    booked: o.booked,
  }));

describe('debits', () => {
  const cases: [string, PaymentState, Partial<PaymentFacts>, Row, BatchResult['actions']][] = [
    [
      'unknown payment: its real debit completes it (03, 04, CCE 06)',
      'unknown',
      {},
      { status: 'matched', kind: 'payout', payment: 'pay_1', funding: null, booked: true },
      [{ kind: 'complete', paymentId: 'pay_1' }],
    ],
    [
      'processing payment (dispatch interrupted after the bank booked it) completes',
      'processing',
      {},
      { status: 'matched', kind: 'payout', payment: 'pay_1', funding: null, booked: true },
      [{ kind: 'complete', paymentId: 'pay_1' }],
    ],
    [
      'pending interbank transfer completes on its debit',
      'pending',
      {},
      { status: 'matched', kind: 'payout', payment: 'pay_1', funding: null, booked: true },
      [{ kind: 'complete', paymentId: 'pay_1' }],
    ],
    [
      'completed payment: the debit confirms it',
      'completed',
      {},
      { status: 'matched', kind: 'payout', payment: 'pay_1', funding: null, booked: true },
      [{ kind: 'debit_confirmed', paymentId: 'pay_1' }],
    ],
    [
      'failed payment without its return: awaiting',
      'failed',
      {},
      { status: 'awaiting', kind: null, payment: 'pay_1', funding: null, booked: false },
      [],
    ],
    [
      'a payment already debited: double_debit, not byte-identical',
      'completed',
      { debit: { bankLineId: 'OLD', status: 'matched' } },
      {
        status: 'exception',
        kind: 'double_debit/second_debit_of_payment',
        payment: 'pay_1',
        funding: null,
        booked: false,
      },
      [],
    ],
  ];
  for (const [what, state, extra, expected, actions] of cases) {
    it(what, () => {
      const d = line('debit', 1000n, 'REF1');
      const r = matchBatch([d], facts({ REF1: payment('pay_1', state, 1000n, extra) }));
      expect(rows(r)).toEqual([expected]);
      expect(r.actions).toEqual(actions);
    });
  }

  it('no payment with that reference: orphan_debit', () => {
    const r = matchBatch([line('debit', 1000n, 'NOPE')], facts());
    expect(rows(r)).toEqual([
      { status: 'exception', kind: 'orphan_debit/no_owner', payment: null, funding: null, booked: false },
    ]);
    expect(r.actions).toEqual([]);
  });

  it('the payment reference with another amount or currency: orphan_debit naming the payment, payment untouched', () => {
    const other = { ...line('debit', 1000n, 'REF1'), currency: 'USD' };
    const r = matchBatch([line('debit', 999n, 'REF1'), other], facts({ REF1: payment('pay_1', 'unknown', 1000n) }));
    expect(rows(r).map((x) => x.kind)).toEqual(['orphan_debit/amount_mismatch', 'orphan_debit/currency_mismatch']);
    expect(r.lines.every((o) => o.paymentId === 'pay_1')).toBe(true);
    expect(r.actions).toEqual([]);
  });

  it('a byte-identical second debit with its own bank id is a double_debit naming the original', () => {
    const first = line('debit', 1000n, 'REF1', 'same raw');
    const copy = line('debit', 1000n, 'REF1', 'same raw');
    const r = matchBatch([first, copy], facts({ REF1: payment('pay_1', 'completed') }));
    expect(rows(r)[1]).toEqual({
      status: 'exception',
      kind: 'double_debit/byte_identical',
      payment: 'pay_1',
      funding: null,
      booked: false,
    });
    expect(r.lines[1]!.exception!.relatedBankLineId).toBe(first.bankLineId);
    expect(r.actions).toEqual([{ kind: 'debit_confirmed', paymentId: 'pay_1' }]);
  });

  it('a byte-identical copy of a debit stored in an earlier batch is a double_debit too (orphans included)', () => {
    const copy = line('debit', 500n, 'MANUAL', 'orphan raw');
    const r = matchBatch(
      [copy],
      facts({}, [], { [rawHashOf('orphan raw')]: { bankLineId: 'EARLIER', paymentId: null } }),
    );
    expect(rows(r)[0]!.kind).toBe('double_debit/byte_identical');
    expect(r.lines[0]!.exception!.relatedBankLineId).toBe('EARLIER');
  });
});

describe('returns (credits naming a payment)', () => {
  it('CCE 07 evidence at once: debit and return of an unknown payment → failed, nothing booked', () => {
    const r = matchBatch(
      [line('debit', 1007n, 'R7'), line('credit', 1007n, 'R7')],
      facts({ R7: payment('pay_7', 'unknown', 1007n) }),
    );
    expect(rows(r)).toEqual([
      { status: 'matched', kind: 'payout', payment: 'pay_7', funding: null, booked: false },
      { status: 'matched', kind: 'return', payment: 'pay_7', funding: null, booked: false },
    ]);
    expect(r.actions).toEqual([{ kind: 'fail_returned', paymentId: 'pay_7' }]);
  });

  it('the return before the debit in the same batch pairs the same way', () => {
    const r = matchBatch(
      [line('credit', 1007n, 'R7'), line('debit', 1007n, 'R7')],
      facts({ R7: payment('pay_7', 'unknown', 1007n) }),
    );
    expect(rows(r).map((x) => x.kind)).toEqual(['return', 'payout']);
    expect(r.actions).toEqual([{ kind: 'fail_returned', paymentId: 'pay_7' }]);
  });

  it('a return after the debit was matched (completed): the payout is reversed', () => {
    const r = matchBatch(
      [line('credit', 1007n, 'R7')],
      facts({ R7: payment('pay_7', 'completed', 1007n, { debit: { bankLineId: 'D', status: 'matched' } }) }),
    );
    expect(rows(r)).toEqual([{ status: 'matched', kind: 'return', payment: 'pay_7', funding: null, booked: true }]);
    expect(r.actions).toEqual([{ kind: 'reverse', paymentId: 'pay_7' }]);
  });

  it('debit then return across the batch of a completed payment: confirmed, then reversed', () => {
    const r = matchBatch(
      [line('debit', 1007n, 'R7'), line('credit', 1007n, 'R7')],
      facts({ R7: payment('pay_7', 'completed', 1007n) }),
    );
    expect(r.actions).toEqual([
      { kind: 'debit_confirmed', paymentId: 'pay_7' },
      { kind: 'reverse', paymentId: 'pay_7' },
    ]);
    expect(rows(r).map((x) => x.booked)).toEqual([true, true]);
  });

  it('the return of a failed payment pairs its awaiting debit', () => {
    const r = matchBatch(
      [line('credit', 1007n, 'R7')],
      facts({ R7: payment('pay_7', 'failed', 1007n, { debit: { bankLineId: 'AW', status: 'awaiting' } }) }),
    );
    expect(rows(r)[0]).toMatchObject({ status: 'matched', kind: 'return', booked: false });
    expect(r.pairedAwaiting).toEqual(['AW']);
    expect(r.actions).toEqual([]);
  });

  it('a failed payment (the rail said so first) with debit and return in one batch: both matched', () => {
    const r = matchBatch(
      [line('debit', 1007n, 'R7'), line('credit', 1007n, 'R7')],
      facts({ R7: payment('pay_7', 'failed', 1007n) }),
    );
    expect(rows(r).map((x) => `${x.status}/${x.kind}/${x.booked}`)).toEqual([
      'matched/payout/false',
      'matched/return/false',
    ]);
    expect(r.actions).toEqual([]);
  });

  const unfunded: [string, PaymentFacts, bigint, string][] = [
    ['a return with no debit', payment('p', 'unknown', 1000n), 1000n, 'return_without_debit'],
    [
      'a second return',
      payment('p', 'failed', 1000n, { debit: { bankLineId: 'D', status: 'matched' }, returned: true }),
      1000n,
      'second_return',
    ],
    [
      'a return of another amount',
      payment('p', 'completed', 1000n, { debit: { bankLineId: 'D', status: 'matched' } }),
      999n,
      'amount_mismatch',
    ],
  ];
  for (const [what, p, amount, reason] of unfunded) {
    it(`${what}: unfunded_credit, no action`, () => {
      const r = matchBatch([line('credit', amount, 'RX')], facts({ RX: p }));
      expect(rows(r)[0]).toMatchObject({ status: 'exception', kind: `unfunded_credit/${reason}`, booked: false });
      expect(r.actions).toEqual([]);
    });
  }
});

describe('credits to fundings', () => {
  const f = (matched = false): FundingFacts & { reference: string } => ({
    id: 'fnd_1',
    amountMinor: 5000n,
    currency: 'VES',
    matched,
    reference: 'FUND-1',
  });

  it('the funding with that reference and amount: matched, booked (the funding booked the ledger)', () => {
    const r = matchBatch([line('credit', 5000n, 'FUND-1')], facts({}, [f()]));
    expect(rows(r)).toEqual([{ status: 'matched', kind: 'funding', payment: null, funding: 'fnd_1', booked: true }]);
  });

  const cases: [string, IncomingLine[], (FundingFacts & { reference: string })[], string[]][] = [
    ['no funding record', [line('credit', 5000n, 'WHO')], [f()], ['unfunded_credit/no_funding']],
    [
      'another amount (never matched by guess)',
      [line('credit', 4999n, 'FUND-1')],
      [f()],
      ['unfunded_credit/amount_mismatch'],
    ],
    [
      'a funding already matched',
      [line('credit', 5000n, 'FUND-1')],
      [f(true)],
      ['unfunded_credit/funding_already_matched'],
    ],
    [
      'the same funding twice in a batch',
      [line('credit', 5000n, 'FUND-1'), line('credit', 5000n, 'FUND-1')],
      [f()],
      ['funding', 'unfunded_credit/funding_already_matched'],
    ],
    [
      'another currency',
      [{ ...line('credit', 5000n, 'FUND-1'), currency: 'USD' }],
      [f()],
      ['unfunded_credit/no_funding'],
    ],
  ];
  for (const [what, lines, fundings, kinds] of cases) {
    it(what, () => {
      expect(rows(matchBatch(lines, facts({}, fundings))).map((x) => x.kind)).toEqual(kinds);
    });
  }
});

it('facts passed in are not mutated', () => {
  const p = payment('pay_1', 'unknown');
  const given = facts({ REF1: p });
  matchBatch([line('debit', 1000n, 'REF1')], given);
  expect(p).toEqual(payment('pay_1', 'unknown'));
});
