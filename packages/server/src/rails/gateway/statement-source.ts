import type { BankGatewayConfig } from '../../config.ts';
import {
  type BankStatementLine,
  DEFAULT_STATEMENT_PAGE_LINES,
  type StatementPage,
  type StatementSource,
} from '../rail.ts';
import { createGatewayClient, type Exchange, type FetchLike } from './client.ts';
import { GATEWAY_RAIL_NAME } from './gateway-rail.ts';
import {
  BALANCE_PATH,
  CURRENCY_PATTERN,
  checkBalanceAnswer,
  checkStatementAnswer,
  STATEMENT_PATH,
  type WireStatementLine,
} from './protocol.ts';

export type GatewayErrorKind = 'not_configured' | 'transport' | 'http_status' | 'malformed_answer';

/**
 * Reading the statement has no safe default answer (an empty page would hide debits), so failures
 * throw; the reconciliation worker logs them and tries again on its next pass.
 */
export class GatewayError extends Error {
  constructor(
    readonly code: GatewayErrorKind,
    message: string,
  ) {
    super(message);
    this.name = 'GatewayError';
  }
}

export interface GatewayStatementSourceDeps {
  config: BankGatewayConfig | null;
  fetch?: FetchLike;
  /** Lines asked for per page (the gateway may return fewer). */
  pageSize?: number;
}

function toLine(line: WireStatementLine): BankStatementLine {
  return { ...line, amountMinor: BigInt(line.amountMinor) };
}

function answerOf(exchange: Exchange, what: string): unknown {
  if (exchange.kind === 'transport') throw new GatewayError('transport', `${what}: ${exchange.detail}`);
  if (exchange.status !== 200) {
    throw new GatewayError('http_status', `${what}: gateway answered HTTP ${exchange.status}`);
  }
  return exchange.json;
}

export function createGatewayStatementSource(deps: GatewayStatementSourceDeps): StatementSource {
  const pageSize = deps.pageSize ?? DEFAULT_STATEMENT_PAGE_LINES;
  if (!Number.isSafeInteger(pageSize) || pageSize < 1 || pageSize > 1000) {
    throw new RangeError('pageSize must be an integer between 1 and 1000');
  }
  const config = deps.config;
  const client = config === null ? null : createGatewayClient(config, deps.fetch ?? globalThis.fetch);

  function connected() {
    if (client === null) throw new GatewayError('not_configured', 'DISPERSA_BANK_GATEWAY_URL is not set');
    return client;
  }

  return {
    name: GATEWAY_RAIL_NAME,
    async fetchSince(cursor: string | null): Promise<StatementPage> {
      const query = new URLSearchParams();
      if (cursor !== null) query.set('since', cursor);
      query.set('limit', String(pageSize));
      const exchange = await connected().send('GET', `${STATEMENT_PATH}?${query.toString()}`, undefined);
      const checked = checkStatementAnswer(answerOf(exchange, 'statement'));
      if (!checked.ok) throw new GatewayError('malformed_answer', `statement: ${checked.problem}`);
      // A gateway with nothing new may answer a null cursor; keep our place rather than restart.
      return { lines: checked.value.lines.map(toLine), cursor: checked.value.cursor ?? cursor };
    },
    async balance(currency: string): Promise<bigint> {
      if (!CURRENCY_PATTERN.test(currency)) throw new RangeError(`not a currency code: ${currency}`);
      const target = `${BALANCE_PATH}?currency=${currency}`;
      const exchange = await connected().send('GET', target, undefined);
      const checked = checkBalanceAnswer(answerOf(exchange, 'balance'), currency);
      if (!checked.ok) throw new GatewayError('malformed_answer', `balance: ${checked.problem}`);
      return BigInt(checked.value.balanceMinor);
    },
  };
}
