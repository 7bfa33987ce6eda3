import type { RailOutcome, RailTransfer } from '../rail.ts';

/**
 * The simulated outcomes of the sandbox rail, as pure data: the spec's "Sandbox magic amounts" table
 * plus destination checks. The rail stores only the scenario name of each transfer, so the answer to a
 * re-query is recomputed from this table and the clock, and survives a restart.
 */
export type ScenarioName =
  | 'invalid_phone_number'
  | 'invalid_account_number'
  | 'insufficient_funds'
  | 'no_answer'
  | 'moved_no_answer'
  | 'duplicate_report'
  | 'restricted_beneficiary'
  | 'at_rail'
  | 'clearing_return'
  | 'limit_exceeded'
  | 'instant'
  | 'interbank';

export interface Scenario {
  /** The answer to submit, and to query until the transfer settles. */
  onSubmit: RailOutcome;
  /** The answer to query from settlement on (submission + settleMs). */
  onSettle: RailOutcome;
  /** When the bank shows the debit: never, at once, or at settlement. */
  debit: 'none' | 'now' | 'settle';
  /** Whether a credit giving the money back shows at settlement (clearing-house return). */
  returnsMoney: boolean;
}

const completed: RailOutcome = { kind: 'completed' };

function failed(subStatus: 'declined' | 'wrong_beneficiary', failureCode: string, detail: string): RailOutcome {
  return { kind: 'failed', subStatus, failureCode, detail };
}

function immediate(outcome: RailOutcome, debit: 'none' | 'now'): Scenario {
  return { onSubmit: outcome, onSettle: outcome, debit, returnsMoney: false };
}

export const SCENARIOS: Record<ScenarioName, Scenario> = {
  invalid_phone_number: immediate(
    failed('wrong_beneficiary', 'invalid_phone_number', 'sandbox: phone is not 11 digits starting with 0'),
    'none',
  ),
  invalid_account_number: immediate(
    failed('wrong_beneficiary', 'invalid_account_number', 'sandbox: account is not 20 digits'),
    'none',
  ),
  insufficient_funds: immediate(
    failed('declined', 'insufficient_funds', 'sandbox: insufficient funds in the paying account'),
    'none',
  ),
  // The bank never learns the outcome; reconciliation's waiting budget runs out (under_review).
  no_answer: {
    onSubmit: { kind: 'unknown', subStatus: 'reconciling', detail: 'sandbox: no answer from the bank' },
    onSettle: { kind: 'unknown', subStatus: 'reconciling', detail: 'sandbox: no answer from the bank' },
    debit: 'none',
    returnsMoney: false,
  },
  // The double-payment trap: no answer, yet the money moved.
  moved_no_answer: {
    onSubmit: { kind: 'unknown', subStatus: 'reconciling', detail: 'sandbox: no answer from the bank' },
    onSettle: completed,
    debit: 'settle',
    returnsMoney: false,
  },
  duplicate_report: {
    onSubmit: {
      kind: 'unknown',
      subStatus: 'reconciling',
      detail: 'sandbox: the bank reports a duplicate operation',
    },
    onSettle: completed,
    debit: 'settle',
    returnsMoney: false,
  },
  restricted_beneficiary: immediate(
    failed('wrong_beneficiary', 'restricted_beneficiary', 'sandbox: restricted or invalid beneficiary'),
    'none',
  ),
  at_rail: {
    onSubmit: { kind: 'unknown', subStatus: 'at_rail', detail: 'sandbox: in flight at the clearing house' },
    onSettle: completed,
    debit: 'settle',
    returnsMoney: false,
  },
  clearing_return: {
    onSubmit: { kind: 'unknown', subStatus: 'at_rail', detail: 'sandbox: in flight at the clearing house' },
    onSettle: failed(
      'declined',
      'returned_by_clearing_house',
      'sandbox: rejected by the clearing house, money returned',
    ),
    debit: 'settle',
    returnsMoney: true,
  },
  limit_exceeded: immediate(
    failed('declined', 'limit_exceeded', 'sandbox: amount exceeds the permitted limit'),
    'none',
  ),
  instant: immediate(completed, 'now'),
  // Interbank transfer to another bank: accepted by the clearing house, settles later.
  interbank: { onSubmit: { kind: 'pending' }, onSettle: completed, debit: 'settle', returnsMoney: false },
};

const PHONE = /^0\d{10}$/;
const ACCOUNT = /^\d{20}$/;

/** Picks the scenario of a transfer: a malformed destination first, then the last two digits of the amount. */
export function chooseScenario(
  transfer: Pick<RailTransfer, 'rail' | 'amountMinor' | 'destination'>,
  ownBankCode: string,
): ScenarioName {
  const cce = transfer.rail === 'CCE';
  if (!cce && !PHONE.test(transfer.destination.account)) return 'invalid_phone_number';
  if (cce && !ACCOUNT.test(transfer.destination.account)) return 'invalid_account_number';
  switch (transfer.amountMinor % 100n) {
    case 1n:
      return 'insufficient_funds';
    case 2n:
      return 'no_answer';
    case 3n:
      return 'moved_no_answer';
    case 4n:
      return 'duplicate_report';
    case 5n:
      return 'restricted_beneficiary';
    case 6n:
      if (cce) return 'at_rail';
      break;
    case 7n:
      if (cce) return 'clearing_return';
      break;
    case 9n:
      return 'limit_exceeded';
  }
  if (cce && transfer.destination.bankCode !== ownBankCode) return 'interbank';
  return 'instant';
}

export function isScenarioName(name: string): name is ScenarioName {
  return Object.hasOwn(SCENARIOS, name);
}
