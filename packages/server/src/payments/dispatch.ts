import { type Rail, type RailOutcome, type RailTransfer, submitAll } from '../rails/rail.ts';
import type { Status } from './lifecycle.ts';
import type { Payment } from './repository.ts';

/** The payment status a rail's answer leads to. */
export function statusOfOutcome(outcome: RailOutcome): Status {
  switch (outcome.kind) {
    case 'completed':
      return { state: 'completed', subStatus: null };
    case 'pending':
      return { state: 'pending', subStatus: null };
    case 'failed':
      return { state: 'failed', subStatus: outcome.subStatus, failureCode: outcome.failureCode };
    case 'unknown':
      return { state: 'unknown', subStatus: outcome.subStatus };
  }
}

/** What the rail is handed for a reserved payment (the rail reference was stored with the payment). */
export function transferOf(payment: Payment): RailTransfer {
  return {
    railReference: payment.railReference,
    paymentId: payment.id,
    rail: payment.rail,
    amountMinor: payment.amountMinor,
    currency: 'VES',
    destination: {
      account: payment.account,
      bankCode: payment.bankCode!,
      docType: payment.docType!,
      docNumber: payment.docNumber!,
      name: payment.rail === 'CCE' ? payment.beneficiaryName : null,
    },
  };
}

/**
 * Hands a batch of reserved payments to the rail, outside any transaction. A thrown error proves nothing about
 * the money, so every payment of the call is booked as unknown, never as failed.
 */
export async function submitToRail(
  rail: Rail,
  payments: readonly Payment[],
  logger: { warn(obj: object, msg: string): void },
): Promise<RailOutcome[]> {
  try {
    return await submitAll(rail, payments.map(transferOf));
  } catch (err) {
    logger.warn({ err, payments: payments.length }, 'rail submit threw; booking the payments as unknown');
    return payments.map(() => ({ kind: 'unknown', subStatus: 'reconciling', detail: 'rail error' }));
  }
}
