import type { RailOutcome, RailStatus } from '../rail.ts';
import type { Exchange } from './client.ts';
import { checkTransferAnswer, type TransferResult, type WireTransferAnswer } from './protocol.ts';

/**
 * How gateway answers become rail outcomes (interface-spec: Payment states, subStatus, and "Rail answers
 * that used to be reported as failed and now arrive as unknown"). The rule: `failed` only where the bank
 * proved no money left; anything that does not prove it is `unknown`.
 */

function reconciling(detail: string): RailOutcome {
  return { kind: 'unknown', subStatus: 'reconciling', detail };
}

export function outcomeOfResult(answer: Pick<WireTransferAnswer, 'result' | 'reasonCode' | 'detail'>): RailOutcome {
  const result: TransferResult = answer.result;
  const detail = answer.detail ?? undefined;
  switch (result) {
    case 'confirmed':
    case 'settled':
      return { kind: 'completed' };
    case 'accepted_pending_settlement':
      return { kind: 'pending' };
    case 'held_at_clearing':
      return { kind: 'unknown', subStatus: 'at_rail', ...(detail ? { detail } : {}) };
    case 'declined':
      return {
        kind: 'failed',
        subStatus: 'declined',
        failureCode: answer.reasonCode,
        ...(detail ? { detail } : {}),
      };
    case 'invalid_destination':
      return {
        kind: 'failed',
        subStatus: 'wrong_beneficiary',
        failureCode: answer.reasonCode,
        ...(detail ? { detail } : {}),
      };
    case 'returned':
      // The clearing house sent the money back: nothing left the account in the end.
      return {
        kind: 'failed',
        subStatus: 'declined',
        failureCode: 'returned',
        ...(detail ? { detail } : {}),
      };
    // None of these proves the absence of a debit: the bank may have booked it before saying so.
    case 'duplicate':
    case 'timeout':
    case 'outside_hours':
    case 'offline':
    case 'cannot_process':
      return reconciling(`bank answered ${result}${detail ? `: ${detail}` : ''}`);
    default: {
      const exhaustive: never = result;
      return reconciling(`unhandled result ${String(exhaustive)}`);
    }
  }
}

function errorCodeOf(json: unknown): string | null {
  if (typeof json !== 'object' || json === null) return null;
  const error = (json as { error?: unknown }).error;
  return typeof error === 'string' ? error.slice(0, 64) : null;
}

/**
 * The outcome of POST /v1/transfers. Only a 200 with a well-formed answer about this very reference is
 * believed; every other status, an unreadable body, and every transport failure is `unknown`: even a
 * connection that was never made does not prove an earlier attempt with the same reference did not land,
 * and a re-query (GET /v1/transfers/{reference}) settles it cheaply.
 */
export function outcomeOfSubmit(exchange: Exchange, reference: string): RailOutcome {
  if (exchange.kind === 'transport') {
    return reconciling(exchange.sent ? exchange.detail : `${exchange.detail}; re-query decides`);
  }
  if (exchange.status !== 200) {
    const code = errorCodeOf(exchange.json);
    return reconciling(`gateway answered HTTP ${exchange.status}${code ? ` (${code})` : ''}`);
  }
  const answer = checkTransferAnswer(exchange.json, reference);
  if (!answer.ok) return reconciling(`unreadable gateway answer: ${answer.problem}`);
  return outcomeOfResult(answer.value);
}

/**
 * The status from GET /v1/transfers/{reference}. `not_found` needs a 404 carrying the protocol's own
 * error code: a bare 404 from a proxy or a wrong base URL must not make a payment look never sent.
 */
export function statusOfQuery(exchange: Exchange, reference: string): RailStatus {
  if (exchange.kind === 'transport') return reconciling(`re-query failed: ${exchange.detail}`);
  if (exchange.status === 404 && errorCodeOf(exchange.json) === 'transfer_not_found') return { kind: 'not_found' };
  return outcomeOfSubmit(exchange, reference);
}
