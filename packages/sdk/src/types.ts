/**
 * Resource shapes of the interface spec ("Resources and their fields") and operator-contract section 5 and 7,
 * written by hand. Kept in this one file so that they can later be generated from, or checked against, the
 * server's /v2/openapi.json without touching anything else. Money is decimal text of minor units, as on the wire.
 */
import type { PaymentState } from './payment-state.ts';

export type Rail = 'PM' | 'CCE';
export type DocType = 'V' | 'E' | 'J' | 'P' | 'G';
/** Amounts the SDK accepts: decimal text of minor units, or a bigint it turns into that text. Never a number. */
export type MinorInput = string | bigint;

export interface Payment {
  intentId: string;
  /** Same value as intentId (operator contract section 5). */
  id: string;
  state: PaymentState;
  subStatus: string | null;
  amountMinor: string;
  currency: string;
  rail: Rail | (string & {});
  beneficiary: string;
  createdAt: string;
  updatedAt: string;
  /** Set on failed payments (e.g. invalid_phone_number, insufficient_funds, limit_exceeded); null otherwise. */
  failureCode: string | null;
  /** Present when paid by beneficiaryId. */
  beneficiaryId?: string;
  /** Present when the payment cited a quote. */
  quoteId?: string;
  /** Present when a non-VES balance paid: what was debited, in the balance currency. */
  sourceAmountMinor?: string;
  sourceCurrency?: string;
}

export interface Beneficiary {
  id: string;
  alias: string;
  rail: Rail | (string & {});
  account: string;
  bankCode: string | null;
  docType: DocType | (string & {});
  docNumber: string;
  beneficiaryName: string | null;
  status: 'ACTIVE' | 'INACTIVE' | (string & {});
  createdAt: string;
}

/** DELETE /v2/beneficiaries/{id} answers with the whole record, now in status INACTIVE. */
export type ArchivedBeneficiary = Beneficiary;

export interface Rate {
  rateId: string;
  base: string;
  quote: string;
  /** Units of quote per unit of base, 12 decimals, as text. */
  rate: string;
  validFrom: string;
  expiresAt: string;
}

export type AmountType = 'SOURCE' | 'TARGET';

export interface Quote {
  quoteId: string;
  amountType: AmountType;
  sourceCurrency: string;
  sourceAmountMinor: string;
  targetCurrency: string;
  targetAmountMinor: string;
  rateId: string;
  expiresAt: string;
}

export interface Balance {
  currency: string;
  availableMinor: string;
}

export interface KeyLimit {
  rail: string;
  perPaymentMaxMinor: string | null;
  dailyMaxMinor: string | null;
  [extra: string]: unknown;
}

export interface Identity {
  keyType: string;
  environment: 'sandbox' | 'production' | (string & {});
  /** SHA256:<unpadded base64 of the SHA-256 of the SPKI DER>. */
  publicKeyFingerprint: string;
  webhook: { url: string | null; pendingChange: unknown };
  limits: KeyLimit[];
  limitsConfigured: boolean;
}

export interface Version {
  version: string;
  apiVersion: string;
  environment: 'sandbox' | 'production' | (string & {});
  rails: string[];
  /** Absent means true (see isSimulated). */
  simulado?: boolean;
  links: { openapi: string; jwks: string };
}

export interface WebhookConfig {
  webhookUrl: string | null;
  pendingChange: unknown;
  changed?: boolean;
}

export interface WebhookTestResult {
  webhookUrl: string | null;
  sent: boolean;
}

export interface Jwk {
  kty: string;
  kid?: string;
  use?: string;
  alg?: string;
  n?: string;
  e?: string;
  [extra: string]: unknown;
}

export interface Jwks {
  keys: Jwk[];
}

/** One page of a keyset listing; the walk ends on an empty page (hasMore false, nextCursor null). */
export interface Page<T> {
  data: T[];
  hasMore: boolean;
  nextCursor: string | null;
}

export interface QuoteParams {
  amountType: AmountType;
  amountMinor: MinorInput;
}

/** Way 1: pay a stored beneficiary. */
export interface PaymentToBeneficiaryParams {
  amountMinor: MinorInput;
  currency: string;
  beneficiaryId: string;
  quoteId?: string;
}

/** Way 2: inline destination. */
export interface InlinePaymentParams {
  amountMinor: MinorInput;
  currency: string;
  rail: Rail;
  beneficiary: string;
  bankCode: string;
  docType: DocType;
  docNumber: string;
  /** Required with CCE, unused with PM. */
  beneficiaryName?: string;
  quoteId?: string;
}

export type PaymentParams = PaymentToBeneficiaryParams | InlinePaymentParams;

export interface BeneficiaryParams {
  rail: Rail;
  account: string;
  bankCode: string;
  docType: DocType;
  docNumber: string;
  /** Required with CCE. */
  beneficiaryName?: string;
  alias: string;
}

export interface PaymentListParams {
  /** Filters by state (operator contract section 5). */
  status?: string;
  limit?: number;
  cursor?: string;
}

export interface BeneficiaryListParams {
  limit?: number;
  cursor?: string;
}

/** Webhook events (operator contract section 7). */
interface EventBase {
  id: string;
  test: boolean;
  createdAt: string;
}

export interface PaymentStateChangedEvent extends EventBase {
  type: 'payment.state_changed';
  data: { payment: Payment; previousState: PaymentState | null };
}

export interface WebhookVerificationEvent extends EventBase {
  type: 'webhook.verification';
  data: { challenge: string };
}

/**
 * An event type this SDK does not know yet: `type` is 'unrecognized' so a switch over `type` stays exact, and
 * the server's name is kept in `originalType`. Acknowledge it (2xx) rather than fail the delivery.
 */
export interface UnrecognizedEvent extends EventBase {
  type: 'unrecognized';
  originalType: string;
  data: unknown;
}

export type WebhookEvent = PaymentStateChangedEvent | WebhookVerificationEvent | UnrecognizedEvent;
