/** The fx domain's records as the services hand them out: bigint amounts and rates, Date timestamps. */

export const QUOTE_CURRENCY = 'VES';

export type RateOrigin = 'operator' | 'sandbox-publisher';
export const RATE_ORIGINS: readonly RateOrigin[] = ['operator', 'sandbox-publisher'];

export interface Rate {
  /** New on every publication, even of the same value. */
  rateId: string;
  base: string;
  quote: typeof QUOTE_CURRENCY;
  /** VES per one unit of base, scaled by 10^12. */
  rateScaled: bigint;
  /** null: the pair's general rate; otherwise a rate for that client only, which takes precedence. */
  clientId: string | null;
  validFrom: Date;
  expiresAt: Date;
  createdAt: Date;
  source: RateOrigin;
}

/** The spec's Rate object. */
export interface PublicRate {
  rateId: string;
  base: string;
  quote: string;
  rate: string;
  validFrom: string;
  expiresAt: string;
}

export type AmountType = 'SOURCE' | 'TARGET';

export interface Quote {
  quoteId: string;
  clientId: string;
  amountType: AmountType;
  sourceCurrency: string;
  sourceAmountMinor: bigint;
  targetCurrency: typeof QUOTE_CURRENCY;
  targetAmountMinor: bigint;
  rateId: string;
  rateScaled: bigint;
  createdAt: Date;
  expiresAt: Date;
  usedByPaymentId: string | null;
  usedAt: Date | null;
}

/** The spec's Quote object. */
export interface PublicQuote {
  quoteId: string;
  amountType: AmountType;
  sourceCurrency: string;
  sourceAmountMinor: string;
  targetCurrency: string;
  targetAmountMinor: string;
  rateId: string;
  expiresAt: string;
}
