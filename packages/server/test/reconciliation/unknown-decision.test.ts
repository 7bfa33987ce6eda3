import { describe, expect, it } from 'vitest';
import type { RailStatus } from '../../src/rails/rail.ts';
import { decideUnknown, NOT_RECEIVED_FAILURE_CODE } from '../../src/reconciliation/unknown-decision.ts';

const since = new Date('2026-01-01T00:00:00.000Z');
const budgetMs = 900_000;
const at = (ms: number) => new Date(since.getTime() + ms);

const reconciling: RailStatus = { kind: 'unknown', subStatus: 'reconciling' };
const atRail: RailStatus = { kind: 'unknown', subStatus: 'at_rail' };

describe('what a re-query of the rail proves about an unknown payment', () => {
  const cases: [string, RailStatus, number, 'reconciling' | 'at_rail' | 'under_review', unknown][] = [
    ['completed → completed', { kind: 'completed' }, 1, 'reconciling', { state: 'completed', subStatus: null }],
    [
      'failed after the fact (CCE 07) → failed with the rail code',
      { kind: 'failed', subStatus: 'declined', failureCode: 'returned_by_clearing_house' },
      1,
      'at_rail',
      { state: 'failed', subStatus: 'declined', failureCode: 'returned_by_clearing_house' },
    ],
    ['no answer within budget → wait', reconciling, budgetMs - 1, 'reconciling', 'wait'],
    ['at the clearing house within budget → wait', atRail, 10, 'at_rail', 'wait'],
    ['pending within budget → wait', { kind: 'pending' }, 10, 'reconciling', 'wait'],
    ['not found within budget → wait', { kind: 'not_found' }, budgetMs - 1, 'reconciling', 'wait'],
    [
      'no answer past the budget (02) → under_review',
      reconciling,
      budgetMs,
      'reconciling',
      { state: 'unknown', subStatus: 'under_review' },
    ],
    [
      'at_rail past the budget → under_review',
      atRail,
      budgetMs + 5,
      'at_rail',
      { state: 'unknown', subStatus: 'under_review' },
    ],
    [
      'no record at the rail past the budget (died after the hold) → failed, nothing moved',
      { kind: 'not_found' },
      budgetMs,
      'reconciling',
      { state: 'failed', subStatus: null, failureCode: NOT_RECEIVED_FAILURE_CODE },
    ],
    ['already under_review, still no answer → wait for the person', reconciling, budgetMs * 2, 'under_review', 'wait'],
  ];
  for (const [what, rail, elapsed, subStatus, expected] of cases) {
    it(what, () => {
      const d = decideUnknown({ subStatus, unknownSince: since, now: at(elapsed), budgetMs, rail });
      if (expected === 'wait') expect(d.kind).toBe('wait');
      else expect(d).toMatchObject({ kind: 'move', to: expected });
    });
  }

  it('a payment with no unknown_since starts its budget now', () => {
    const d = decideUnknown({ subStatus: 'reconciling', unknownSince: null, now: at(0), budgetMs, rail: reconciling });
    expect(d.kind).toBe('wait');
  });
});
