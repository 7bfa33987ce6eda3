import { describe, expect, it } from 'vitest';
import type { RailCode } from '../../../src/config.ts';
import { chooseScenario, SCENARIOS, type ScenarioName } from '../../../src/rails/sandbox/index.ts';
import { destination, OTHER_BANK, OWN_BANK } from './fixtures.ts';

function pick(rail: RailCode, amountMinor: bigint, account?: string, bankCode = OTHER_BANK): ScenarioName {
  const dest = destination(rail, account === undefined ? { bankCode } : { account, bankCode });
  return chooseScenario({ rail, amountMinor, destination: dest }, OWN_BANK);
}

describe('chooseScenario', () => {
  it.each<[bigint, ScenarioName, ScenarioName]>([
    // amount, PM, CCE to another bank
    [150001n, 'insufficient_funds', 'insufficient_funds'],
    [150002n, 'no_answer', 'no_answer'],
    [150003n, 'moved_no_answer', 'moved_no_answer'],
    [150004n, 'duplicate_report', 'duplicate_report'],
    [150005n, 'restricted_beneficiary', 'restricted_beneficiary'],
    [150006n, 'instant', 'at_rail'],
    [150007n, 'instant', 'clearing_return'],
    [150008n, 'instant', 'interbank'],
    [150009n, 'limit_exceeded', 'limit_exceeded'],
    [150000n, 'instant', 'interbank'],
    [150010n, 'instant', 'interbank'],
    [150099n, 'instant', 'interbank'],
    [1n, 'insufficient_funds', 'insufficient_funds'],
    [12_345_678_901_234_567_890_103n, 'moved_no_answer', 'moved_no_answer'],
  ])('amount %s: PM %s, CCE %s', (amount, pm, cce) => {
    expect(pick('PM', amount)).toBe(pm);
    expect(pick('CCE', amount)).toBe(cce);
  });

  it('settles a CCE transfer to the bank itself at once', () => {
    expect(pick('CCE', 150000n, undefined, OWN_BANK)).toBe('instant');
    expect(pick('CCE', 150006n, undefined, OWN_BANK)).toBe('at_rail');
    expect(pick('CCE', 150001n, undefined, OWN_BANK)).toBe('insufficient_funds');
  });

  it.each(['4141234567', '041412345678', '0414123456', '0414-123456', '1414123456 ', '', '04141234567\n'])(
    'rejects PM phone %j before the magic amount',
    (account) => {
      expect(pick('PM', 150003n, account)).toBe('invalid_phone_number');
      expect(pick('PM', 150000n, account)).toBe('invalid_phone_number');
    },
  );

  it.each(['0105000000123456789', '010500000012345678901', '0105000000123456789a', ''])(
    'rejects CCE account %j before the magic amount',
    (account) => {
      expect(pick('CCE', 150006n, account)).toBe('invalid_account_number');
      expect(pick('CCE', 150000n, account, OWN_BANK)).toBe('invalid_account_number');
    },
  );

  it('does not apply the other rail destination rule', () => {
    // A 20-digit account is no phone, an 11-digit phone is no account.
    expect(pick('PM', 150000n, '01050000001234567890')).toBe('invalid_phone_number');
    expect(pick('CCE', 150000n, '04141234567')).toBe('invalid_account_number');
  });

  it('gives every answer the subStatus and failure code of the spec', () => {
    const failures = Object.entries(SCENARIOS).flatMap(([name, s]) =>
      [s.onSubmit, s.onSettle].filter((o) => o.kind === 'failed').map((o) => [name, o]),
    );
    expect(Object.fromEntries(failures)).toMatchObject({
      invalid_phone_number: { subStatus: 'wrong_beneficiary', failureCode: 'invalid_phone_number' },
      invalid_account_number: { subStatus: 'wrong_beneficiary', failureCode: 'invalid_account_number' },
      insufficient_funds: { subStatus: 'declined', failureCode: 'insufficient_funds' },
      restricted_beneficiary: { subStatus: 'wrong_beneficiary', failureCode: 'restricted_beneficiary' },
      clearing_return: { subStatus: 'declined', failureCode: 'returned_by_clearing_house' },
      limit_exceeded: { subStatus: 'declined', failureCode: 'limit_exceeded' },
    });
    expect(failures.map(([name]) => name).sort()).toEqual([
      'clearing_return',
      'insufficient_funds',
      'insufficient_funds',
      'invalid_account_number',
      'invalid_account_number',
      'invalid_phone_number',
      'invalid_phone_number',
      'limit_exceeded',
      'limit_exceeded',
      'restricted_beneficiary',
      'restricted_beneficiary',
    ]);
    // A failed answer proves no debit: no scenario that fails on submit moves money.
    for (const s of Object.values(SCENARIOS)) {
      if (s.onSubmit.kind === 'failed') expect(s.debit).toBe('none');
    }
  });
});
