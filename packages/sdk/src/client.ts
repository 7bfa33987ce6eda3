import type { KeyObject } from 'node:crypto';
import { toSigningKey } from './envelope.ts';
import { AuthenticationError } from './errors.ts';
import { sharedKeyLane } from './lane.ts';
import { type NonceGenerator, sharedMemoryNonceGenerator } from './nonce.ts';
import { iteratePages } from './pagination.ts';
import { type BackoffOptions, DEFAULT_BACKOFF } from './retry.ts';
import { createTransport, pathId, type RequestOptions } from './transport.ts';
import type {
  ArchivedBeneficiary,
  Balance,
  Beneficiary,
  BeneficiaryListParams,
  BeneficiaryParams,
  Identity,
  Jwks,
  MinorInput,
  Page,
  Payment,
  PaymentListParams,
  PaymentParams,
  Quote,
  QuoteParams,
  Rate,
  Version,
  WebhookConfig,
  WebhookTestResult,
} from './types.ts';

export interface DispersaClientOptions {
  /** e.g. http://127.0.0.1:8080; a path prefix is kept and signed as part of every request-target. */
  baseUrl: string;
  /** sk_test_... or sk_live_..., matching the environment behind baseUrl. */
  apiKey: string;
  /** RSA private key whose public half is registered for the key: PEM text or a KeyObject. */
  privateKey: string | KeyObject;
  /**
   * Where nonces come from. Default: one in-memory generator per API key for this process. Several processes
   * signing with one key should share a createFileNonceGenerator state file instead.
   */
  nonceGenerator?: NonceGenerator;
  /** Transport; globalThis.fetch by default. */
  fetch?: typeof globalThis.fetch;
  /** Retries after the first attempt, on 5xx and connection failures only; default 2. */
  maxRetries?: number;
  /** Per attempt; default 30 s. */
  timeoutMs?: number;
  /** Back-off between retries; default base 500 ms, cap 8 s. */
  backoff?: Partial<BackoffOptions>;
  /** Response header read into errors' traceId; default x-trace-id. */
  traceHeader?: string;
}

type ListParams = { status?: string; limit?: number };

export interface DispersaClient {
  version(options?: RequestOptions): Promise<Version>;
  me(options?: RequestOptions): Promise<Identity>;
  balance(options?: RequestOptions): Promise<Balance>;
  rate(options?: RequestOptions): Promise<Rate>;
  quotes: {
    create(params: QuoteParams, options?: RequestOptions): Promise<Quote>;
  };
  payments: {
    create(params: PaymentParams, options?: RequestOptions): Promise<Payment>;
    get(id: string, options?: RequestOptions): Promise<Payment>;
    list(params?: PaymentListParams, options?: RequestOptions): Promise<Page<Payment>>;
    iterate(params?: ListParams, options?: RequestOptions): AsyncGenerator<Payment, void, undefined>;
  };
  beneficiaries: {
    create(params: BeneficiaryParams, options?: RequestOptions): Promise<Beneficiary>;
    list(params?: BeneficiaryListParams, options?: RequestOptions): Promise<Page<Beneficiary>>;
    iterate(params?: { limit?: number }, options?: RequestOptions): AsyncGenerator<Beneficiary, void, undefined>;
    get(id: string, options?: RequestOptions): Promise<Beneficiary>;
    update(id: string, changes: { alias: string }, options?: RequestOptions): Promise<Beneficiary>;
    archive(id: string, options?: RequestOptions): Promise<ArchivedBeneficiary>;
  };
  webhook: {
    get(options?: RequestOptions): Promise<WebhookConfig>;
    set(url: string, options?: RequestOptions): Promise<WebhookConfig>;
    test(options?: RequestOptions): Promise<WebhookTestResult>;
    keys(options?: RequestOptions): Promise<Jwks>;
  };
}

/** Amounts leave as decimal text; a JS number is refused because it cannot hold every amount exactly. */
function minorText(value: MinorInput): string {
  if (typeof value === 'bigint') return value.toString(10);
  if (typeof value === 'string') return value;
  throw new TypeError(`amountMinor must be decimal text or a bigint, not ${typeof value}`);
}

export function createDispersaClient(options: DispersaClientOptions): DispersaClient {
  const request = createTransport({
    baseUrl: options.baseUrl,
    apiKey: options.apiKey,
    signingKey: toSigningKey(options.privateKey),
    nonces: options.nonceGenerator ?? sharedMemoryNonceGenerator(options.apiKey),
    lane: sharedKeyLane(options.apiKey),
    fetch: options.fetch ?? globalThis.fetch,
    maxRetries: options.maxRetries ?? 2,
    timeoutMs: options.timeoutMs ?? 30_000,
    backoff: { ...DEFAULT_BACKOFF, ...options.backoff },
    traceHeader: options.traceHeader ?? 'x-trace-id',
  });

  const listPayments = (params: PaymentListParams = {}, opts?: RequestOptions) =>
    request<Page<Payment>>(
      {
        method: 'GET',
        path: '/v2/payments',
        query: [
          ['status', params.status],
          ['limit', params.limit],
          ['cursor', params.cursor],
        ],
      },
      opts,
    );

  const listBeneficiaries = (params: BeneficiaryListParams = {}, opts?: RequestOptions) =>
    request<Page<Beneficiary>>(
      {
        method: 'GET',
        path: '/v2/beneficiaries',
        query: [
          ['limit', params.limit],
          ['cursor', params.cursor],
        ],
      },
      opts,
    );

  return {
    version: (opts) => request({ method: 'GET', path: '/v2/version', unsigned: true }, opts),
    me: (opts) => request({ method: 'GET', path: '/v2/me' }, opts),
    balance: (opts) => request({ method: 'GET', path: '/v2/balance' }, opts),
    rate: (opts) => request({ method: 'GET', path: '/v2/rate' }, opts),
    quotes: {
      create: async (params, opts) =>
        request(
          {
            method: 'POST',
            path: '/v2/quotes',
            body: { amountType: params.amountType, amountMinor: minorText(params.amountMinor) },
          },
          opts,
        ),
    },
    payments: {
      create: async (params, opts) =>
        request(
          {
            method: 'POST',
            path: '/v2/payments',
            body: { ...params, amountMinor: minorText(params.amountMinor) },
          },
          opts,
        ),
      get: async (id, opts) => request({ method: 'GET', path: `/v2/payments/${pathId(id)}` }, opts),
      list: listPayments,
      iterate: (params = {}, opts) => iteratePages((cursor) => listPayments({ ...params, cursor }, opts)),
    },
    beneficiaries: {
      create: (params, opts) => request({ method: 'POST', path: '/v2/beneficiaries', body: params }, opts),
      list: listBeneficiaries,
      iterate: (params = {}, opts) => iteratePages((cursor) => listBeneficiaries({ ...params, cursor }, opts)),
      get: async (id, opts) => request({ method: 'GET', path: `/v2/beneficiaries/${pathId(id)}` }, opts),
      update: async (id, changes, opts) =>
        request({ method: 'PATCH', path: `/v2/beneficiaries/${pathId(id)}`, body: { alias: changes.alias } }, opts),
      archive: async (id, opts) => request({ method: 'DELETE', path: `/v2/beneficiaries/${pathId(id)}` }, opts),
    },
    webhook: {
      get: (opts) => request({ method: 'GET', path: '/v2/webhook' }, opts),
      set: (url, opts) => request({ method: 'PUT', path: '/v2/webhook', body: { webhookUrl: url } }, opts),
      test: (opts) => request({ method: 'POST', path: '/v2/webhook/test' }, opts),
      // A public route, so fetched unsigned: that keeps it out of the key's lane, where it could wait behind the
      // very PUT /v2/webhook whose proof of control needs these keys. The spec leaves open whether a deployment
      // enforces signing there; on a 401 it is fetched once more, signed.
      keys: async (opts) => {
        try {
          return await request<Jwks>({ method: 'GET', path: '/v2/webhook/keys', unsigned: true }, opts);
        } catch (err) {
          if (!(err instanceof AuthenticationError)) throw err;
          return request<Jwks>({ method: 'GET', path: '/v2/webhook/keys' }, opts);
        }
      },
    },
  };
}
