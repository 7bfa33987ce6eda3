import type { BankGatewayConfig } from '../../config.ts';
import type { Rail, RailOutcome, RailStatus, RailTransfer } from '../rail.ts';
import { createGatewayClient, type FetchLike, type GatewayClient } from './client.ts';
import { outcomeOfSubmit, statusOfQuery } from './outcome-map.ts';
import { TRANSFERS_PATH, type WireTransferRequest } from './protocol.ts';

export interface GatewayRailDeps {
  /** null when DISPERSA_BANK_GATEWAY_URL is unset: every payment is blocked before any bank sees it. */
  config: BankGatewayConfig | null;
  fetch?: FetchLike;
}

export const GATEWAY_RAIL_NAME = 'bank-gateway';

/** The wire body of a transfer. The payment id stays home: banks see only the rail reference. */
export function transferRequestOf(transfer: RailTransfer): WireTransferRequest {
  return {
    reference: transfer.railReference,
    rail: transfer.rail,
    amountMinor: transfer.amountMinor.toString(10),
    currency: transfer.currency,
    destination: {
      account: transfer.destination.account,
      bankCode: transfer.destination.bankCode,
      docType: transfer.destination.docType,
      docNumber: transfer.destination.docNumber,
      name: transfer.destination.name,
    },
  };
}

function unconfiguredRail(): Rail {
  return {
    name: GATEWAY_RAIL_NAME,
    simulated: false,
    async submit(): Promise<RailOutcome> {
      return {
        kind: 'failed',
        subStatus: 'rejected_by_us',
        failureCode: 'rail_not_configured',
        detail: 'DISPERSA_BANK_GATEWAY_URL is not set',
      };
    },
    async query(): Promise<RailStatus> {
      // Nothing was ever sent, so the bank cannot know the reference.
      return { kind: 'not_found' };
    },
  };
}

/** The production rail: the operator's bank gateway adapter, spoken to over the gateway protocol. */
export function createGatewayRail(deps: GatewayRailDeps): Rail {
  if (deps.config === null) return unconfiguredRail();
  const client: GatewayClient = createGatewayClient(deps.config, deps.fetch ?? globalThis.fetch);
  return {
    name: GATEWAY_RAIL_NAME,
    simulated: false,
    async submit(transfer) {
      const exchange = await client.send('POST', TRANSFERS_PATH, transferRequestOf(transfer));
      return outcomeOfSubmit(exchange, transfer.railReference);
    },
    async query(railReference) {
      const target = `${TRANSFERS_PATH}/${encodeURIComponent(railReference)}`;
      const exchange = await client.send('GET', target, undefined);
      return statusOfQuery(exchange, railReference);
    },
  };
}
