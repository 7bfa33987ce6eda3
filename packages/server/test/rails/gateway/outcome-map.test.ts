import { describe, expect, it } from 'vitest';
import type { Exchange } from '../../../src/rails/gateway/client.ts';
import { outcomeOfResult, outcomeOfSubmit, statusOfQuery } from '../../../src/rails/gateway/outcome-map.ts';
import { TRANSFER_RESULTS, type TransferResult } from '../../../src/rails/gateway/protocol.ts';
import type { RailOutcome } from '../../../src/rails/rail.ts';

/** The mapping table of the spec, one row per result of the protocol. */

const EXPECTED: Record<TransferResult, RailOutcome> = {
  confirmed: { kind: 'completed' },
  settled: { kind: 'completed' },
  accepted_pending_settlement: { kind: 'pending' },
  held_at_clearing: { kind: 'unknown', subStatus: 'at_rail' },
  declined: { kind: 'failed', subStatus: 'declined', failureCode: 'insufficient_funds' },
  invalid_destination: { kind: 'failed', subStatus: 'wrong_beneficiary', failureCode: 'insufficient_funds' },
  returned: { kind: 'failed', subStatus: 'declined', failureCode: 'returned' },
  duplicate: { kind: 'unknown', subStatus: 'reconciling' },
  timeout: { kind: 'unknown', subStatus: 'reconciling' },
  outside_hours: { kind: 'unknown', subStatus: 'reconciling' },
  offline: { kind: 'unknown', subStatus: 'reconciling' },
  cannot_process: { kind: 'unknown', subStatus: 'reconciling' },
};

function answer(status: number, json: unknown): Exchange {
  return { kind: 'answer', status, json, text: JSON.stringify(json) };
}

describe('outcomeOfResult', () => {
  for (const result of TRANSFER_RESULTS) {
    it(`${result} → ${EXPECTED[result].kind}`, () => {
      const outcome = outcomeOfResult({ result, reasonCode: 'insufficient_funds', detail: null });
      expect(outcome).toMatchObject(EXPECTED[result]);
    });
  }

  it('declined without a reason code has a null failureCode', () => {
    expect(outcomeOfResult({ result: 'declined', reasonCode: null, detail: null })).toEqual({
      kind: 'failed',
      subStatus: 'declined',
      failureCode: null,
    });
  });

  it('every ambiguous result says which it was', () => {
    const outcome = outcomeOfResult({ result: 'offline', reasonCode: null, detail: 'core down' });
    expect(outcome).toEqual({
      kind: 'unknown',
      subStatus: 'reconciling',
      detail: 'bank answered offline: core down',
    });
  });
});

describe('outcomeOfSubmit', () => {
  const ref = 'rr_1';

  it('believes a well-formed 200 about the same reference', () => {
    expect(outcomeOfSubmit(answer(200, { reference: ref, result: 'confirmed' }), ref)).toEqual({
      kind: 'completed',
    });
  });

  const ambiguous: Array<[string, Exchange]> = [
    ['a transport failure after sending', { kind: 'transport', sent: true, detail: 'socket hang up' }],
    ['a connection never made', { kind: 'transport', sent: false, detail: 'connection not made (ECONNREFUSED)' }],
    ['a 500', answer(500, { error: 'internal' })],
    ['a 502 with an HTML body', { kind: 'answer', status: 502, json: undefined, text: '<html>' }],
    ['a 400', answer(400, { error: 'invalid_request' })],
    ['a 401', answer(401, { error: 'bad_signature' })],
    ['a 404 on submit', answer(404, { error: 'not_found' })],
    ['an unparseable 200', { kind: 'answer', status: 200, json: undefined, text: 'OK' }],
    ['a 200 about another reference', answer(200, { reference: 'rr_2', result: 'declined' })],
    ['a 200 without a reference', answer(200, { result: 'declined' })],
    ['a 200 with a result the protocol does not know', answer(200, { reference: ref, result: 'rejected' })],
    ['a 200 whose reasonCode is not a code', answer(200, { reference: ref, result: 'declined', reasonCode: 42 })],
    ['a 200 array', answer(200, [{ reference: ref, result: 'declined' }])],
  ];
  for (const [name, exchange] of ambiguous) {
    it(`${name} → unknown reconciling, never failed`, () => {
      const outcome = outcomeOfSubmit(exchange, ref);
      expect(outcome.kind).toBe('unknown');
      expect(outcome).toMatchObject({ subStatus: 'reconciling' });
    });
  }
});

describe('statusOfQuery', () => {
  it('not_found needs the protocol error code', () => {
    expect(statusOfQuery(answer(404, { error: 'transfer_not_found' }), 'rr_1')).toEqual({
      kind: 'not_found',
    });
    expect(statusOfQuery(answer(404, { error: 'not_found' }), 'rr_1').kind).toBe('unknown');
    expect(statusOfQuery({ kind: 'answer', status: 404, json: undefined, text: 'Not Found' }, 'rr_1').kind).toBe(
      'unknown',
    );
  });

  it('returned → failed declined returned', () => {
    expect(statusOfQuery(answer(200, { reference: 'rr_1', result: 'returned' }), 'rr_1')).toEqual({
      kind: 'failed',
      subStatus: 'declined',
      failureCode: 'returned',
    });
  });

  it('a failed re-query is unknown', () => {
    expect(statusOfQuery({ kind: 'transport', sent: true, detail: 'x' }, 'rr_1').kind).toBe('unknown');
  });
});
