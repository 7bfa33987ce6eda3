import { minorUnitExponent, sourceFromTarget, targetFromSource } from './arithmetic.ts';
import { type AmountType, QUOTE_CURRENCY, type Rate } from './model.ts';

type RateForConversion = Pick<Rate, 'base' | 'rateScaled'>;

function checkPair(clientCurrency: string, rate: RateForConversion): void {
  // A rate of another pair would misprice silently; callers look the rate up by the client's currency.
  if (rate.base !== clientCurrency) {
    throw new Error(`rate ${rate.base}/${QUOTE_CURRENCY} cannot convert a ${clientCurrency} balance`);
  }
}

/**
 * Source (balance currency) debited for a VES payment made without a quote: rounded UP, so the service
 * never pays out more than it debits.
 */
export function sourceForPayment(input: {
  targetMinor: bigint;
  clientCurrency: string;
  rate: RateForConversion;
}): bigint {
  checkPair(input.clientCurrency, input.rate);
  return sourceFromTarget(
    input.targetMinor,
    input.rate.rateScaled,
    minorUnitExponent(input.clientCurrency),
    minorUnitExponent(QUOTE_CURRENCY),
  );
}

/**
 * Both sides of a quote. The fixed side is returned untouched; the computed side is rounded in favour of
 * the service (target down for SOURCE, source up for TARGET).
 */
export function quoteAmounts(input: {
  amountType: AmountType;
  amountMinor: bigint;
  sourceCurrency: string;
  rate: RateForConversion;
}): { sourceAmountMinor: bigint; targetAmountMinor: bigint } {
  checkPair(input.sourceCurrency, input.rate);
  const srcExp = minorUnitExponent(input.sourceCurrency);
  const tgtExp = minorUnitExponent(QUOTE_CURRENCY);
  if (input.amountType === 'SOURCE') {
    return {
      sourceAmountMinor: input.amountMinor,
      targetAmountMinor: targetFromSource(input.amountMinor, input.rate.rateScaled, srcExp, tgtExp),
    };
  }
  return {
    sourceAmountMinor: sourceFromTarget(input.amountMinor, input.rate.rateScaled, srcExp, tgtExp),
    targetAmountMinor: input.amountMinor,
  };
}
