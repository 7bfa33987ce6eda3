import type { AppContext } from '../context.ts';
import type { Db } from '../db/db.ts';
import { batchLinesFor } from '../reconciliation/ingest.ts';
import { createGatewayRail } from './gateway/gateway-rail.ts';
import { createGatewayStatementSource } from './gateway/statement-source.ts';
import { DEFAULT_STATEMENT_PAGE_LINES, type Rail, type StatementSource } from './rail.ts';
import { createSandboxBank, createSandboxRail, type SandboxBank } from './sandbox/index.ts';

/**
 * Same code, different final provider: the sandbox talks to the simulated bank, production to the operator's
 * bank gateway. Nothing else in the service knows which one it has.
 */
export interface RailSetup {
  rail: Rail;
  statements: StatementSource;
  /** Sandbox only: the simulated bank, for fundings and the operator's test controls. */
  sandboxBank: SandboxBank | null;
  /** `simulado` of /v2/version. */
  simulated: boolean;
}

/**
 * Lines a statement page should hold: reconciliation stores at least one whole page per transaction, so a page
 * longer than its batch (reconciliation/ingest.ts) would make the batch that long.
 */
export function statementPageLinesFor(kind: Db['kind']): number {
  return Math.min(DEFAULT_STATEMENT_PAGE_LINES, batchLinesFor(kind, true));
}

export function createRails(ctx: Pick<AppContext, 'config' | 'db' | 'clock'>): RailSetup {
  const pageLines = statementPageLinesFor(ctx.db.kind);
  if (ctx.config.env === 'sandbox') {
    const bank = createSandboxBank({
      db: ctx.db,
      clock: ctx.clock,
      settleMs: ctx.config.sandboxSettleMs,
      statementPageSize: pageLines,
    });
    return {
      rail: createSandboxRail({ bank, db: ctx.db, clock: ctx.clock }),
      statements: bank.statementSource(),
      sandboxBank: bank,
      simulated: true,
    };
  }
  const gateway = ctx.config.bankGateway;
  return {
    rail: createGatewayRail({ config: gateway }),
    statements: createGatewayStatementSource({ config: gateway, pageSize: pageLines }),
    sandboxBank: null,
    // Without a gateway nothing is connected to a bank: payments fail rejected_by_us and nothing moves.
    simulated: gateway === null,
  };
}
