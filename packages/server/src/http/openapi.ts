import { type TSchema, Type } from '@sinclair/typebox';
import { PaymentSchema } from '../payments/schemas.ts';

/**
 * The finishing pass over the document @fastify/swagger generates from the route schemas, so that generators and
 * linters take it as it is (`redocly lint`, openapi-typescript): the route schemas stay the one source of fields,
 * types and rules; this adds what a route schema cannot say and removes what is only for the validator.
 *
 * - Authentication as `securitySchemes` (key, nonce, signature) instead of three header parameters on every
 *   operation, so a generated client signs in one middleware instead of every call passing them.
 * - An `operationId` on every operation (a route without one here fails the build of the document).
 * - Every status a route can answer, with the error body: 400, 401 and 415 on every signed route (the chain runs
 *   before any handler), 413 where a body is read, 500 everywhere; the routes declare their own 404/409/422/503.
 * - `servers`, `tags`, `license`, the `webhooks` the service sends, and query parameters typed as they are read.
 * - The validator's own `errorMessage` keyword stripped.
 */

export const OPERATION_IDS: Readonly<Record<string, string>> = {
  'GET /health': 'getHealth',
  'GET /v2/version': 'getVersion',
  'GET /v2/openapi.json': 'getOpenApiDocument',
  'GET /v2/me': 'getIdentity',
  'GET /v2/rate': 'getRate',
  'POST /v2/quotes': 'createQuote',
  'POST /v2/payments': 'createPayment',
  'GET /v2/payments': 'listPayments',
  'GET /v2/payments/{id}': 'getPayment',
  'GET /v2/balance': 'getBalance',
  'POST /v2/beneficiaries': 'createBeneficiary',
  'GET /v2/beneficiaries': 'listBeneficiaries',
  'GET /v2/beneficiaries/{id}': 'getBeneficiary',
  'PATCH /v2/beneficiaries/{id}': 'updateBeneficiaryAlias',
  'DELETE /v2/beneficiaries/{id}': 'archiveBeneficiary',
  'GET /v2/webhook': 'getWebhook',
  'PUT /v2/webhook': 'setWebhook',
  'POST /v2/webhook/test': 'sendTestWebhook',
  'GET /v2/webhook/keys': 'getWebhookKeys',
};

/** Header parameters that authentication replaces, and content-type, which OpenAPI describes per request body. */
const AUTH_HEADERS = new Set(['x-api-key', 'x-nonce', 'x-signature', 'content-type']);

const ENVELOPE =
  'The signature covers the canonical envelope: six pieces joined by one NUL byte (0x00): the upper-case method; ' +
  'the request-target (path and query exactly as sent, no trailing "?"); the x-api-key value; the ' +
  'idempotency-key on POST /v2/payments and POST /v2/quotes (empty on every other route, the separator stays); ' +
  'the raw body bytes (empty without a body: serialise once, sign and send the same bytes); and the x-nonce text.';

export const SECURITY_SCHEMES = {
  ApiKey: {
    type: 'apiKey',
    in: 'header',
    name: 'x-api-key',
    description:
      'Secret API key: sk_test_ for the sandbox, sk_live_ for production. Every signed request also carries ' +
      'x-nonce and x-signature (the other two schemes); all three together.',
  },
  Nonce: {
    type: 'apiKey',
    in: 'header',
    name: 'x-nonce',
    description:
      'Decimal integer, ^[1-9][0-9]{0,37}$, piece 6 of the envelope. One high-water mark per key, shared by all ' +
      'routes: a POST, PUT, PATCH or DELETE needs a nonce above it; a GET may also use a number not yet seen ' +
      'among the 64 below it. So send the writes of one key one at a time (each after the previous answer) from ' +
      'one nonce source; a 401 "nonce replay" created nothing and may be re-signed with a new, higher nonce.',
  },
  Signature: {
    type: 'apiKey',
    in: 'header',
    name: 'x-signature',
    description: `Base64 RSA-SHA256 signature with PKCS#1 v1.5 padding (PSS does not verify), made with the private key whose public half is registered for the API key. ${ENVELOPE}`,
  },
} as const;

const SIGNED = [{ ApiKey: [], Nonce: [], Signature: [] }];

const ERROR_TEXT: Record<string, string> = {
  '400': 'Invalid before any money is touched (missing or malformed field, body not a JSON object); nothing created.',
  '401':
    'Authentication failed: key missing, unknown, inactive or of the other environment, signature not verifying ' +
    '("bad signature"), or a nonce that is not fresh ("nonce replay").',
  '404': 'Unknown id, or an id of another account.',
  '409': 'Conflict with the existing state; do not retry blindly.',
  '413': 'Body larger than the service accepts.',
  '415': 'A body without content-type application/json; rejected before authentication, nothing created.',
  '422': 'A business rule refused the operation.',
  '500': 'Failure on the service side; retry with the same idempotency-key and body, with back-off.',
  '501': 'Not available in this release.',
  '503': 'A component is temporarily unavailable; retry later.',
};

const Tags = [
  { name: 'meta', description: 'Liveness, discovery and this document. Public.' },
  { name: 'identity', description: 'Who the calling key is.' },
  { name: 'fx', description: 'Published rate and quotes (frozen prices).' },
  { name: 'payments', description: 'Payments: the only routes that move money.' },
  { name: 'balance', description: 'The available balance.' },
  { name: 'beneficiaries', description: 'Stored destinations.' },
  { name: 'webhook', description: 'Webhook configuration, test events, the signing key set, and the events sent.' },
];

const EventBase = {
  id: Type.String({ description: 'Event id; apply an event once per id (deliveries can repeat).' }),
  createdAt: Type.String({ description: 'ISO 8601 UTC with milliseconds.' }),
};

const PaymentStateChanged = (test: boolean): TSchema =>
  Type.Object(
    {
      ...EventBase,
      type: Type.Literal('payment.state_changed'),
      test: Type.Literal(test, {
        description: test ? 'A test event from POST /v2/webhook/test: do not act on it.' : 'A real payment.',
      }),
      data: Type.Object({
        payment: PaymentSchema,
        previousState: Type.Union([Type.String(), Type.Null()], { description: 'State before this change.' }),
      }),
    },
    { additionalProperties: true },
  );

const Verification = Type.Object({
  ...EventBase,
  type: Type.Literal('webhook.verification'),
  test: Type.Literal(false),
  data: Type.Object({ challenge: Type.String({ description: 'Answer it back as {"challenge": "..."}.' }) }),
});

const DELIVERY =
  'Sent by POST with a JSON body. The x-dispersa-signature header holds a detached RS256 JWS over the raw body ' +
  '(BASE64URL(protected header) + ".." + BASE64URL(signature)); verify it against GET /v2/webhook/keys, picking ' +
  'the key by the kid of the protected header and refetching the set on an unknown kid. Answer 2xx quickly and ' +
  'process afterwards; anything else is retried with back-off. Deliveries can repeat: apply each event id once.';

function webhook(operationId: string, summary: string, schema: TSchema, extra = '', answer?: TSchema) {
  return {
    post: {
      operationId,
      summary,
      description: `${DELIVERY}${extra}`,
      tags: ['webhook'],
      security: [],
      parameters: [
        {
          in: 'header',
          name: 'x-dispersa-signature',
          required: true,
          description: 'Detached RS256 JWS over the raw body.',
          schema: { type: 'string' },
        },
        {
          in: 'header',
          name: 'x-dispersa-delivery-attempt',
          required: false,
          description: 'Attempt number of this delivery, from 1.',
          schema: { type: 'string', pattern: '^[1-9][0-9]*$' },
        },
      ],
      requestBody: { required: true, content: { 'application/json': { schema } } },
      responses: {
        '200': {
          description: 'Received (any 2xx).',
          ...(answer ? { content: { 'application/json': { schema: answer } } } : {}),
        },
        '400': { description: 'The receiver refuses an event whose signature does not verify.' },
      },
    },
  };
}

export const WEBHOOKS = {
  paymentStateChanged: webhook(
    'paymentStateChanged',
    'Payment state change',
    PaymentStateChanged(false),
    ' Sent when a payment becomes completed, failed or unknown. unknown is not an instruction to retry: wait.',
  ),
  webhookTestEvent: webhook(
    'webhookTestEvent',
    'Test event (POST /v2/webhook/test)',
    PaymentStateChanged(true),
    ' The shape of a real state change, about a payment that does not exist, with test true.',
  ),
  webhookVerification: webhook(
    'webhookVerification',
    'Proof of control of a new webhook URL',
    Verification,
    ' Sent to a URL given to PUT /v2/webhook; the receiver proves control by answering the challenge.',
    Type.Object({ challenge: Type.String() }),
  ),
};

type Json = Record<string, unknown>;
type Operation = Json & {
  parameters?: Array<Json & { in: string; name: string; schema?: Json }>;
  responses?: Record<string, Json>;
  requestBody?: Json;
};

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

/** Keywords of the service's validator (http/build-fastify.ts), not of JSON Schema. */
const VALIDATOR_KEYWORDS = new Set(['errorMessage', 'errorText', 'startsWithField']);

/** Drops the validator-only keywords everywhere (it is not JSON Schema, and generators choke on it). */
function stripValidatorKeywords(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(stripValidatorKeywords);
  if (value === null || typeof value !== 'object') return value;
  const out: Json = {};
  for (const [k, v] of Object.entries(value)) {
    if (!VALIDATOR_KEYWORDS.has(k)) out[k] = stripValidatorKeywords(v);
  }
  return out;
}

/** A query text of digits only is an integer to a client (the service reads it from the query string). */
function typedQuery(schema: Json | undefined): Json | undefined {
  if (schema?.['type'] === 'string' && schema['pattern'] === '^[0-9]+$') {
    const { pattern: _pattern, type: _type, ...rest } = schema;
    return { ...rest, type: 'integer', minimum: 1 };
  }
  return schema;
}

function errorResponse(code: string, existing?: Json): Json {
  const description =
    typeof existing?.['description'] === 'string' && existing['description'] !== 'Default Response'
      ? existing['description']
      : (ERROR_TEXT[code] ?? 'Error.');
  return { description, content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } };
}

export interface FinishOptions {
  /** Where the document says the API is; the sandbox's default address unless told. */
  serverUrl?: string;
}

export function finishOpenApiDocument(document: Json, options: FinishOptions = {}): Json {
  const doc = stripValidatorKeywords(document) as Json & { paths?: Record<string, Record<string, Operation>> };
  const missing: string[] = [];
  for (const [path, item] of Object.entries(doc.paths ?? {})) {
    for (const method of METHODS) {
      const op = item[method];
      if (!op) continue;
      const key = `${method.toUpperCase()} ${path}`;
      const operationId = OPERATION_IDS[key];
      if (operationId === undefined) missing.push(key);
      else op['operationId'] = operationId;

      const params = op.parameters ?? [];
      const signed = params.some((p) => p.in === 'header' && p.name === 'x-api-key');
      const kept = params
        .filter((p) => !(p.in === 'header' && AUTH_HEADERS.has(p.name)))
        .map((p) => (p.in === 'query' ? { ...p, schema: typedQuery(p.schema) } : p));
      if (kept.length > 0) op.parameters = kept;
      else delete op.parameters;
      op['security'] = signed ? SIGNED : [];

      const responses: Record<string, Json> = { ...(op.responses ?? {}) };
      for (const [code, response] of Object.entries(responses)) {
        if (/^2/.test(code) && response['description'] === 'Default Response') {
          responses[code] = { ...response, description: code === '201' ? 'Created.' : 'OK.' };
        }
      }
      const codes = new Set(['500']);
      if (signed) for (const c of ['400', '401', '415']) codes.add(c);
      if (op.requestBody) codes.add('413');
      for (const code of Object.keys(responses)) if (/^[45]/.test(code)) codes.add(code);
      for (const code of codes) responses[code] = errorResponse(code, responses[code]);
      op.responses = Object.fromEntries(Object.entries(responses).sort(([a], [b]) => a.localeCompare(b)));
    }
  }
  if (missing.length > 0) throw new Error(`OpenAPI: no operationId for ${missing.join(', ')} (http/openapi.ts)`);

  const components = (doc['components'] as Json | undefined) ?? {};
  return {
    ...doc,
    info: {
      ...(doc['info'] as Json),
      license: { name: 'Proprietary', identifier: 'LicenseRef-Proprietary' },
    },
    servers: [
      {
        url: options.serverUrl ?? 'http://127.0.0.1:8080',
        description: 'The sandbox as `npm start` runs it (DISPERSA_PORT sets the port); use your environment base URL.',
      },
    ],
    security: SIGNED,
    tags: Tags,
    webhooks: stripValidatorKeywords(WEBHOOKS),
    components: {
      ...components,
      schemas: {
        ...((components['schemas'] as Json | undefined) ?? {}),
        Error: {
          type: 'object',
          required: ['error'],
          properties: { error: { type: 'string', description: 'For people; branch on the HTTP status.' } },
          description: 'The body of every non-2xx answer.',
        },
      },
      securitySchemes: SECURITY_SCHEMES,
    },
  };
}
