import type { Db } from '../db/db.ts';
import type { Rail, RailOutcome } from '../rails/rail.ts';
import type { Clock } from '../shared/clock.ts';
import { type Status, transition } from './lifecycle.ts';
import type { Payment } from './repository.ts';

/**
 * Hands a reserved payment to its rail, outside any transaction, then books what the rail said in one
 * transaction (lifecycle.transition). A thrown error from the rail proves nothing about the money, so it is
 * booked as unknown, never as failed.
 */
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

export interface DispatchDeps {
  db: Db;
  clock: Clock;
  rail: Rail;
  logger: { warn(obj: object, msg: string): void };
}

export async function dispatchPayment(deps: DispatchDeps, payment: Payment): Promise<Payment> {
  let outcome: RailOutcome;
  try {
    outcome = await deps.rail.submit({
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
    });
  } catch (err) {
    deps.logger.warn({ err, paymentId: payment.id }, 'rail submit threw; booking the payment as unknown');
    outcome = { kind: 'unknown', subStatus: 'reconciling', detail: 'rail error' };
  }
  const result = await deps.db.tx((q) => transition(q, deps.clock, payment.id, statusOfOutcome(outcome)));
  if (result.kind === 'moved' || result.kind === 'unchanged' || result.kind === 'not_allowed') return result.payment;
  throw new Error(`payment ${payment.id} vanished during dispatch`);
}
