import type { RailCode } from '../config.ts';
import type { Destination, DocType } from '../rails/rail.ts';

/**
 * A POST /v2/payments body, already checked by PaymentBody (schemas.ts: the one statement of the rules, applied by
 * the route), turned into what the payment core works with. Nothing is validated here.
 */

/** An inline destination of the body (way 2): a whole Destination (rails/rail.ts). */
export type InlineDestination = Destination;

export type PaymentRequest = {
  amountMinor: bigint;
  quoteId: string | null;
} & ({ way: 'beneficiary'; beneficiaryId: string } | { way: 'inline'; destination: InlineDestination });

const text = (body: Record<string, unknown>, name: string): string => {
  const value = body[name];
  // Only a body that skipped the route's schema can get here; that is a defect, not a client error.
  if (typeof value !== 'string') throw new TypeError(`payment body field ${name} was not validated`);
  return value;
};

export function toPaymentRequest(body: Record<string, unknown>): PaymentRequest {
  const amountMinor = BigInt(text(body, 'amountMinor'));
  const quoteId = body['quoteId'] === undefined ? null : text(body, 'quoteId');
  if (body['beneficiaryId'] !== undefined) {
    return { amountMinor, quoteId, way: 'beneficiary', beneficiaryId: text(body, 'beneficiaryId') };
  }
  const rail = text(body, 'rail') as RailCode;
  return {
    amountMinor,
    quoteId,
    way: 'inline',
    destination: {
      rail,
      account: text(body, 'beneficiary'),
      bankCode: text(body, 'bankCode'),
      docType: text(body, 'docType') as DocType,
      docNumber: text(body, 'docNumber'),
      beneficiaryName: rail === 'CCE' ? text(body, 'beneficiaryName') : null,
    },
  };
}
