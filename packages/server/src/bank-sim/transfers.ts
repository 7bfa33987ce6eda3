import type { TransferResult, WireTransferAnswer, WireTransferRequest } from '../rails/gateway/protocol.ts';
import type { Clock } from '../shared/clock.ts';
import { type FaultBook, OUTCOME_KINDS } from './faults.ts';
import type { SimLedger, SimTransfer } from './ledger.ts';

/**
 * How the simulated bank handles POST /v1/transfers: refusals that book nothing, the duplicate check,
 * its own checks (destination, limit, funds), then booking; faults pick which of these answers is given
 * and how it is delivered.
 */

/** How the HTTP layer delivers the decision. */
export type Delivery =
  | { kind: 'answer'; answer: WireTransferAnswer }
  /** Hold the answer back: never send it (null) or send it after answerAfterMs. */
  | { kind: 'stall'; answer: WireTransferAnswer; answerAfterMs: number | null }
  | { kind: 'drop' }
  | { kind: 'http_error'; status: number }
  | { kind: 'malformed' };

export interface TransferDeps {
  ledger: SimLedger;
  faults: FaultBook;
  clock: Clock;
  ownBankCode: string;
  settleMs: number;
  perTransferLimitMinor: bigint | null;
}

function wire(reference: string, result: TransferResult, reasonCode: string | null = null): WireTransferAnswer {
  return { reference, result, reasonCode, detail: null };
}

function answer(reference: string, result: TransferResult, reasonCode: string | null = null): Delivery {
  return { kind: 'answer', answer: wire(reference, result, reasonCode) };
}

/** The bank's own check of the destination; null when it accepts it. */
export function destinationProblem(request: WireTransferRequest): string | null {
  const { destination, rail } = request;
  if (rail === 'PM' && !/^0\d{10}$/.test(destination.account)) return 'invalid_phone_number';
  if (rail === 'CCE' && !/^\d{20}$/.test(destination.account)) return 'invalid_account_number';
  if (!/^\d{4}$/.test(destination.bankCode)) return 'invalid_bank_code';
  if (!/^\d{1,15}$/.test(destination.docNumber)) return 'invalid_document';
  if (rail === 'CCE' && (destination.name === null || destination.name.length === 0 || destination.name.length > 35)) {
    return 'invalid_beneficiary_name';
  }
  return null;
}

export function processTransfer(deps: TransferDeps, request: WireTransferRequest): Delivery {
  const { ledger, clock } = deps;
  const { reference } = request;
  const fault = deps.faults.take(OUTCOME_KINDS, reference);
  const amountMinor = BigInt(request.amountMinor);

  // Refused before anything is recorded: a re-query finds nothing.
  switch (fault?.kind) {
    case 'offline':
    case 'outside_hours':
    case 'cannot_process':
      return answer(reference, fault.kind);
    case 'bank_timeout':
      if (!fault.booked) return answer(reference, 'timeout');
      break;
    case 'drop_connection':
      if (!fault.afterBooking) return { kind: 'drop' };
      break;
    case 'http_error':
      if (!fault.afterBooking) return { kind: 'http_error', status: fault.status };
      break;
    case 'malformed_answer':
      if (!fault.afterBooking) return { kind: 'malformed' };
      break;
  }

  // A reference is booked at most once, whatever else is going on.
  if (ledger.transfer(reference) !== undefined) return answer(reference, 'duplicate');

  const now = clock.now();
  const base = {
    reference,
    rail: request.rail,
    amountMinor,
    currency: request.currency,
    destination: request.destination,
    submittedAt: now,
    next: null,
  };
  const refuse = (result: 'declined' | 'invalid_destination', reasonCode: string): Delivery => {
    ledger.record({ ...base, result, reasonCode });
    return answer(reference, result, reasonCode);
  };

  if (fault?.kind === 'decline') return refuse('declined', fault.reasonCode);
  if (fault?.kind === 'invalid_destination') return refuse('invalid_destination', fault.reasonCode);
  const problem = destinationProblem(request);
  if (problem !== null) return refuse('invalid_destination', problem);
  if (request.currency !== 'VES') return refuse('declined', 'currency_not_supported');
  if (deps.perTransferLimitMinor !== null && amountMinor > deps.perTransferLimitMinor) {
    return refuse('declined', 'limit_exceeded');
  }
  if (ledger.balance(request.currency) < amountMinor) return refuse('declined', 'insufficient_funds');

  const later = (ms: number, result: 'settled' | 'returned') => ({
    at: new Date(now.getTime() + ms),
    result,
  });
  const interbank = request.rail === 'CCE' && request.destination.bankCode !== deps.ownBankCode;
  let transfer: SimTransfer = interbank
    ? {
        ...base,
        result: 'accepted_pending_settlement',
        reasonCode: null,
        next: later(deps.settleMs, 'settled'),
      }
    : { ...base, result: 'confirmed', reasonCode: null };
  if (fault?.kind === 'hold_at_clearing') {
    transfer = {
      ...base,
      result: 'held_at_clearing',
      reasonCode: null,
      next: later(fault.releaseAfterMs, fault.outcome),
    };
  } else if (fault?.kind === 'late_return') {
    transfer = {
      ...base,
      result: 'accepted_pending_settlement',
      reasonCode: null,
      next: later(fault.returnAfterMs, 'returned'),
    };
  }

  ledger.record(transfer);
  ledger.book({
    direction: 'debit',
    amountMinor,
    currency: request.currency,
    reference,
    narrative:
      request.rail === 'PM' ? `PAGO MOVIL ${request.destination.account}` : `TRANSF CCE ${request.destination.account}`,
  });

  const booked = wire(reference, transfer.result);
  switch (fault?.kind) {
    case 'duplicate_report':
      return answer(reference, 'duplicate');
    case 'bank_timeout':
      return answer(reference, 'timeout');
    case 'timeout_after_booking':
      return { kind: 'stall', answer: booked, answerAfterMs: fault.answerAfterMs };
    case 'drop_connection':
      return { kind: 'drop' };
    case 'http_error':
      return { kind: 'http_error', status: fault.status };
    case 'malformed_answer':
      return { kind: 'malformed' };
    default:
      return { kind: 'answer', answer: booked };
  }
}

/** GET /v1/transfers/{reference}: the transfer as it stands now, or null when the bank never recorded it. */
export function queryTransfer(ledger: SimLedger, reference: string): WireTransferAnswer | null {
  const transfer = ledger.transfer(reference);
  if (transfer === undefined) return null;
  return wire(reference, transfer.result, transfer.reasonCode);
}
