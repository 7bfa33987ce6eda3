import { type TSchema, Type } from '@sinclair/typebox';

/** Schemas shared by routes. Each route's TypeBox schema validates requests and generates /v2/openapi.json. */

export const MinorAmount = Type.String({
  pattern: '^[1-9][0-9]{0,29}$',
  errorMessage: 'must be a string holding a positive integer of minor units',
  description: 'Minor units (cents) as a decimal string, e.g. "150000" for 1500.00.',
  examples: ['150000'],
});

export const MinorAmountOut = Type.String({
  pattern: '^[0-9]+$',
  description: 'Minor units as a decimal string.',
  examples: ['150000'],
});

export const Timestamp = Type.String({
  description: 'ISO 8601 UTC with milliseconds.',
  examples: ['2026-01-01T12:00:00.000Z'],
});

export const SignedHeaders = {
  'x-api-key': Type.String({ description: 'Secret API key, sk_test_ (sandbox) or sk_live_ (production).' }),
  'x-nonce': Type.String({
    pattern: '^[1-9][0-9]{0,37}$',
    description: "Decimal nonce, above the key's high-water mark (GET may use the 64 numbers below it once).",
  }),
  'x-signature': Type.String({
    description:
      'Base64 RSA PKCS#1 v1.5 SHA-256 signature of METHOD, request-target, api key, idempotency slot, raw body and nonce joined by NUL.',
  }),
};

export const ContentTypeHeader = {
  'content-type': Type.String({ description: 'application/json' }),
};

export const IdempotencyHeader = {
  'idempotency-key': Type.String({
    minLength: 1,
    maxLength: 255,
    errorMessage: 'must be 1 to 255 characters',
    description: 'Identifies the logical operation; part 4 of the signed envelope.',
  }),
};

export function signedHeaders(options: { body?: boolean; idempotency?: boolean } = {}): TSchema {
  return Type.Object({
    ...SignedHeaders,
    ...(options.idempotency ? IdempotencyHeader : {}),
    ...(options.body ? ContentTypeHeader : {}),
  });
}

export function envelopeOf<T extends TSchema>(payload: T, word: 'success' | 'ok' = 'success') {
  return Type.Object({
    status: Type.Literal(word),
    traceId: Type.String(),
    payload,
  });
}

export const ErrorBody = Type.Object({ error: Type.String() }, { description: 'Every non-2xx answer.' });

/** Standard error responses for a signed route, so the OpenAPI document lists them. */
export function errorResponses(...codes: number[]): Record<number, TSchema> {
  const out: Record<number, TSchema> = {};
  for (const code of [400, 401, ...codes]) out[code] = ErrorBody;
  return out;
}

export const PageQuery = {
  cursor: Type.Optional(
    Type.String({ minLength: 1, maxLength: 64, description: 'Id of the last item of the previous page.' }),
  ),
  limit: Type.Optional(
    Type.String({
      pattern: '^[0-9]+$',
      errorMessage: 'must be a positive integer',
      description: 'Page size, default 20, at most 100 (larger values are clamped).',
    }),
  ),
};

export function pageOf<T extends TSchema>(item: T) {
  return Type.Object({
    data: Type.Array(item),
    hasMore: Type.Boolean(),
    nextCursor: Type.Union([Type.String(), Type.Null()]),
  });
}
