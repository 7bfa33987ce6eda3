import { createHash } from 'node:crypto';
import type { PaymentDestination } from './model.ts';

/**
 * What makes two requests under one idempotency key "the same operation": amount, resolved destination, bank,
 * document, CCE name and quote. A replay must match it exactly, otherwise 409.
 */
export function paymentFingerprint(input: {
  amountMinor: bigint;
  destination: Omit<PaymentDestination, 'bankCode'> & { bankCode: string | null };
  quoteId: string | null;
}): string {
  const d = input.destination;
  const canonical = JSON.stringify([
    input.amountMinor.toString(),
    d.rail,
    d.account,
    d.bankCode,
    d.docType,
    d.docNumber,
    d.rail === 'CCE' ? d.beneficiaryName : null,
    input.quoteId,
  ]);
  return createHash('sha256').update(canonical).digest('hex');
}
