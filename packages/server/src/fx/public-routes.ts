import { Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { enveloped } from '../http/envelope.ts';
import { httpError } from '../http/errors.ts';
import {
  envelopeOf,
  errorResponses,
  MinorAmount,
  MinorAmountOut,
  signedHeaders,
  Timestamp,
} from '../http/schema-helpers.ts';
import { CREATE_QUOTE_STATUS, checkQuoteInput, type QuoteService, toPublicQuote } from './quotes.ts';
import { RATE_FOR_CLIENT_STATUS, type RateService, toPublicRate } from './rates.ts';

export const RateSchema = Type.Object(
  {
    rateId: Type.String({ description: 'One publication: republishing the same value gives a new rateId.' }),
    base: Type.String({ description: 'Currency of the balance, e.g. USD.', examples: ['USD'] }),
    quote: Type.Literal('VES'),
    rate: Type.String({
      description: 'VES per one unit of base, always 12 decimals, as text.',
      examples: ['36.500000000000'],
    }),
    validFrom: Timestamp,
    expiresAt: { ...Timestamp, description: 'Not served from this instant on; never cache past it.' },
  },
  { description: 'A published exchange rate base/VES.' },
);

const AmountType = Type.Unsafe<'SOURCE' | 'TARGET'>({
  type: 'string',
  enum: ['SOURCE', 'TARGET'],
  description: 'SOURCE fixes the amount debited from the balance; TARGET fixes the VES amount received.',
});

export const QuoteSchema = Type.Object(
  {
    quoteId: Type.String(),
    amountType: AmountType,
    sourceCurrency: Type.String({ description: 'Balance currency.' }),
    sourceAmountMinor: { ...MinorAmountOut, description: 'Debited from the balance; rounded up when computed.' },
    targetCurrency: Type.Literal('VES'),
    targetAmountMinor: { ...MinorAmountOut, description: 'Received by the beneficiary; rounded down when computed.' },
    rateId: Type.String({ description: 'The rate publication applied.' }),
    expiresAt: { ...Timestamp, description: 'After this instant the quote is dead and cannot back a payment.' },
  },
  { description: 'A frozen price: single use, expiring.' },
);

export const QuoteBody = Type.Object({
  amountType: AmountType,
  amountMinor: { ...MinorAmount, description: 'The fixed side, minor units as text (VES for TARGET).' },
});

export interface FxPublicRouteDeps {
  rates: RateService;
  quotes: QuoteService;
}

function clientOf(request: FastifyRequest): { id: string; currency: string } {
  const auth = request.auth!;
  return { id: auth.clientId, currency: auth.clientCurrency };
}

/**
 * The service's own checks say more than a schema can (an amount sent as a number is named as such; an empty
 * key is called missing), so they run before schema validation and after authentication (route hooks follow
 * the app's). The schema only documents the request: it accepts exactly what these checks accept.
 */
async function checkQuoteRequest(request: FastifyRequest): Promise<void> {
  const input = checkQuoteInput(request.headers['idempotency-key'], request.body);
  if (!input.ok) throw httpError(CREATE_QUOTE_STATUS[input.kind], input.message);
}

/** GET /v2/rate and POST /v2/quotes. */
export function registerFxPublicRoutes(app: FastifyInstance, deps: FxPublicRouteDeps): void {
  const { rates, quotes } = deps;

  app.get(
    '/v2/rate',
    {
      config: { auth: 'signed' },
      schema: {
        summary: 'The rate in force for the balance currency of the calling key against VES',
        description:
          '404 when the balance is already VES (structural); 503 when no rate is in force (retry later). ' +
          'Never 0, never 1, never an expired rate.',
        tags: ['fx'],
        headers: signedHeaders(),
        response: { 200: envelopeOf(RateSchema, 'ok'), ...errorResponses(404, 503) },
      },
    },
    async (request, reply) => {
      const result = await rates.forClient(clientOf(request));
      if (result.kind !== 'ok') throw httpError(RATE_FOR_CLIENT_STATUS[result.kind], result.message);
      return enveloped(request, reply, toPublicRate(result.rate), { word: 'ok' });
    },
  );

  app.post(
    '/v2/quotes',
    {
      config: { auth: 'signed', bodyRoute: true, idempotencySlot: true },
      preValidation: checkQuoteRequest,
      schema: {
        summary: 'Freeze a price: the caller fixes one side, the service computes the other',
        description:
          '201 for a new quote, 200 with the same quote when the idempotency-key is repeated with the same body. ' +
          '400 invalid or below the minimum target; 404 balance already in VES; 409 key reused with other ' +
          'content, or no room under the live-quote ceilings; 503 no rate in force.',
        tags: ['fx'],
        headers: signedHeaders({ body: true, idempotency: true }),
        body: QuoteBody,
        response: {
          200: envelopeOf(QuoteSchema, 'ok'),
          201: envelopeOf(QuoteSchema, 'ok'),
          ...errorResponses(404, 409, 503),
        },
      },
    },
    async (request, reply) => {
      const result = await quotes.create(clientOf(request), request.headers['idempotency-key'], request.body);
      const code = CREATE_QUOTE_STATUS[result.kind];
      if (result.kind === 'created' || result.kind === 'replayed') {
        return enveloped(request, reply, toPublicQuote(result.quote), { code, word: 'ok' });
      }
      throw httpError(code, result.message);
    },
  );
}
