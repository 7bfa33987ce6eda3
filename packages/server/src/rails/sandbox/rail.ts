import type { Db } from '../../db/db.ts';
import type { Clock } from '../../shared/clock.ts';
import type { Rail, RailOutcome, RailStatus, RailTransfer } from '../rail.ts';
import type { SandboxBank } from './bank.ts';
import { chooseScenario, isScenarioName, SCENARIOS } from './scenarios.ts';

export interface SandboxRailDeps {
  bank: SandboxBank;
  db: Db;
  clock: Clock;
  /** Defaults to the bank's. */
  settleMs?: number;
  /** Defaults to the bank's. */
  ownBankCode?: string;
}

// A real bank rejects a reference it has already seen; that proves nothing about the first attempt.
const DUPLICATE_REFERENCE: RailOutcome = {
  kind: 'unknown',
  subStatus: 'reconciling',
  detail: 'sandbox: the bank rejected a duplicate reference',
};

function unreachable(err: unknown): RailOutcome {
  const message = err instanceof Error ? err.message : String(err);
  return { kind: 'unknown', subStatus: 'reconciling', detail: `sandbox: bank unreachable: ${message}` };
}

/**
 * The sandbox rail: decides each transfer by the spec's magic amounts (scenarios.ts) and books its
 * money movements on the simulated bank, in the database. The transfer record and its lines commit
 * together, so a reference is executed at most once even across restarts, and a re-query answers from
 * the stored scenario and the clock.
 */
export function createSandboxRail(deps: SandboxRailDeps): Rail {
  const { bank, db, clock } = deps;
  const settleMs = deps.settleMs ?? bank.settleMs;
  const ownBankCode = deps.ownBankCode ?? bank.ownBankCode;

  async function submit(transfer: RailTransfer): Promise<RailOutcome> {
    const name = chooseScenario(transfer, ownBankCode);
    const scenario = SCENARIOS[name];
    const now = clock.now();
    const settlesAt = new Date(now.getTime() + settleMs);
    return db.tx(async (q) => {
      const inserted = await q.query(
        `INSERT INTO sandbox_bank_transfers
           (rail_reference, payment_id, rail, amount_minor, currency, destination_account, destination_bank,
            scenario, submitted_at, settles_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
         ON CONFLICT (rail_reference) DO NOTHING
         RETURNING rail_reference`,
        [
          transfer.railReference,
          transfer.paymentId,
          transfer.rail,
          transfer.amountMinor.toString(10),
          transfer.currency,
          transfer.destination.account,
          transfer.destination.bankCode,
          name,
          now,
          settlesAt,
        ],
      );
      if (inserted.rows.length === 0) {
        await q.query('UPDATE sandbox_bank_transfers SET resubmissions = resubmissions + 1 WHERE rail_reference = $1', [
          transfer.railReference,
        ]);
        return { ...DUPLICATE_REFERENCE };
      }
      if (scenario.debit !== 'none') {
        await bank.bookPayout(q, {
          paymentId: transfer.paymentId,
          railReference: transfer.railReference,
          amountMinor: transfer.amountMinor,
          currency: transfer.currency,
          createdAt: now,
          visibleAt: scenario.debit === 'now' ? now : settlesAt,
          returnsMoney: scenario.returnsMoney,
        });
      }
      return { ...scenario.onSubmit };
    });
  }

  async function query(railReference: string): Promise<RailStatus> {
    const { rows } = await db.query<{ scenario: string; settles_at: Date | string }>(
      'SELECT scenario, settles_at FROM sandbox_bank_transfers WHERE rail_reference = $1',
      [railReference],
    );
    const row = rows[0];
    if (row === undefined) return { kind: 'not_found' };
    // A scenario this release no longer knows: the bank has the transfer but cannot say more.
    if (!isScenarioName(row.scenario)) return { kind: 'unknown', subStatus: 'reconciling' };
    const scenario = SCENARIOS[row.scenario];
    const settled = clock.now().getTime() >= new Date(row.settles_at).getTime();
    return { ...(settled ? scenario.onSettle : scenario.onSubmit) };
  }

  return {
    name: 'sandbox',
    simulated: true,
    // Like a real connector: a failure to reach the bank proves nothing about the debit, so it is
    // unknown (the whole booking was one transaction, but a lost COMMIT acknowledgement is ambiguous).
    submit: (transfer) => submit(transfer).catch(unreachable),
    query: (railReference) => query(railReference).catch(unreachable),
  };
}
