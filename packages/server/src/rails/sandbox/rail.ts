import type { Db } from '../../db/db.ts';
import { prepared } from '../../db/prepared.ts';
import type { Clock } from '../../shared/clock.ts';
import type { Rail, RailOutcome, RailStatus, RailTransfer } from '../rail.ts';
import type { SandboxBank } from './bank.ts';
import { renderRaw, valueDateOf } from './lines.ts';
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

const SUBMIT_SQL = prepared('SELECT rail_reference, accepted FROM sandbox_submit_transfers($1::jsonb)');

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

  // Like a bank's batch file: the whole batch is recorded and booked in one statement and one commit, or (the bank
  // unreachable) none of it. Each transfer's scenario and lines are decided here; the SQL only stores them.
  async function submitBatch(transfers: readonly RailTransfer[]): Promise<RailOutcome[]> {
    const now = clock.now();
    const settlesAt = new Date(now.getTime() + settleMs);
    const names = transfers.map((t) => chooseScenario(t, ownBankCode));
    const scenarios = names.map((name) => SCENARIOS[name]);
    const items = transfers.map((t, i) => {
      const scenario = scenarios[i]!;
      const visibleAt = scenario.debit === 'now' ? now : settlesAt;
      const line = (direction: 'debit' | 'credit', origin: 'payout' | 'return') => ({
        direction,
        origin,
        valueDate: valueDateOf(visibleAt),
        raw: renderRaw({
          valueDate: valueDateOf(visibleAt),
          direction,
          amountMinor: t.amountMinor,
          currency: t.currency,
          reference: t.railReference,
        }),
        visibleAt: visibleAt.toISOString(),
      });
      return {
        railReference: t.railReference,
        paymentId: t.paymentId,
        rail: t.rail,
        amountMinor: t.amountMinor.toString(10),
        currency: t.currency,
        account: t.destination.account,
        bankCode: t.destination.bankCode,
        scenario: names[i],
        submittedAt: now.toISOString(),
        settlesAt: settlesAt.toISOString(),
        lines:
          scenario.debit === 'none'
            ? []
            : [line('debit', 'payout'), ...(scenario.returnsMoney ? [line('credit', 'return')] : [])],
      };
    });
    const { rows } = await db.query<{ rail_reference: string; accepted: boolean }>(SUBMIT_SQL, [JSON.stringify(items)]);
    // One row per item, in order (a reference twice in one batch: the second is the duplicate).
    return transfers.map((_, i) =>
      rows[i]?.accepted === true ? { ...scenarios[i]!.onSubmit } : { ...DUPLICATE_REFERENCE },
    );
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
    submit: (transfer) => submitBatch([transfer]).then(([outcome]) => outcome!, unreachable),
    submitBatch: (transfers) => submitBatch(transfers).catch((err) => transfers.map(() => unreachable(err))),
    query: (railReference) => query(railReference).catch(unreachable),
  };
}
