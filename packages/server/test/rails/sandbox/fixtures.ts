import type { RailCode } from '../../../src/config.ts';
import type { RailDestination, RailTransfer } from '../../../src/rails/rail.ts';

export const OWN_BANK = '0102';
export const OTHER_BANK = '0105';
export const SETTLE_MS = 2000;
export const START = Date.UTC(2026, 2, 10, 12, 0, 0);

let counter = 0;

export function destination(rail: RailCode, overrides: Partial<RailDestination> = {}): RailDestination {
  return rail === 'PM'
    ? {
        account: '04141234567',
        bankCode: OTHER_BANK,
        docType: 'V',
        docNumber: '12345678',
        name: null,
        ...overrides,
      }
    : {
        account: '01050000001234567890',
        bankCode: OTHER_BANK,
        docType: 'V',
        docNumber: '12345678',
        name: 'Ana Perez',
        ...overrides,
      };
}

/** A transfer with a fresh reference and payment id. */
export function transfer(rail: RailCode, amountMinor: bigint, overrides: Partial<RailDestination> = {}): RailTransfer {
  counter += 1;
  return {
    railReference: `SBXREF${String(counter).padStart(6, '0')}`,
    paymentId: `pay_test${counter}`,
    rail,
    amountMinor,
    currency: 'VES',
    destination: destination(rail, overrides),
  };
}
